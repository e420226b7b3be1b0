// A spec's past on its read route: ?history=1[&limit=N], ?diff=v1,v2, ?version=N.
// Specs and contracts are the same stored documents, so both read routes use it.
import { t } from 'elysia'
import { invalid, notFound } from '../lib/errors'
import { jsonDiff } from '../lib/jsondiff'
import { decodeJson } from '../lib/contract'
import type { Ctx } from '../lib/context'
import type { Doc } from '../store/versioned'
import { intParam } from './http'
import { rawResponse } from './documents'

export const VersionQuery = t.Object({
  history: t.Optional(t.String({ description: '1 for the version list' })),
  limit: t.Optional(t.String({ description: 'history length, default 50' })),
  version: t.Optional(t.String({ description: 'read this version' })),
  diff: t.Optional(t.String({ description: 'v1,v2: JSON diff between two versions' })),
})

type Query = { history?: string; limit?: string; version?: string; diff?: string }

/** The answer for a read with history, diff or version (in that precedence); undefined for a plain read. */
export async function pastOf(ctx: Ctx, project: string, name: string, query: Query, request: Request): Promise<unknown> {
  const versionOf = async (version: number): Promise<Doc> => {
    const doc = await ctx.store.specs.getVersion(project, name, version)
    if (!doc) throw notFound(`version ${version} not found`)
    return doc
  }
  if (query.history !== undefined && query.history !== '' && query.history !== '0') {
    const versions = await ctx.store.specs.history(project, name, intParam(query.limit, 'limit', 50, 1))
    return { project, name, versions: versions ?? [] }
  }
  if (query.diff !== undefined) {
    const m = /^(\d+),(\d+)$/.exec(query.diff)
    if (!m) throw invalid('invalid diff: expected diff=v1,v2')
    const [v1, v2] = [Number(m[1]), Number(m[2])]
    const [a, b] = [await versionOf(v1), await versionOf(v2)]
    return { project, name, v1, v2, diffs: jsonDiff(decodeJson(a.value), decodeJson(b.value)) }
  }
  if (query.version !== undefined) return rawResponse(request, await versionOf(intParam(query.version, 'version', 0, 1)), false)
  return undefined
}

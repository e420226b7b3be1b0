// /api/state: the versioned key/value store.
import { t } from 'elysia'
import { invalid, notFound } from '../lib/errors'
import { jsonDiff } from '../lib/jsondiff'
import type { Ctx } from '../lib/context'
import { countForCaller, intParam, noteAudit, readBody, routes } from './http'
import { keyParam, rawResponse, writeCondition } from './documents'

const Meta = t.Object({ key: t.String(), version: t.Integer(), hash: t.String(), content_type: t.String(), updated_at: t.String() })
const ReadQuery = t.Object({
  history: t.Optional(t.String({ description: '1 for the version list' })),
  limit: t.Optional(t.String({ description: 'history length, default 50' })),
  version: t.Optional(t.String({ description: 'read this version' })),
  diff: t.Optional(t.String({ description: 'v1,v2: JSON diff between two versions' })),
})
const CasQuery = t.Object({ if_version: t.Optional(t.String({ description: 'compare-and-swap on the current version' })) })

function parseJson(bytes: Uint8Array, version: number): unknown {
  try {
    return JSON.parse(new TextDecoder().decode(bytes))
  } catch {
    throw invalid(`version ${version} is not JSON; diff needs JSON values`)
  }
}

export function stateRoutes(ctx: Ctx) {
  const changed = (key: string, version: number, hash: string, operation: string) =>
    ctx.bus.notify('state.changed', { key, version, hash, operation }, 'state')

  return routes(ctx)
    .get('/api/state', () => ctx.store.state.list(), {
      detail: { summary: 'List state keys', tags: ['state'] },
    })
    .get(
      '/api/state/*',
      async ({ params, query, request }) => {
        const key = keyParam(params['*'])
        if (query.history !== undefined && query.history !== '' && query.history !== '0') {
          const versions = await ctx.store.state.history(key, intParam(query.limit, 'limit', 50, 1))
          if (!versions) throw notFound('key not found')
          return { key, versions }
        }
        if (query.diff !== undefined) {
          const m = /^(\d+),(\d+)$/.exec(query.diff)
          if (!m) throw invalid('invalid diff: expected diff=v1,v2')
          const [v1, v2] = [Number(m[1]), Number(m[2])]
          const [a, b] = await Promise.all([ctx.store.state.getVersion(key, v1), ctx.store.state.getVersion(key, v2)])
          if (!a || !b) {
            if (!(await ctx.store.state.meta(key))) throw notFound('key not found')
            throw notFound(`version ${!a ? v1 : v2} not found`)
          }
          return { key, v1, v2, diffs: jsonDiff(parseJson(a.value, v1), parseJson(b.value, v2)) }
        }
        if (query.version !== undefined) {
          const version = intParam(query.version, 'version', 0, 1)
          const doc = await ctx.store.state.getVersion(key, version)
          if (!doc) {
            if (!(await ctx.store.state.meta(key))) throw notFound('key not found')
            throw notFound(`version ${version} not found`)
          }
          return rawResponse(request, doc, false)
        }
        const doc = await ctx.store.state.get(key)
        if (!doc) throw notFound('key not found')
        return rawResponse(request, doc)
      },
      {
        query: ReadQuery,
        detail: {
          summary: 'Read a value (raw), its history, a version, or a diff',
          description: 'Precedence when combined: history, then diff, then version.',
          tags: ['state'],
        },
      },
    )
    .put(
      '/api/state/*',
      async ({ params, query, request }) => {
        const key = keyParam(params['*'])
        const cond = writeCondition(request, query, true)
        const value = await readBody(request)
        if (value.byteLength === 0) throw invalid('request body is empty')
        const contentType = request.headers.get('content-type')?.trim() || 'application/json'
        const meta = await ctx.store.state.put(key, value, contentType, cond)
        noteAudit(request, `version ${meta.version}`)
        changed(key, meta.version, meta.hash, 'put')
        return meta
      },
      {
        parse: 'none',
        query: CasQuery,
        response: { 200: Meta },
        audit: 'state.put',
        detail: { summary: 'Write a value (raw body, at most 10 MB)', tags: ['state'] },
      },
    )
    .post(
      '/api/state/*',
      async ({ params, query, request }) => {
        const key = keyParam(params['*'])
        if (query.rollback === undefined || !/^\d+$/.test(query.rollback) || Number(query.rollback) < 1)
          throw invalid('rollback must be a version number >= 1')
        const result = await ctx.store.state.rollback(key, Number(query.rollback), writeCondition(request, query, false))
        noteAudit(request, `rolled back to ${result.rolled_back} as version ${result.version}`)
        await countForCaller(ctx, request, 'rollbacks')
        changed(key, result.version, result.hash, 'rollback')
        return {
          key: result.key,
          version: result.version,
          hash: result.hash,
          rolled_back: result.rolled_back,
          updated_at: result.updated_at,
        }
      },
      {
        query: t.Object({ rollback: t.Optional(t.String()), if_version: t.Optional(t.String()) }),
        audit: 'state.rollback',
        detail: { summary: 'Roll back: store version N as a new version', tags: ['state'] },
      },
    )
    .delete(
      '/api/state/*',
      async ({ params, query, request }) => {
        const key = keyParam(params['*'])
        if (!(await ctx.store.state.delete(key, writeCondition(request, query, false)))) throw notFound('key not found')
        changed(key, 0, '', 'delete')
        return { deleted: key }
      },
      {
        query: CasQuery,
        audit: 'state.delete',
        detail: { summary: 'Delete a key and its history', tags: ['state'] },
      },
    )
}

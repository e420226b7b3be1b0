// /api/specs: per-project named JSON documents.
import { t } from 'elysia'
import { invalid, notFound } from '../lib/errors'
import type { Ctx } from '../lib/context'
import { noteAudit, readBody, routes } from './http'
import { keyParam, rawResponse, writeCondition } from './documents'
import { pastOf, VersionQuery } from './spec-versions'

const SpecParams = t.Object({ project: t.String(), name: t.String() })
const CasQuery = t.Object({ if_version: t.Optional(t.String({ description: 'compare-and-swap on the current version' })) })

/** Validates a JSON body for a spec write; shared with contracts. */
export async function readJsonBody(request: Request): Promise<{ bytes: Uint8Array; json: unknown }> {
  const bytes = await readBody(request)
  if (bytes.byteLength === 0) throw invalid('request body is empty')
  try {
    return { bytes, json: JSON.parse(new TextDecoder().decode(bytes)) }
  } catch {
    throw invalid('request body is not valid JSON')
  }
}

export function specsRoutes(ctx: Ctx) {
  const names = (params: { project: string; name: string }) => ({
    project: keyParam(params.project, 'project'),
    name: keyParam(params.name, 'name'),
  })
  return routes(ctx)
    .get(
      '/api/specs/:project',
      async ({ params }) => {
        const project = keyParam(params.project, 'project')
        return { project, specs: await ctx.store.specs.list(project) }
      },
      { params: t.Object({ project: t.String() }), detail: { summary: "List a project's specs", tags: ['specs'] } },
    )
    .get(
      '/api/specs/:project/:name',
      async ({ params, query, request }) => {
        const { project, name } = names(params)
        const doc = await ctx.store.specs.get(project, name)
        if (!doc) throw notFound('spec not found')
        return (await pastOf(ctx, project, name, query, request)) ?? rawResponse(request, doc)
      },
      {
        params: SpecParams,
        query: VersionQuery,
        detail: {
          summary: 'Read a spec (raw JSON with ETag), its history, a version, or a diff',
          description: 'Precedence when combined: history, then diff, then version.',
          tags: ['specs'],
        },
      },
    )
    .put(
      '/api/specs/:project/:name',
      async ({ params, query, request }) => {
        const { project, name } = names(params)
        const cond = writeCondition(request, query, true)
        const { bytes } = await readJsonBody(request)
        const meta = await ctx.store.specs.put(project, name, bytes, cond)
        noteAudit(request, `version ${meta.version}`)
        ctx.bus.notify('spec.changed', { project, name, version: meta.version, operation: 'put' }, 'specs')
        return meta
      },
      {
        parse: 'none',
        params: SpecParams,
        query: CasQuery,
        audit: 'spec.put',
        detail: { summary: 'Write a spec (raw JSON body, at most 10 MB)', tags: ['specs'] },
      },
    )
    .delete(
      '/api/specs/:project/:name',
      async ({ params, query, request }) => {
        const { project, name } = names(params)
        if (!(await ctx.store.specs.delete(project, name, writeCondition(request, query, false))))
          throw notFound('spec not found')
        ctx.bus.notify('spec.changed', { project, name, version: 0, operation: 'delete' }, 'specs')
        return { deleted: `${project}/${name}` }
      },
      { params: SpecParams, query: CasQuery, audit: 'spec.delete', detail: { summary: 'Delete a spec', tags: ['specs'] } },
    )
}

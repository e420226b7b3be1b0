// /api/specs: per-project named JSON documents.
import { t } from 'elysia'
import { CasQuery, Deleted, ProjectNameParams, ProjectParams, withExample } from '../http/models'
import type { Ctx } from '../services/context'
import { deleteSpec, putSpec } from '../services/specs'
import { audited } from '../http/audit'
import { rawBodyDoc, readJsonBody } from '../http/body'
import { DocReadQuery, keyParam, readDocument, writeCondition, type DocSource } from '../http/documents'

const SpecParams = ProjectNameParams

/** A spec (or contract) as written: its new version and hash. */
export const SpecMetaSchema = t.Object({ project: t.String(), name: t.String(), version: t.Integer(), hash: t.String({ description: 'SHA-256 of the value (the ETag, unquoted)' }), updated_at: t.String() })
const SpecList = t.Object({ project: t.String(), specs: t.Array(t.Object({ name: t.String(), version: t.Integer(), updated_at: t.String() })) })

/** One spec as a versioned-document source (contracts are specs too). */
export const specSource = (ctx: Ctx, project: string, name: string): DocSource => ({
  get: () => ctx.store.specs.get(project, name),
  getVersion: (v) => ctx.store.specs.getVersion(project, name, v),
  history: (limit) => ctx.store.specs.history(project, name, limit),
})

/** project and name from the path, decoded and checked. */
export const specNames = (params: { project: string; name: string }) => ({
  project: keyParam(params.project, 'project'),
  name: keyParam(params.name, 'name'),
})

export function specsRoutes(ctx: Ctx) {
  return audited(ctx)
    .get(
      '/api/specs/:project',
      async ({ params }) => {
        const project = keyParam(params.project, 'project')
        return { project, specs: await ctx.store.specs.list(project) }
      },
      { params: ProjectParams, response: { 200: SpecList }, detail: { summary: "List a project's specs", tags: ['specs'] } },
    )
    .get(
      '/api/specs/:project/:name',
      ({ params, query, request }) => {
        const { project, name } = specNames(params)
        return readDocument(specSource(ctx, project, name), query, request, 'spec', { project, name })
      },
      {
        params: SpecParams,
        query: DocReadQuery,
        detail: {
          summary: 'Read a spec (raw JSON), its history, a version, or a diff',
          description: 'Precedence when combined: history, then diff, then version.',
          tags: ['specs'],
        },
      },
    )
    .put(
      '/api/specs/:project/:name',
      async ({ params, query, request, audit }) => {
        const { project, name } = specNames(params)
        const cond = writeCondition(request, query, true)
        const { bytes } = await readJsonBody(request)
        return putSpec(ctx, audit, project, name, bytes, cond)
      },
      {
        parse: 'none',
        params: SpecParams,
        query: CasQuery,
        response: { 200: SpecMetaSchema },
        audit: 'spec.put',
        detail: {
          summary: 'Write a spec (raw JSON body, at most 10 MB)',
          tags: ['specs'],
          requestBody: withExample(rawBodyDoc('application/json', 'The spec, any JSON value'), { goal: 'invoice PDFs', owner: 'billing' }),
        },
      },
    )
    .delete(
      '/api/specs/:project/:name',
      async ({ params, query, request, audit }) => {
        const { project, name } = specNames(params)
        await deleteSpec(ctx, audit, project, name, writeCondition(request, query, false))
        return { deleted: `${project}/${name}` }
      },
      { params: SpecParams, query: CasQuery, response: { 200: Deleted }, audit: 'spec.delete', detail: { summary: 'Delete a spec', tags: ['specs'] } },
    )
}

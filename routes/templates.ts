// /api/templates: reusable rules, contracts and specs, applied to a project.
// Applying writes contracts and specs through the API itself (ctx.handle), so
// their validation, versioning, events and audit entries are the usual ones.
import { t } from 'elysia'
import { AppError, invalid, notFound } from '../lib/errors'
import type { Ctx } from '../lib/context'
import { checkRules } from '../lib/rules'
import { defaultData, templateParts } from '../lib/templates'
import { TEMPLATE_KINDS, type Template, type TemplateInput } from '../store/templates'
import { callAs, enumParam, kindOfStatus, noteAudit, routes } from './http'
import { keyParam } from './documents'

const tags = ['templates']
const IdParams = t.Object({ id: t.String() })
const Fields = {
  name: t.String(),
  description: t.Optional(t.String()),
  kind: t.Optional(t.String({ enum: [...TEMPLATE_KINDS], description: 'default rules' })),
  data: t.Optional(t.Unknown({ description: 'rules: [rule]; contracts: a contract (or any JSON spec); bundle: {rules?, contracts?, specs?}' })),
  tags: t.Optional(t.Array(t.String())),
}

/** Checks the fields shared by create and update and the data against the kind. */
function checked(input: { id: string; name: string; description?: string; kind?: string; data?: unknown; tags?: string[] }): TemplateInput {
  const name = input.name.trim()
  if (!name) throw invalid('name is required')
  const kind = enumParam(input.kind, 'kind', TEMPLATE_KINDS, 'rules')
  const data = input.data === undefined ? defaultData(kind) : input.data
  if (input.tags?.some((tag) => !tag.trim())) throw invalid('invalid tags: a tag is empty')
  templateParts(kind, data, input.id)
  return { id: input.id, name, description: input.description ?? '', kind, data, tags: [...new Set(input.tags ?? [])] }
}

export function templatesRoutes(ctx: Ctx) {
  const stored = async (id: string): Promise<Template> => {
    const template = await ctx.store.templates.get(id)
    if (!template) throw notFound('template not found')
    return template
  }

  /** PUT of a JSON document through the API as the caller; an error answer becomes the same error here, named. */
  const putThrough = async (request: Request, path: string, what: string, doc: unknown) => {
    const res = await callAs(ctx, request, 'PUT', path, doc)
    if (res.ok) return
    const body = (await res.json().catch(() => ({}))) as { error?: string }
    throw new AppError(kindOfStatus(res.status) ?? 'invalid', `${what}: ${body.error ?? `status ${res.status}`}`)
  }

  return routes(ctx)
    .post(
      '/api/templates',
      async ({ body, request }) => {
        const id = body.id.trim()
        if (!id) throw invalid('id is required')
        const template = await ctx.store.templates.create(checked({ ...body, id }))
        noteAudit(request, `${template.kind} template`)
        return template
      },
      {
        body: t.Object({ id: t.String(), ...Fields }),
        audit: 'template.create',
        detail: { summary: 'Create a template (version 1); 409 when the id exists', tags },
      },
    )
    .get(
      '/api/templates',
      ({ query }) => {
        const kind = enumParam(query.kind, 'kind', TEMPLATE_KINDS, undefined)
        return ctx.store.templates.list({ kind, tag: query.tag || undefined })
      },
      {
        query: t.Object({ kind: t.Optional(t.String()), tag: t.Optional(t.String({ description: 'templates carrying this tag' })) }),
        detail: { summary: 'Templates without their data, by id', tags },
      },
    )
    .get('/api/templates/:id', ({ params }) => stored(keyParam(params.id, 'id')), {
      params: IdParams,
      detail: { summary: 'A template with its data', tags },
    })
    .put(
      '/api/templates/:id',
      async ({ params, body, request }) => {
        const current = await stored(keyParam(params.id, 'id'))
        // Omitted fields keep their value; a new kind without new data starts from that kind's default.
        const kind = body.kind ?? current.kind
        const data = body.data !== undefined ? body.data : kind === current.kind ? current.data : undefined
        const template = await ctx.store.templates.update(
          checked({
            id: current.id,
            name: body.name ?? current.name,
            description: body.description ?? current.description,
            kind,
            data,
            tags: body.tags ?? current.tags,
          }),
        )
        noteAudit(request, `version ${template.version}`)
        return template
      },
      {
        params: IdParams,
        body: t.Partial(t.Object(Fields)),
        audit: 'template.update',
        detail: { summary: 'Update a template: given fields replace, version + 1', tags },
      },
    )
    .delete(
      '/api/templates/:id',
      async ({ params }) => {
        const id = keyParam(params.id, 'id')
        if (!(await ctx.store.templates.delete(id))) throw notFound('template not found')
        return { deleted: id }
      },
      { params: IdParams, audit: 'template.delete', detail: { summary: 'Delete a template', tags } },
    )
    .post(
      '/api/templates/:id/apply',
      async ({ params, body, request }) => {
        const template = await stored(keyParam(params.id, 'id'))
        const project = body.project.trim()
        if (!project) throw invalid('project is required')
        const parts = templateParts(template.kind, template.data, template.id)
        const rules = checkRules(parts.rules, { project, allowEmpty: true })
        const at = `/${encodeURIComponent(project)}/`
        for (const [name, doc] of Object.entries(parts.contracts))
          await putThrough(request, `/api/contracts${at}${encodeURIComponent(name)}`, `contract ${name}`, doc)
        for (const [name, doc] of Object.entries(parts.specs))
          await putThrough(request, `/api/specs${at}${encodeURIComponent(name)}`, `spec ${name}`, doc)
        if (rules.length) await ctx.store.rules.import(rules)
        const result = {
          applied: template.id,
          project,
          kind: template.kind,
          rules: rules.length,
          contracts: Object.keys(parts.contracts),
          specs: Object.keys(parts.specs),
        }
        noteAudit(request, `${template.id} v${template.version} → ${project}: ${rules.length} rules, ${result.contracts.length} contracts, ${result.specs.length} specs`)
        return result
      },
      {
        params: IdParams,
        body: t.Object({ project: t.String() }),
        audit: 'template.apply',
        detail: {
          summary: 'Apply a template to a project',
          description:
            'rules: imported as rules of the project (external, accepted). contracts: stored as the spec named after the template id (through /api/contracts when it is a contract). bundle: each part written. Contracts and specs are written first, then rules; a failing write stops there (earlier writes stay).',
          tags,
        },
      },
    )
}

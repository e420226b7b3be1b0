// /api/templates: reusable rules, contracts and specs, applied to a project
// (services/templates.ts writes every part in one unit).
import { t } from 'elysia'
import { Deleted, IdParams, checks } from '../http/models'
import { invalid, notFound } from '../lib/errors'
import type { Ctx } from '../services/context'
import { defaultData, templateParts } from '../services/template-data'
import { TEMPLATE_KINDS, type Template, type TemplateInput } from '../store/templates'
import { enumParam } from '../http/params'
import { audited } from '../http/audit'
import { applyTemplate, createTemplate, deleteTemplate, updateTemplate } from '../services/templates'
import { keyParam } from '../http/documents'

const tags = ['templates']
const Fields = {
  name: t.String(),
  description: t.Optional(t.String()),
  kind: t.Optional(t.String({ description: 'default rules', ...checks({ enum: TEMPLATE_KINDS, default: 'rules' }) })),
  data: t.Optional(t.Unknown({ description: 'rules: [rule]; contracts: a contract (or any JSON spec); bundle: {rules?, contracts?, specs?}' })),
  tags: t.Optional(t.Array(t.String())),
}

const EXAMPLE = {
  name: 'TypeScript hygiene',
  description: 'rules every TypeScript project of ours takes',
  kind: 'rules',
  data: [{ rule_id: 'no-console-log', pattern: 'no-console-log', match_type: 'custom', severity: 'warning', applies_to: ['*.ts'] }],
  tags: ['typescript'],
}

const Summary = {
  id: t.String(),
  name: t.String(),
  description: t.String(),
  kind: t.UnionEnum(TEMPLATE_KINDS),
  tags: t.Array(t.String()),
  version: t.Integer({ description: '1 when created, + 1 on each update' }),
  created_at: t.String(),
  updated_at: t.String(),
}
const TemplateSchema = t.Object({ ...Summary, data: t.Unknown({ description: 'rules: [rule]; contracts: a contract (or any JSON spec); bundle: {rules?, contracts?, specs?}' }) })
const Applied = t.Object({
  applied: t.String({ description: 'the template id' }),
  project: t.String(),
  kind: t.String({ description: TEMPLATE_KINDS.join(' | ') }),
  rules: t.Integer({ description: 'rules imported' }),
  contracts: t.Array(t.String(), { description: 'contracts written, by name' }),
  specs: t.Array(t.String(), { description: 'specs written, by name' }),
})

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

  return audited(ctx)
    .post(
      '/api/templates',
      ({ body, audit }) => {
        const id = body.id.trim()
        if (!id) throw invalid('id is required')
        return createTemplate(ctx, audit, checked({ ...body, id }))
      },
      {
        body: t.Object({ id: t.String(), ...Fields }, { examples: [{ id: 'ts-hygiene', ...EXAMPLE }] }),
        response: { 200: TemplateSchema },
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
        query: t.Object({
          kind: t.Optional(t.String({ description: TEMPLATE_KINDS.join(' | '), ...checks({ enum: TEMPLATE_KINDS }) })),
          tag: t.Optional(t.String({ description: 'templates carrying this tag' })),
        }),
        response: { 200: t.Array(t.Object(Summary)) },
        detail: { summary: 'Templates without their data, by id', tags },
      },
    )
    .get('/api/templates/:id', ({ params }) => stored(keyParam(params.id, 'id')), {
      params: IdParams,
      response: { 200: TemplateSchema },
      detail: { summary: 'A template with its data', tags },
    })
    .put(
      '/api/templates/:id',
      async ({ params, body, audit }) => {
        const current = await stored(keyParam(params.id, 'id'))
        // Omitted fields keep their value; a new kind without new data starts from that kind's default.
        const kind = body.kind ?? current.kind
        const data = body.data !== undefined ? body.data : kind === current.kind ? current.data : undefined
        return updateTemplate(
          ctx,
          audit,
          checked({
            id: current.id,
            name: body.name ?? current.name,
            description: body.description ?? current.description,
            kind,
            data,
            tags: body.tags ?? current.tags,
          }),
        )
      },
      {
        params: IdParams,
        body: t.Partial(t.Object(Fields), { examples: [{ description: EXAMPLE.description, tags: EXAMPLE.tags }] }),
        response: { 200: TemplateSchema },
        audit: 'template.update',
        detail: { summary: 'Update a template: given fields replace, version + 1', tags },
      },
    )
    .delete(
      '/api/templates/:id',
      async ({ params, audit }) => {
        const id = keyParam(params.id, 'id')
        await deleteTemplate(ctx, audit, id)
        return { deleted: id }
      },
      { params: IdParams, response: { 200: Deleted }, audit: 'template.delete', detail: { summary: 'Delete a template', tags } },
    )
    .post(
      '/api/templates/:id/apply',
      async ({ params, body, audit }) => applyTemplate(ctx, audit, await stored(keyParam(params.id, 'id')), body.project.trim()),
      {
        params: IdParams,
        body: t.Object({ project: t.String() }, { examples: [{ project: 'shop' }] }),
        response: { 200: Applied },
        audit: 'template.apply',
        detail: {
          summary: 'Apply a template to a project',
          description:
            'rules: imported as rules of the project (external, accepted). contracts: stored as the spec named after the template id (checked as a contract when it is one). bundle: each part written. All or nothing: the parts commit together, each with its change event and audit entry.',
          tags,
        },
      },
    )
}

// /api/llm: LLM usage records reported by agents, listings and summaries.
import { t } from 'elysia'
import { invalid } from '../lib/errors'
import type { Ctx } from '../services/context'
import { BUCKET_KEYS, GROUP_BY, type BucketKey, type GroupBy, type LlmFilter } from '../store/llm'
import { intParam, timeParam } from '../http/params'
import { audited } from '../http/audit'
import { DEFAULT_LIMIT, IntQuery, checks } from '../http/models'
import { recordLlmUsage } from '../services/llm'

// Bounds far beyond any real call, so that sums of many records stay finite and exact enough.
const MAX_TOKENS = 1e12
const MAX_COST_USD = 1e6

const UsageBody = t.Object(
  {
    provider: t.String({ description: 'required, e.g. anthropic' }),
    model: t.String({ description: 'required' }),
    instance_id: t.Optional(t.String({ description: "default: the caller's instance (X-Instance-Token), else empty" })),
    project: t.Optional(t.String()),
    tokens_in: t.Optional(t.Integer({ minimum: 0, maximum: MAX_TOKENS })),
    tokens_out: t.Optional(t.Integer({ minimum: 0, maximum: MAX_TOKENS })),
    cost_usd: t.Optional(t.Number({ minimum: 0, maximum: MAX_COST_USD })),
    request_type: t.Optional(t.Union([t.Literal('completion'), t.Literal('embedding')])),
    session_tag: t.Optional(t.String()),
    task_id: t.Optional(t.Integer({ minimum: 1, description: 'the task the call was made for' })),
  },
  {
    examples: [
      { provider: 'anthropic', model: 'claude-sonnet-4-5', project: 'shop', tokens_in: 1200, tokens_out: 350, cost_usd: 0.0089, request_type: 'completion', session_tag: 'token-fix' },
    ],
  },
)

const Totals = t.Object({
  total_tokens_in: t.Integer(),
  total_tokens_out: t.Integer(),
  total_cost_usd: t.Number(),
  request_count: t.Integer(),
})

const UsageRecord = t.Object({
  id: t.Integer(),
  instance_id: t.String(),
  project: t.String(),
  provider: t.String(),
  model: t.String(),
  tokens_in: t.Integer(),
  tokens_out: t.Integer(),
  cost_usd: t.Number(),
  request_type: t.UnionEnum(['completion', 'embedding']),
  session_tag: t.String(),
  task_id: t.Union([t.Integer(), t.Null()], { description: 'the task its instance had claimed (OTLP: when exactly one), else null' }),
  created_at: t.String(),
})

const Window = {
  from: t.Optional(t.String({ description: 'RFC 3339, inclusive' })),
  to: t.Optional(t.String({ description: 'RFC 3339, inclusive' })),
}

/** The spec applies one filter only: instance, else project, else session_tag. */
function pickFilter(q: { instance?: string; project?: string; session_tag?: string }): LlmFilter {
  if (q.instance) return { column: 'instance_id', value: q.instance }
  if (q.project) return { column: 'project', value: q.project }
  if (q.session_tag) return { column: 'session_tag', value: q.session_tag }
  return null
}

export function llmRoutes(ctx: Ctx) {
  return audited(ctx)
    .post(
      '/api/llm/usage',
      async ({ body, audit }) => {
        for (const field of ['provider', 'model'] as const) if (!body[field].trim()) throw invalid(`${field} is required`)
        const instance_id = body.instance_id ?? audit.instanceId ?? ''
        const id = await recordLlmUsage(ctx, audit, { ...body, instance_id })
        return { id, recorded: true as const }
      },
      {
        body: UsageBody,
        response: t.Object({ id: t.Integer(), recorded: t.Literal(true) }),
        audit: 'llm.usage',
        detail: { summary: 'Record one LLM call', tags: ['llm'] },
      },
    )
    .get(
      '/api/llm/usage',
      ({ query }) =>
        ctx.store.llm.list(pickFilter(query), timeParam(query.from, 'from'), timeParam(query.to, 'to'), intParam(query.limit, 'limit', DEFAULT_LIMIT, 1)),
      {
        query: t.Object({
          instance: t.Optional(t.String()),
          project: t.Optional(t.String()),
          session_tag: t.Optional(t.String()),
          ...Window,
          limit: IntQuery('at most this many', { minimum: 1, default: DEFAULT_LIMIT }),
        }),
        response: { 200: t.Array(UsageRecord) },
        detail: {
          summary: 'Usage records, newest first',
          description: 'Only one of instance, project, session_tag applies, in that priority; from/to apply on top.',
          tags: ['llm'],
        },
      },
    )
    .get(
      '/api/llm/usage/summary',
      async ({ query }) => {
        const groupBy = (query.group_by || 'project') as GroupBy
        if (!Object.hasOwn(GROUP_BY, groupBy))
          throw invalid(`invalid group_by: expected one of ${Object.keys(GROUP_BY).join(', ')}`)
        const from = timeParam(query.from, 'from') ?? null
        const to = timeParam(query.to, 'to') ?? null
        const [{ groups, total }, unpriced_models] = await Promise.all([
          ctx.store.llm.summary(groupBy, from ?? undefined, to ?? undefined),
          ctx.store.llm.unpriced(from ?? undefined, to ?? undefined),
        ])
        return { group_by: groupBy, from, to, groups, total, unpriced_models }
      },
      {
        query: t.Object({
          group_by: t.Optional(t.String({ description: 'instance, project, model or session_tag', ...checks({ enum: Object.keys(GROUP_BY), default: 'project' }) })),
          ...Window,
        }),
        response: t.Object({
          group_by: t.String(),
          from: t.Union([t.String(), t.Null()]),
          to: t.Union([t.String(), t.Null()]),
          groups: t.Record(t.String(), Totals),
          total: Totals,
          unpriced_models: t.Record(t.String(), t.Integer(), { description: 'per model the price table (--llm-prices) does not know, how many records cost 0 for it' }),
        }),
        detail: { summary: 'Usage totals per group and overall', tags: ['llm'] },
      },
    )
    .get(
      '/api/llm/usage/buckets',
      async ({ query }) => {
        const by = (query.by || 'project') as BucketKey
        if (!Object.hasOwn(BUCKET_KEYS, by)) throw invalid(`invalid by: expected one of ${Object.keys(BUCKET_KEYS).join(', ')}`)
        const step = (query.step || 'day') as 'hour' | 'day'
        if (step !== 'hour' && step !== 'day') throw invalid('invalid step: expected hour or day')
        return ctx.store.llm.buckets(by, step, timeParam(query.from, 'from'), timeParam(query.to, 'to'))
      },
      {
        query: t.Object({
          by: t.Optional(t.String({ description: 'instance, project or task', ...checks({ enum: Object.keys(BUCKET_KEYS), default: 'project' }) })),
          step: t.Optional(t.String({ description: 'hour or day (UTC)', ...checks({ enum: ['hour', 'day'], default: 'day' }) })),
          ...Window,
        }),
        response: { 200: t.Array(t.Composite([t.Object({ bucket: t.String(), key: t.String() }), Totals])) },
        detail: {
          summary: 'Usage totals per hour or day and per instance, project or task: spend over time',
          description: "bucket is YYYY-MM-DDTHH or YYYY-MM-DD (UTC); key the instance id, project or task id, '' for records without one.",
          tags: ['llm'],
        },
      },
    )
}

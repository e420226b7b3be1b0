// /api/metrics: the service's own numbers, and per-agent counters.
import { t } from 'elysia'
import { invalid } from '../lib/errors'
import { formatDuration } from '../lib/time'
import type { Ctx } from '../services/context'
import { audited } from '../http/audit'
import { VERSION } from '../lib/version'

const BUCKET_SHAPE = '0000-00-00T00'

/** A `period` filter is a prefix of an hourly bucket YYYY-MM-DDTHH ("2025", "2025-06-01", "2025-06-01T14"). */
function periodParam(value: string | undefined): string | undefined {
  if (value === undefined || value === '') return undefined
  const ok =
    value.length <= BUCKET_SHAPE.length &&
    [...value].every((ch, i) => (BUCKET_SHAPE[i] === '0' ? ch >= '0' && ch <= '9' : ch === BUCKET_SHAPE[i]))
  if (!ok) throw invalid('invalid period: expected a prefix of YYYY-MM-DDTHH (UTC), e.g. 2025-06-01 or 2025-06-01T14')
  return value
}

const MetricRow = t.Object({ instance_id: t.String(), metric_name: t.String(), metric_value: t.Integer(), period: t.String() })
const PeriodQuery = t.Optional(t.String({ description: 'prefix of the hourly bucket YYYY-MM-DDTHH (UTC), e.g. a day or an hour' }))

export function metricsRoutes(ctx: Ctx) {
  /** Counts still in memory are written first, so a read sees every call made before it. */
  const rows = async (instanceId: string, period: string | undefined) => {
    await ctx.metrics.flush()
    return ctx.store.metrics.list({ instanceId, period })
  }
  return audited(ctx)
    .get(
      '/api/metrics',
      async () => ({
        version: VERSION,
        uptime: formatDuration(Date.now() - ctx.startedAt),
        state_keys: await ctx.store.state.count(),
        instances: await ctx.store.instances.count(),
        last_event_id: await ctx.store.events.lastId(),
        api_bind: ctx.apiBind,
        dashboard_bind: ctx.dashboardBind,
      }),
      {
        response: t.Object({
          version: t.String({ description: 'the server build (package version)' }),
          uptime: t.String(),
          state_keys: t.Integer(),
          instances: t.Integer(),
          last_event_id: t.Integer(),
          api_bind: t.String(),
          dashboard_bind: t.String({ description: 'empty when the dashboard is disabled' }),
        }),
        detail: { summary: 'Service metrics', tags: ['metrics'] },
      },
    )
    .get(
      '/api/metrics/agents',
      async ({ query }) => {
        const period = periodParam(query.period)
        if (query.instance_id) return rows(query.instance_id, period)
        await ctx.metrics.flush()
        return ctx.store.metrics.totals(period)
      },
      {
        query: t.Object({ instance_id: t.Optional(t.String()), period: PeriodQuery }),
        response: t.Union([
          t.Array(MetricRow),
          t.Array(t.Object({ instance_id: t.String(), metrics: t.Record(t.String(), t.Integer()) })),
        ]),
        detail: {
          summary: 'Agent metrics',
          description:
            'Without instance_id: per instance, each metric summed over the matching periods. With instance_id: one row per metric and hourly period.',
          tags: ['metrics'],
        },
      },
    )
    .get('/api/metrics/agents/:id', ({ params, query }) => rows(params.id, periodParam(query.period)), {
      params: t.Object({ id: t.String() }),
      query: t.Object({ period: PeriodQuery }),
      response: t.Array(MetricRow),
      detail: { summary: "One agent's metrics by hourly period ([] if none)", tags: ['metrics'] },
    })
}

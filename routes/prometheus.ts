// GET /metrics: the Prometheus text exposition (README "Observability"), behind the
// same auth as the API. The JSON numbers stay at GET /api/metrics.
import { Elysia, t } from 'elysia'
import type { Ctx } from '../services/context'
import { TASK_STATUSES } from '../lib/tasks'
import { eventsPublished, gaugeOf, registry } from '../lib/prometheus'

/** Sample per value of `key`, with every value in `all` present (0 when absent), so a series never vanishes. */
function countBy<T>(rows: T[], key: (row: T) => string, label: string, all: readonly string[] = []) {
  const counts = new Map<string, number>(all.map((v) => [v, 0]))
  for (const row of rows) counts.set(key(row), (counts.get(key(row)) ?? 0) + 1)
  return [...counts].map(([value, n]) => ({ labels: { [label]: value }, value: n }))
}

export function prometheusRoutes(ctx: Ctx) {
  gaugeOf('muster_state_keys', 'State keys stored', () => ctx.store.state.count())
  gaugeOf('muster_event_last_id', 'Id of the newest stored event', () => ctx.store.events.lastId())
  gaugeOf('muster_instances', 'Registered instances by status', async () =>
    countBy(await ctx.store.instances.list({}), (i) => i.status, 'status', ['active', 'stale']), ['status'])
  gaugeOf('muster_subscribers', 'Open event subscriptions (WebSocket)', () => ctx.bus.subscribers().length)
  gaugeOf('muster_tasks', 'Tasks by status, over every queue', async () => {
    const totals = new Map<string, number>(TASK_STATUSES.map((s) => [s, 0]))
    for (const { counts } of await ctx.store.queue.queues())
      for (const [status, n] of Object.entries(counts)) totals.set(status, (totals.get(status) ?? 0) + n)
    return [...totals].map(([status, value]) => ({ labels: { status }, value }))
  }, ['status'])
  ctx.bus.listen(() => eventsPublished.inc())

  return new Elysia().get(
    '/metrics',
    async ({ set }) => {
      set.headers['content-type'] = registry.contentType
      return registry.metrics()
    },
    {
      detail: {
        summary: 'Prometheus metrics (text exposition format)',
        operationId: 'getPrometheusMetrics',
        description: 'Request counts and latency per route pattern and status, state keys, events, instances by status, subscribers, webhook deliveries, tasks by status, SQLite write batch sizes.',
        tags: ['metrics'],
        responses: { 200: { description: 'Prometheus text format 0.0.4', content: { 'text/plain': { schema: { type: 'string' } } } } },
      },
    },
  )
}

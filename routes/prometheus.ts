// GET /metrics: the Prometheus text exposition (docs/operations.md "Metrics"), behind the
// same auth as the API. The JSON numbers stay at GET /api/metrics.
import { Elysia } from 'elysia'
import type { Ctx } from '../services/context'
import { TASK_STATUSES } from '../lib/tasks'
import type { InstanceStatus } from '../store/instances'
import { eventsPublished, gaugeOf, registry } from '../obs/prometheus'

/** One sample per value of `label`, summing the counts given; every value in `all` is present (0 when none), so no series vanishes. */
function sumBy(label: string, all: readonly string[], counts: Iterable<[string, number]>) {
  const totals = new Map<string, number>(all.map((v) => [v, 0]))
  for (const [value, n] of counts) totals.set(value, (totals.get(value) ?? 0) + n)
  return [...totals].map(([value, n]) => ({ labels: { [label]: value }, value: n }))
}

const INSTANCE_STATUSES: InstanceStatus[] = ['active', 'stale']

export function prometheusRoutes(ctx: Ctx) {
  gaugeOf('muster_state_keys', 'State keys stored', () => ctx.store.state.count())
  gaugeOf('muster_event_last_id', 'Id of the newest stored event', () => ctx.store.events.lastId())
  gaugeOf('muster_instances', 'Registered instances by status', async () =>
    sumBy('status', INSTANCE_STATUSES, (await ctx.store.instances.list({})).map((i) => [i.status, 1])), ['status'])
  gaugeOf('muster_subscribers', 'Open event subscriptions (WebSocket)', () => ctx.bus.subscribers().length)
  gaugeOf('muster_tasks', 'Tasks by queue and status (every status of a queue that has tasks, 0 included)', async () =>
    (await ctx.store.queue.queues()).flatMap(({ queue, counts }) =>
      sumBy('status', TASK_STATUSES, Object.entries(counts)).map((s) => ({ ...s, labels: { queue, ...s.labels } }))), ['queue', 'status'])
  gaugeOf('muster_lock_holders', 'Holders of named locks (a semaphore counts each holder)', async () => (await ctx.store.locks.list()).length)
  gaugeOf('muster_locks_held', 'Named locks with at least one holder', async () => new Set((await ctx.store.locks.list()).map((h) => h.name)).size)
  gaugeOf('muster_reservations', 'Path reservations held, by kind', async () =>
    sumBy('kind', ['exclusive', 'shared'], (await ctx.store.reservations.list({})).map((r) => [r.exclusive ? 'exclusive' : 'shared', 1])), ['kind'])
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
        description: 'Request counts and latency per route pattern and status, state keys, events, instances by status, subscribers, webhook deliveries, tasks by queue and status, lock holders and locks held, path reservations by kind, SQLite write batch sizes; `muster_build_info{version}` and the `process_*` basics (resident memory, CPU seconds, start time, open and maximum file descriptors).',
        tags: ['metrics'],
        responses: { 200: { description: 'Prometheus text format 0.0.4', content: { 'text/plain': { schema: { type: 'string' } } } } },
      },
    },
  )
}

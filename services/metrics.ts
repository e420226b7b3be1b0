// Agent metrics: counted in memory per request, off the request path, per (instance,
// hourly bucket, name), and written in one unit per flush (every few seconds, before
// metric reads and backups, and on shutdown).
import type { Store } from '../store'
import type { MetricRow } from '../store/metrics'

/** The counters docs/api/metrics.md lists; `count` accepts any name, these are the ones the service emits. */
export type MetricName = 'rest_calls' | 'mcp_calls' | 'violations' | 'rollbacks'

export const METRICS_FLUSH_MS = 2000

/** Hourly bucket of an instant, UTC: "2025-06-01T14". */
export const hourBucket = (at: Date = new Date()) => at.toISOString().slice(0, 13)

export class AgentMetrics {
  private pending = new Map<string, MetricRow>()

  /** `sink` persists one batch atomically (ctx.store.metrics.add, looked up per call). */
  constructor(private sink: (rows: MetricRow[]) => Promise<void>) {}

  /** Counts `n` occurrences of `name` for an instance in the current hour. Never touches the database. */
  count(instanceId: string, name: MetricName | (string & {}), n = 1): void {
    if (!instanceId || n === 0) return
    const period = hourBucket()
    const k = `${instanceId}\u0000${period}\u0000${name}`
    const row = this.pending.get(k)
    if (row) row.metric_value += n
    else this.pending.set(k, { instance_id: instanceId, metric_name: name, period, metric_value: n })
  }

  private flushing: Promise<void> = Promise.resolve()

  /**
   * Writes everything counted so far; on failure the counts are kept for the next flush.
   * Flushes take turns, so the one at shutdown also waits for a scheduled one still
   * writing (on PostgreSQL that write is a network round trip the pool must not lose).
   */
  flush(): Promise<void> {
    const run = this.flushing.then(() => this.flushNow())
    this.flushing = run.catch(() => {})
    return run
  }

  private async flushNow(): Promise<void> {
    if (this.pending.size === 0) return
    const batch = this.pending
    this.pending = new Map()
    try {
      await this.sink([...batch.values()])
    } catch (err) {
      for (const [k, row] of batch) {
        const now = this.pending.get(k)
        if (now) now.metric_value += row.metric_value
        else this.pending.set(k, row)
      }
      throw err
    }
  }
}

/** The counters of a server, flushed into `store`. */
export const agentMetrics = (store: Store) => new AgentMetrics((rows) => store.write(async (tx) => tx.metrics.add(rows)))

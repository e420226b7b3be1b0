// Agent metrics: integer counters per (instance, hourly bucket, name). Rows are
// only ever incremented, in batches handed over by the in-memory counter.
import { int, stmt, type Runner } from './runner'

export interface MetricRow {
  instance_id: string
  metric_name: string
  metric_value: number
  /** Hourly bucket, YYYY-MM-DDTHH (UTC). */
  period: string
}

export interface MetricsFilter {
  instanceId?: string
  /** Prefix of the period, e.g. "2025-06" or "2025-06-01T14"; validated by the caller (only digits, '-', 'T'). */
  period?: string
}

export interface MetricsWrites {
  /** Adds every row's value to its counter. */
  add(rows: MetricRow[]): Promise<void>
}

export interface MetricsStore {
  /** Rows ordered by instance, period, name. */
  list(filter: MetricsFilter): Promise<MetricRow[]>
  /** Per instance, each metric summed over the matching periods. */
  totals(period?: string): Promise<{ instance_id: string; metrics: Record<string, number> }[]>
}

function metricsWhere(f: MetricsFilter): { sql: string; args: string[] } {
  const parts: string[] = []
  const args: string[] = []
  if (f.instanceId !== undefined) parts.push('instance_id = ?'), args.push(f.instanceId)
  if (f.period) parts.push('substr(period, 1, ?) = ?'), args.push(String(f.period.length), f.period)
  return { sql: parts.length ? `WHERE ${parts.join(' AND ')}` : '', args }
}

const BUMP = stmt(
  `INSERT INTO agent_metrics (instance_id, period, metric_name, metric_value) VALUES (?, ?, ?, ?)
   ON CONFLICT (instance_id, period, metric_name) DO UPDATE SET metric_value = agent_metrics.metric_value + excluded.metric_value`,
)

export function metricsWrites(w: Runner): MetricsWrites {
  return {
    async add(rows) {
      for (const r of rows) await w.run(BUMP, r.instance_id, r.period, r.metric_name, r.metric_value)
    },
  }
}

export function metricsStore(r: Runner): MetricsStore {
  return {
    async list(f) {
      const { sql, args } = metricsWhere(f)
      const rows = await r.all(
        stmt<MetricRow>(`SELECT instance_id, metric_name, metric_value, period FROM agent_metrics ${sql} ORDER BY instance_id, period, metric_name`),
        ...args,
      )
      for (const m of rows) m.metric_value = int(m.metric_value)
      return rows
    },
    async totals(period) {
      const { sql, args } = metricsWhere({ period })
      const rows = await r.all(
        stmt<{ instance_id: string; metric_name: string; total: number }>(
          `SELECT instance_id, metric_name, SUM(metric_value) AS total FROM agent_metrics ${sql}
           GROUP BY instance_id, metric_name ORDER BY instance_id, metric_name`,
        ),
        ...args,
      )
      // Ordered by instance and name: folded into one entry per instance.
      const out: { instance_id: string; metrics: Record<string, number> }[] = []
      for (const m of rows) {
        if (out.at(-1)?.instance_id !== m.instance_id) out.push({ instance_id: m.instance_id, metrics: {} })
        out.at(-1)!.metrics[m.metric_name] = int(m.total)
      }
      return out
    },
  }
}

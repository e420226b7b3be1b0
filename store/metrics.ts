// Agent metrics: integer counters per (instance, hourly bucket, name). Rows are
// only ever incremented, in batches handed over by the in-memory counter.
import type { Database } from 'bun:sqlite'

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
  add(rows: MetricRow[]): void
}

export interface MetricsStore {
  /** Rows ordered by instance, period, name. */
  list(filter: MetricsFilter): Promise<MetricRow[]>
  /** Per instance, each metric summed over the matching periods. */
  totals(period?: string): Promise<{ instance_id: string; metrics: Record<string, number> }[]>
}

export function metricsWhere(f: MetricsFilter): { sql: string; args: string[] } {
  const parts: string[] = []
  const args: string[] = []
  if (f.instanceId !== undefined) parts.push('instance_id = ?'), args.push(f.instanceId)
  if (f.period) parts.push('substr(period, 1, ?) = ?'), args.push(String(f.period.length), f.period)
  return { sql: parts.length ? `WHERE ${parts.join(' AND ')}` : '', args }
}

/** Rows ordered by instance and name, folded into one entry per instance. */
export function toTotals(rows: { instance_id: string; metric_name: string; total: number }[]) {
  const out: { instance_id: string; metrics: Record<string, number> }[] = []
  for (const r of rows) {
    if (out.at(-1)?.instance_id !== r.instance_id) out.push({ instance_id: r.instance_id, metrics: {} })
    out.at(-1)!.metrics[r.metric_name] = r.total
  }
  return out
}

export function metricsWrites(db: Database): MetricsWrites {
  const bump = db.query<unknown, [string, string, string, number]>(
    `INSERT INTO agent_metrics (instance_id, period, metric_name, metric_value) VALUES (?, ?, ?, ?)
     ON CONFLICT (instance_id, period, metric_name) DO UPDATE SET metric_value = metric_value + excluded.metric_value`,
  )
  return {
    add(rows) {
      for (const r of rows) bump.run(r.instance_id, r.period, r.metric_name, r.metric_value)
    },
  }
}

export function metricsStore(db: Database): MetricsStore {
  return {
    async list(f) {
      const { sql, args } = metricsWhere(f)
      return db
        .query<MetricRow, string[]>(
          `SELECT instance_id, metric_name, metric_value, period FROM agent_metrics ${sql} ORDER BY instance_id, period, metric_name`,
        )
        .all(...args)
    },
    async totals(period) {
      const { sql, args } = metricsWhere({ period })
      const rows = db
        .query<{ instance_id: string; metric_name: string; total: number }, string[]>(
          `SELECT instance_id, metric_name, SUM(metric_value) AS total FROM agent_metrics ${sql}
           GROUP BY instance_id, metric_name ORDER BY instance_id, metric_name`,
        )
        .all(...args)
      return toTotals(rows)
    },
  }
}

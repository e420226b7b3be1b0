// Agent metrics on PostgreSQL (twin of store/metrics.ts).
import type { SQL } from 'bun'
import type { Async } from '../index'
import { metricsWhere, toTotals, type MetricRow, type MetricsStore, type MetricsWrites } from '../metrics'
import { int, q, type PgUnits } from './db'

export function pgMetricsWrites(u: PgUnits): Async<MetricsWrites> {
  const bump = q(
    `INSERT INTO agent_metrics (instance_id, period, metric_name, metric_value) VALUES (?, ?, ?, ?)
     ON CONFLICT (instance_id, period, metric_name) DO UPDATE SET metric_value = agent_metrics.metric_value + excluded.metric_value`,
  )
  return {
    async add(rows) {
      for (const r of rows) await bump.run(u.tx, r.instance_id, r.period, r.metric_name, r.metric_value)
    },
  }
}

export function pgMetricsStore(sql: SQL): MetricsStore {
  return {
    async list(f) {
      const { sql: where, args } = metricsWhere(f)
      const rows = await q<Omit<MetricRow, 'metric_value'> & { metric_value: string }>(
        `SELECT instance_id, metric_name, metric_value, period FROM agent_metrics ${where} ORDER BY instance_id, period, metric_name`,
      ).all(sql, ...args)
      return rows.map((r) => ({ ...r, metric_value: int(r.metric_value) }))
    },
    async totals(period) {
      const { sql: where, args } = metricsWhere({ period })
      const rows = await q<{ instance_id: string; metric_name: string; total: string }>(
        `SELECT instance_id, metric_name, SUM(metric_value)::bigint AS total FROM agent_metrics ${where}
         GROUP BY instance_id, metric_name ORDER BY instance_id, metric_name`,
      ).all(sql, ...args)
      return toTotals(rows.map((r) => ({ ...r, total: int(r.total) })))
    },
  }
}

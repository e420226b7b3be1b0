// LLM usage records: one row per model call an agent reports, with summaries
// computed in SQL.
import { nowIso } from '../lib/time'
import { int, intOrNull, stmt, type Dialect, type Runner } from './runner'

export interface LlmUsage {
  id: number
  instance_id: string
  project: string
  provider: string
  model: string
  tokens_in: number
  tokens_out: number
  cost_usd: number
  request_type: 'completion' | 'embedding'
  session_tag: string
  /** The task its instance had claimed when it was recorded (when exactly one), else null. */
  task_id: number | null
  created_at: string
}

export type LlmUsageInput = Pick<LlmUsage, 'provider' | 'model'> &
  Partial<Omit<LlmUsage, 'id' | 'created_at'>> & {
    /** Set for a record received over OTLP: the same key again records nothing (a resent batch). */
    otlp_key?: string
    /** Costed from the price table, which does not know its model (cost 0). */
    unpriced?: boolean
    /** When the agent says the call happened (OTLP); default now. */
    created_at?: string
  }

/** The one filter a listing applies (the route picks it by the spec's priority). */
export type LlmFilter = { column: 'instance_id' | 'project' | 'session_tag'; value: string } | null

export const GROUP_BY = { instance: 'instance_id', project: 'project', model: 'model', session_tag: 'session_tag' } as const
export type GroupBy = keyof typeof GROUP_BY

export const BUCKET_KEYS = { instance: 'instance_id', project: 'project', task: 'task_id' } as const
export type BucketKey = keyof typeof BUCKET_KEYS

export interface LlmBucket extends LlmTotals {
  /** The bucket's start: YYYY-MM-DDTHH (hour) or YYYY-MM-DD (day), UTC. */
  bucket: string
  /** The instance id, project or task id ('' for none). */
  key: string
}

export interface LlmTotals {
  total_tokens_in: number
  total_tokens_out: number
  total_cost_usd: number
  request_count: number
}

export interface LlmWrites {
  /** The new record's id; null when a record with the same `otlp_key` exists. */
  record(input: LlmUsageInput): Promise<number | null>
}

export interface LlmStore {
  list(filter: LlmFilter, from: string | undefined, to: string | undefined, limit: number): Promise<LlmUsage[]>
  summary(groupBy: GroupBy, from?: string, to?: string): Promise<{ groups: Record<string, LlmTotals>; total: LlmTotals }>
  /** Per model the price table did not know, how many records it costed at 0. */
  unpriced(from?: string, to?: string): Promise<Record<string, number>>
  /** Totals per time bucket (UTC hour or day) and key (instance, project or task) over [from, to], for the dashboard's chart. */
  buckets(by: BucketKey, step: 'hour' | 'day', from?: string, to?: string): Promise<LlmBucket[]>
}

/** The WHERE clause (possibly empty) and its arguments for a time window and at most one filter. */
function usageWhere(from?: string, to?: string, filter: LlmFilter = null): { where: string; args: string[] } {
  const sql: string[] = []
  const args: string[] = []
  if (from) sql.push('created_at >= ?'), args.push(from)
  if (to) sql.push('created_at <= ?'), args.push(to)
  if (filter) sql.push(`${filter.column} = ?`), args.push(filter.value)
  return { where: sql.length ? `WHERE ${sql.join(' AND ')}` : '', args }
}

type Row = Omit<LlmUsage, 'id' | 'tokens_in' | 'tokens_out' | 'task_id'> & { id: number | string; tokens_in: number | string; tokens_out: number | string; task_id: number | string | null }
const SHOWN = 'id, instance_id, project, provider, model, tokens_in, tokens_out, cost_usd, request_type, session_tag, task_id, created_at'
type TotalsRow = { g: number; k: string; total_tokens_in: number; total_tokens_out: number; total_cost_usd: number; request_count: number | string }

const INSERT = stmt<{ id: number | string }>(
  `INSERT INTO llm_usage (instance_id, project, provider, model, tokens_in, tokens_out, cost_usd, request_type, session_tag, task_id, otlp_key, unpriced, created_at)
   VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT (otlp_key) WHERE otlp_key IS NOT NULL DO NOTHING RETURNING id`,
)

export function llmWrites(w: Runner): LlmWrites {
  return {
    async record(u) {
      const row = await w.get(
        INSERT,
        u.instance_id ?? '',
        u.project ?? '',
        u.provider,
        u.model,
        u.tokens_in ?? 0,
        u.tokens_out ?? 0,
        u.cost_usd ?? 0,
        u.request_type ?? 'completion',
        u.session_tag ?? '',
        u.task_id ?? null,
        u.otlp_key ?? null,
        u.unpriced ? 1 : 0,
        u.created_at ?? nowIso(),
      )
      return row ? int(row.id) : null
    },
  }
}

export function llmStore(r: Runner, d: Dialect): LlmStore {
  // Sums in floating point: an integer SUM fails past 2^63, and one such pair of records would
  // break every summary for good. Rounding to 1e-9 USD drops float noise (0.1 + 0.2) without losing real precision.
  const totals = `${d.total('tokens_in')} AS total_tokens_in, ${d.total('tokens_out')} AS total_tokens_out,
    ${d.round(d.total('cost_usd'), 9)} AS total_cost_usd, COUNT(*) AS request_count`
  const toTotals = (t: TotalsRow): LlmTotals => ({
    total_tokens_in: t.total_tokens_in,
    total_tokens_out: t.total_tokens_out,
    total_cost_usd: t.total_cost_usd,
    request_count: int(t.request_count),
  })
  return {
    async list(filter, from, to, limit) {
      const { where, args } = usageWhere(from, to, filter)
      const rows = await r.all(stmt<Row>(`SELECT ${SHOWN} FROM llm_usage ${where} ORDER BY id DESC LIMIT ?`), ...args, limit)
      return rows.map((u) => ({ ...u, id: int(u.id), tokens_in: int(u.tokens_in), tokens_out: int(u.tokens_out), task_id: intOrNull(u.task_id) }))
    },
    async summary(groupBy, from, to) {
      const column = GROUP_BY[groupBy]
      const { where, args } = usageWhere(from, to)
      // One statement, so the groups and the total come from the same snapshot (g = 2: the total).
      const rows = await r.all(
        stmt<TotalsRow>(
          `SELECT 1 AS g, ${column} AS k, ${totals} FROM llm_usage ${where} GROUP BY ${column}
           UNION ALL SELECT 2, NULL, ${totals} FROM llm_usage ${where} ORDER BY g, k`,
        ),
        ...args, ...args,
      )
      const total = toTotals(rows.pop()!)
      return { groups: Object.fromEntries(rows.map((t) => [t.k, toTotals(t)])), total }
    },
    async unpriced(from, to) {
      const { where, args } = usageWhere(from, to)
      const rows = await r.all(
        stmt<{ model: string; n: number | string }>(`SELECT model, COUNT(*) AS n FROM llm_usage ${where ? `${where} AND` : 'WHERE'} unpriced = 1 GROUP BY model ORDER BY model`),
        ...args,
      )
      return Object.fromEntries(rows.map((r) => [r.model, int(r.n)]))
    },
    async buckets(by, step, from, to) {
      const { where, args } = usageWhere(from, to)
      const bucket = `substr(created_at, 1, ${step === 'hour' ? 13 : 10})`
      const key = by === 'task' ? `COALESCE(CAST(task_id AS TEXT), '')` : BUCKET_KEYS[by]
      const rows = await r.all(
        stmt<TotalsRow & { b: string }>(`SELECT ${bucket} AS b, ${key} AS k, ${totals} FROM llm_usage ${where} GROUP BY ${bucket}, ${key} ORDER BY b, k`),
        ...args,
      )
      return rows.map((t) => ({ bucket: t.b, key: String(t.k ?? ''), ...toTotals(t) }))
    },
  }
}

// LLM usage records: one row per model call an agent reports, with summaries
// computed in SQL.
import type { Database } from 'bun:sqlite'
import { now } from './db'

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
  created_at: string
}

export type LlmUsageInput = Pick<LlmUsage, 'provider' | 'model'> & Partial<Omit<LlmUsage, 'id' | 'created_at'>>

/** The one filter a listing applies (the route picks it by the spec's priority). */
export type LlmFilter = { column: 'instance_id' | 'project' | 'session_tag'; value: string } | null

export const GROUP_BY = { instance: 'instance_id', project: 'project', model: 'model', session_tag: 'session_tag' } as const
export type GroupBy = keyof typeof GROUP_BY

export interface LlmTotals {
  total_tokens_in: number
  total_tokens_out: number
  total_cost_usd: number
  request_count: number
}

export interface LlmWrites {
  record(input: LlmUsageInput): number
}

export interface LlmStore {
  list(filter: LlmFilter, from: string | undefined, to: string | undefined, limit: number): Promise<LlmUsage[]>
  summary(groupBy: GroupBy, from?: string, to?: string): Promise<{ groups: Record<string, LlmTotals>; total: LlmTotals }>
}

/** The WHERE clause (possibly empty) and its arguments for a time window and at most one filter. */
export function usageWhere(from?: string, to?: string, filter: LlmFilter = null): { where: string; args: string[] } {
  const sql: string[] = []
  const args: string[] = []
  if (from) sql.push('created_at >= ?'), args.push(from)
  if (to) sql.push('created_at <= ?'), args.push(to)
  if (filter) sql.push(`${filter.column} = ?`), args.push(filter.value)
  return { where: sql.length ? `WHERE ${sql.join(' AND ')}` : '', args }
}

// Costs are summed as REAL; rounding to 1e-9 USD drops float noise (0.1 + 0.2) without losing real precision.
// TOTAL, not SUM: SUM of integers fails with "integer overflow" past 2^63, and one such
// pair of records would break every summary for good; TOTAL sums in floating point.
const TOTALS = `TOTAL(tokens_in) AS total_tokens_in, TOTAL(tokens_out) AS total_tokens_out,
  ROUND(TOTAL(cost_usd), 9) AS total_cost_usd, COUNT(*) AS request_count`

export function llmWrites(db: Database): LlmWrites {
  const insert = db.query<{ id: number }, [string, string, string, string, number, number, number, string, string, string]>(
    `INSERT INTO llm_usage (instance_id, project, provider, model, tokens_in, tokens_out, cost_usd, request_type, session_tag, created_at)
     VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?) RETURNING id`,
  )
  return {
    record(u) {
      return insert.get(
        u.instance_id ?? '',
        u.project ?? '',
        u.provider,
        u.model,
        u.tokens_in ?? 0,
        u.tokens_out ?? 0,
        u.cost_usd ?? 0,
        u.request_type ?? 'completion',
        u.session_tag ?? '',
        now(),
      )!.id
    },
  }
}

export function llmStore(db: Database): LlmStore {
  return {
    async list(filter, from, to, limit) {
      const { where, args } = usageWhere(from, to, filter)
      return db.query<LlmUsage, (string | number)[]>(`SELECT * FROM llm_usage ${where} ORDER BY id DESC LIMIT ?`).all(...args, limit)
    },
    async summary(groupBy, from, to) {
      const column = GROUP_BY[groupBy]
      const { where, args } = usageWhere(from, to)
      const rows = db
        .query<LlmTotals & { k: string }, string[]>(`SELECT ${column} AS k, ${TOTALS} FROM llm_usage ${where} GROUP BY ${column} ORDER BY ${column}`)
        .all(...args)
      const total = db.query<LlmTotals, string[]>(`SELECT ${TOTALS} FROM llm_usage ${where}`).get(...args)!
      return { groups: Object.fromEntries(rows.map(({ k, ...t }) => [k, t])), total }
    },
  }
}

// LLM usage records on PostgreSQL (twin of store/llm.ts).
import type { SQL } from 'bun'
import type { Async } from '../index'
import { now } from '../db'
import { GROUP_BY, usageWhere, type LlmStore, type LlmTotals, type LlmUsage, type LlmWrites } from '../llm'
import { int, q, type PgUnits } from './db'

type Row = Omit<LlmUsage, 'id' | 'tokens_in' | 'tokens_out'> & { id: string; tokens_in: string; tokens_out: string }

const toUsage = (r: Row): LlmUsage => ({ ...r, id: int(r.id), tokens_in: int(r.tokens_in), tokens_out: int(r.tokens_out) })

// SQLite's TOTAL() sums in floating point; ROUND goes through the shortest text of the
// sum (a plain ::numeric cast would keep only 15 significant digits).
const TOTALS = `COALESCE(SUM(tokens_in), 0)::float8 AS total_tokens_in, COALESCE(SUM(tokens_out), 0)::float8 AS total_tokens_out,
  ROUND(COALESCE(SUM(cost_usd), 0)::text::numeric, 9)::float8 AS total_cost_usd, COUNT(*)::int AS request_count`

export function pgLlmWrites(u: PgUnits): Async<LlmWrites> {
  const insert = q<{ id: string }>(
    `INSERT INTO llm_usage (instance_id, project, provider, model, tokens_in, tokens_out, cost_usd, request_type, session_tag, created_at)
     VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?) RETURNING id`,
  )
  return {
    async record(r) {
      const row = await insert.get(
        u.tx,
        r.instance_id ?? '',
        r.project ?? '',
        r.provider,
        r.model,
        r.tokens_in ?? 0,
        r.tokens_out ?? 0,
        r.cost_usd ?? 0,
        r.request_type ?? 'completion',
        r.session_tag ?? '',
        now(),
      )
      return int(row!.id)
    },
  }
}

export function pgLlmStore(sql: SQL): LlmStore {
  return {
    async list(filter, from, to, limit) {
      const { where, args } = usageWhere(from, to, filter)
      return (await q<Row>(`SELECT * FROM llm_usage ${where} ORDER BY id DESC LIMIT ?`).all(sql, ...args, limit)).map(toUsage)
    },
    async summary(groupBy, from, to) {
      const column = GROUP_BY[groupBy]
      const { where, args } = usageWhere(from, to)
      // One statement, so the groups and the total come from the same snapshot (g = 1: the total).
      const rows = await q<LlmTotals & { g: number; k: string }>(
        `SELECT GROUPING(${column}) AS g, ${column} AS k, ${TOTALS} FROM llm_usage ${where}
         GROUP BY GROUPING SETS ((${column}), ()) ORDER BY g, k`,
      ).all(sql, ...args)
      const totals = ({ g: _, k: __, ...t }: (typeof rows)[number]): LlmTotals => t
      const total = totals(rows.pop()!)
      return { groups: Object.fromEntries(rows.map((r) => [r.k, totals(r)])), total }
    },
  }
}

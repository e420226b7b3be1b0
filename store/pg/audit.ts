// The audit log on PostgreSQL (twin of store/audit.ts).
import type { SQL } from 'bun'
import type { Async } from '../index'
import { now } from '../db'
import { auditWhere, toSummary, type AuditEntry, type AuditStore, type AuditWrites } from '../audit'
import { int, q, type PgUnits } from './db'

type Row = Omit<AuditEntry, 'id'> & { id: string }
type SummaryRow = { g: number; k: string | null; n: number; actors: number; resources: number }

const toEntry = (r: Row): AuditEntry => ({ ...r, id: int(r.id) })

export function pgAuditWrites(u: PgUnits): Async<AuditWrites> {
  const insert = q('INSERT INTO audit (timestamp, actor, action, resource, detail, outcome) VALUES (?, ?, ?, ?, ?, ?)')
  return {
    append: async (e) => void (await insert.run(u.tx, now(), e.actor, e.action, e.resource, e.detail, e.outcome)),
  }
}

export function pgAuditStore(sql: SQL): AuditStore {
  return {
    async list(f) {
      const { where, args } = auditWhere(f)
      const rows = await q<Row>(`SELECT * FROM audit ${where} ORDER BY id DESC LIMIT ? OFFSET ?`).all(sql, ...args, f.limit, f.offset ?? 0)
      return rows.map(toEntry)
    },
    async summary(from, to) {
      const { where, args } = auditWhere({ from, to })
      // One statement, so the totals and both breakdowns come from the same snapshot
      // (g: 1 per action, 2 per outcome, 3 the grand total).
      const rows = await q<SummaryRow>(
        `SELECT GROUPING(action, outcome) AS g, COALESCE(action, outcome) AS k, COUNT(*)::int AS n,
           COUNT(DISTINCT actor)::int AS actors, COUNT(DISTINCT resource)::int AS resources
         FROM audit ${where} GROUP BY GROUPING SETS ((action), (outcome), ()) ORDER BY g, k`,
      ).all(sql, ...args)
      const total = rows.find((r) => r.g === 3)!
      const counts = (g: number) => rows.filter((r) => r.g === g).map((r) => ({ k: r.k!, n: r.n }))
      return toSummary({ total: total.n, actors: total.actors, resources: total.resources }, counts(1), counts(2))
    },
  }
}

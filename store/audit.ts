// Audit log: append-only record of every mutating API call.
import { nowIso } from '../lib/time'
import { int, send, stmt, type Runner } from './runner'

export interface AuditEntry {
  id: number
  timestamp: string
  actor: string
  action: string
  resource: string
  detail: string
  outcome: 'success' | 'error'
}

export interface AuditFilter {
  actor?: string
  action?: string
  from?: string
  to?: string
  limit: number
  /** Entries to skip (newest first), for paging. */
  offset?: number
}

export interface AuditSummary {
  total_entries: number
  action_counts: Record<string, number>
  outcome_counts: Record<string, number>
  unique_actors: number
  unique_resources: number
}

export type AuditDraft = Omit<AuditEntry, 'id' | 'timestamp'>

export interface AuditStore {
  list(filter: AuditFilter): Promise<AuditEntry[]>
  summary(from?: string, to?: string): Promise<AuditSummary>
}

/** The WHERE clause (possibly empty) and its arguments for list's filter, or summary's time window alone. */
function auditWhere(f: Pick<AuditFilter, 'from' | 'to' | 'actor' | 'action'>): { where: string; args: string[] } {
  const sql: string[] = []
  const args: string[] = []
  if (f.from) sql.push('timestamp >= ?'), args.push(f.from)
  if (f.to) sql.push('timestamp <= ?'), args.push(f.to)
  if (f.actor) sql.push('actor = ?'), args.push(f.actor)
  if (f.action) sql.push('action = ?'), args.push(f.action)
  return { where: sql.length ? `WHERE ${sql.join(' AND ')}` : '', args }
}

/** Audit writes, inside a unit of work: an entry commits with the change it records. */
export interface AuditWrites {
  append(entry: AuditDraft): Promise<void>
}

type Row = Omit<AuditEntry, 'id'> & { id: number | string }
type SummaryRow = { g: number; k: string | null; n: number; actors: number; resources: number }

const INSERT = stmt('INSERT INTO audit (timestamp, actor, action, resource, detail, outcome) VALUES (?, ?, ?, ?, ?, ?)')

export function auditWrites(w: Runner): AuditWrites {
  return { append: (e) => send(w, INSERT, nowIso(), e.actor, e.action, e.resource, e.detail, e.outcome) }
}

export function auditStore(r: Runner): AuditStore {
  return {
    async list(f) {
      const { where, args } = auditWhere(f)
      const rows = await r.all(stmt<Row>(`SELECT * FROM audit ${where} ORDER BY id DESC LIMIT ? OFFSET ?`), ...args, f.limit, f.offset ?? 0)
      return rows.map((e) => ({ ...e, id: int(e.id) }))
    },
    async summary(from, to) {
      const { where, args } = auditWhere({ from, to })
      // One statement, so the totals and both breakdowns come from the same snapshot
      // (g: 1 per action, 2 per outcome, 3 the grand total); counts arrive in key order, which the objects keep.
      const rows = await r.all(
        stmt<SummaryRow>(
          `SELECT 1 AS g, action AS k, COUNT(*) AS n, 0 AS actors, 0 AS resources FROM audit ${where} GROUP BY action
           UNION ALL SELECT 2, outcome, COUNT(*), 0, 0 FROM audit ${where} GROUP BY outcome
           UNION ALL SELECT 3, NULL, COUNT(*), COUNT(DISTINCT actor), COUNT(DISTINCT resource) FROM audit ${where}
           ORDER BY g, k`,
        ),
        ...args, ...args, ...args,
      )
      const counts = (g: number) => Object.fromEntries(rows.filter((c) => int(c.g) === g).map((c) => [c.k, int(c.n)]))
      const total = rows.find((c) => int(c.g) === 3)!
      return {
        total_entries: int(total.n),
        action_counts: counts(1),
        outcome_counts: counts(2),
        unique_actors: int(total.actors),
        unique_resources: int(total.resources),
      }
    },
  }
}

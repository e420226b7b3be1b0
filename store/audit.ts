// Audit log: append-only record of every mutating API call.
import type { Database } from 'bun:sqlite'
import { now } from './db'

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
export function auditWhere(f: Pick<AuditFilter, 'from' | 'to' | 'actor' | 'action'>): { where: string; args: string[] } {
  const sql: string[] = []
  const args: string[] = []
  if (f.from) sql.push('timestamp >= ?'), args.push(f.from)
  if (f.to) sql.push('timestamp <= ?'), args.push(f.to)
  if (f.actor) sql.push('actor = ?'), args.push(f.actor)
  if (f.action) sql.push('action = ?'), args.push(f.action)
  return { where: sql.length ? `WHERE ${sql.join(' AND ')}` : '', args }
}

type Totals = { total: number; actors: number; resources: number }
type Count = { k: string; n: number }

/** Counts arrive in key order, which the JSON objects keep. */
export function toSummary(totals: Totals, actions: Count[], outcomes: Count[]): AuditSummary {
  return {
    total_entries: totals.total,
    action_counts: Object.fromEntries(actions.map((r) => [r.k, r.n])),
    outcome_counts: Object.fromEntries(outcomes.map((r) => [r.k, r.n])),
    unique_actors: totals.actors,
    unique_resources: totals.resources,
  }
}

/** Audit writes, inside a unit of work: an entry commits with the change it records. */
export interface AuditWrites {
  append(entry: AuditDraft): void
}

export function auditWrites(db: Database): AuditWrites {
  const insert = db.query(
    'INSERT INTO audit (timestamp, actor, action, resource, detail, outcome) VALUES (?, ?, ?, ?, ?, ?)',
  )
  return { append: (e) => void insert.run(now(), e.actor, e.action, e.resource, e.detail, e.outcome) }
}

export function auditStore(db: Database): AuditStore {
  return {
    async list(f) {
      const { where, args } = auditWhere(f)
      return db
        .query<AuditEntry, (string | number)[]>(`SELECT * FROM audit ${where} ORDER BY id DESC LIMIT ? OFFSET ?`)
        .all(...args, f.limit, f.offset ?? 0)
    },
    async summary(from, to) {
      const { where, args } = auditWhere({ from, to })
      const totals = db
        .query<Totals, string[]>(
          `SELECT COUNT(*) AS total, COUNT(DISTINCT actor) AS actors, COUNT(DISTINCT resource) AS resources FROM audit ${where}`,
        )
        .get(...args)!
      const counts = (column: 'action' | 'outcome') =>
        db
          .query<Count, string[]>(`SELECT ${column} AS k, COUNT(*) AS n FROM audit ${where} GROUP BY ${column} ORDER BY ${column}`)
          .all(...args)
      return toSummary(totals, counts('action'), counts('outcome'))
    },
  }
}

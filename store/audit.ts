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

/** Builds the WHERE clause for the optional time window shared by list and summary. */
function window(from?: string, to?: string): { sql: string[]; args: string[] } {
  const sql: string[] = []
  const args: string[] = []
  if (from) sql.push('timestamp >= ?'), args.push(from)
  if (to) sql.push('timestamp <= ?'), args.push(to)
  return { sql, args }
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
      const { sql, args } = window(f.from, f.to)
      const all: (string | number)[] = [...args]
      if (f.actor) sql.push('actor = ?'), all.push(f.actor)
      if (f.action) sql.push('action = ?'), all.push(f.action)
      all.push(f.limit, f.offset ?? 0)
      const where = sql.length ? `WHERE ${sql.join(' AND ')}` : ''
      return db.query<AuditEntry, typeof all>(`SELECT * FROM audit ${where} ORDER BY id DESC LIMIT ? OFFSET ?`).all(...all)
    },
    async summary(from, to) {
      const { sql, args } = window(from, to)
      const where = sql.length ? `WHERE ${sql.join(' AND ')}` : ''
      const totals = db
        .query<{ total: number; actors: number; resources: number }, string[]>(
          `SELECT COUNT(*) AS total, COUNT(DISTINCT actor) AS actors, COUNT(DISTINCT resource) AS resources FROM audit ${where}`,
        )
        .get(...args)!
      const counts = (column: 'action' | 'outcome') =>
        Object.fromEntries(
          db
            .query<{ k: string; n: number }, string[]>(`SELECT ${column} AS k, COUNT(*) AS n FROM audit ${where} GROUP BY ${column} ORDER BY ${column}`)
            .all(...args)
            .map((r) => [r.k, r.n]),
        )
      return {
        total_entries: totals.total,
        action_counts: counts('action'),
        outcome_counts: counts('outcome'),
        unique_actors: totals.actors,
        unique_resources: totals.resources,
      }
    },
  }
}

// Audit log: append-only record of every mutating API call.
import { nowIso } from '../lib/time'
import { int, intOrNull, send, stmt, type Runner } from './runner'
import { idWindow, risingStamp } from './rising'

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

const ENDS = stmt<{ first: number | string | null; last: number | string | null }>('SELECT (SELECT MIN(id) FROM audit) AS first, (SELECT MAX(id) FROM audit) AS last')
const AT_OR_AFTER = stmt<{ id: number | string; timestamp: string }>('SELECT id, timestamp FROM audit WHERE id >= ? ORDER BY id LIMIT 1')
const NEWEST = stmt<{ timestamp: string }>('SELECT timestamp FROM audit ORDER BY id DESC LIMIT 1')

/**
 * The WHERE clause (possibly empty) and its arguments for list's filter, or summary's time
 * window alone. Where times rise with ids (a sole writer: store/rising.ts) the window is an id
 * range, the time conditions a guard; elsewhere (replicas on PostgreSQL) the time index answers it.
 */
async function auditWhere(r: Runner, risesWithIds: boolean, f: Pick<AuditFilter, 'from' | 'to' | 'actor' | 'action'>): Promise<{ where: string; args: (string | number)[] }> {
  const sql: string[] = []
  const args: (string | number)[] = []
  if (risesWithIds) {
    const ends = async () => {
      const e = (await r.get(ENDS))!
      return { first: intOrNull(e.first), last: intOrNull(e.last) }
    }
    const probe = async (id: number) => {
      const row = await r.get(AT_OR_AFTER, id)
      return row && { id: int(row.id), time: row.timestamp }
    }
    const ids = await idWindow(ends, probe, f.from, f.to)
    sql.push(...ids.sql), args.push(...ids.args)
  }
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

/** `risesWithIds`: this process is the only writer, so entries are stamped by a clock that never goes back (store/rising.ts). */
export function auditWrites(w: Runner, risesWithIds: boolean): AuditWrites {
  // Seeded from the newest entry at the first append (units run one at a time).
  let stamp: (() => string) | null = risesWithIds ? null : nowIso
  return {
    async append(e) {
      stamp ??= risingStamp(nowIso, (await w.get(NEWEST))?.timestamp ?? '')
      return send(w, INSERT, stamp(), e.actor, e.action, e.resource, e.detail, e.outcome)
    },
  }
}

export function auditStore(r: Runner, risesWithIds: boolean): AuditStore {
  return {
    async list(f) {
      const { where, args } = await auditWhere(r, risesWithIds, f)
      const rows = await r.all(stmt<Row>(`SELECT * FROM audit ${where} ORDER BY id DESC LIMIT ? OFFSET ?`), ...args, f.limit, f.offset ?? 0)
      return rows.map((e) => ({ ...e, id: int(e.id) }))
    },
    async summary(from, to) {
      const { where, args } = await auditWhere(r, risesWithIds, { from, to })
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

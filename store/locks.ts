// Locks: one row per holder of a named lock (a mutex is a lock of limit 1).
// The holders of a name share its limit: the first grant of a free lock sets it.
import { int, stmt, type Runner } from './runner'

export interface LockHolderRow {
  name: string
  instance_id: string
  limit: number
  fence: number
  reason: string | null
  acquired_at: string
  expires_at: string | null
}

export interface LocksWrites {
  /** The holders of `name`, oldest grant first (read on the writer: sees this unit's own changes). */
  holders(name: string): Promise<LockHolderRow[]>
  insert(row: LockHolderRow): Promise<void>
  /** Renewal by the holder: new reason and expiry, same fence. */
  renew(name: string, instanceId: string, reason: string | null, expiresAt: string | null): Promise<LockHolderRow | null>
  /** Removes one holder (the unit has read its row): true when there was one. */
  drop(name: string, instanceId: string): Promise<boolean>
  /** Removes every holder of `name`. */
  removeAll(name: string): Promise<LockHolderRow[]>
  /** Removes every grant of an instance. */
  removeInstance(instanceId: string): Promise<LockHolderRow[]>
  /** Removes grants whose expires_at is at or before `now`. */
  removeExpired(now: string): Promise<LockHolderRow[]>
}

export interface LocksStore {
  /** Holders of every held lock whose name starts with `prefix`, by name then grant order. */
  list(prefix?: string): Promise<LockHolderRow[]>
  holders(name: string): Promise<LockHolderRow[]>
}

const COLUMNS = 'name, instance_id, lock_limit AS "limit", fence, reason, acquired_at, expires_at'
const RETURNING = `RETURNING ${COLUMNS}`

// Ordered here, not in SQL: an ORDER BY opens SQLite's sorter, the dearest statement of a lock round trip for a row or two.
const HOLDERS = stmt<LockHolderRow>(`SELECT ${COLUMNS} FROM lock_holders WHERE name = ?`)
const INSERT = stmt('INSERT INTO lock_holders (name, instance_id, lock_limit, fence, reason, acquired_at, expires_at) VALUES (?, ?, ?, ?, ?, ?, ?)')
const RENEW = stmt<LockHolderRow>(`UPDATE lock_holders SET reason = ?, expires_at = ? WHERE name = ? AND instance_id = ? ${RETURNING}`)
// No RETURNING: a result row costs more than the delete, and the caller has read the row.
const DROP = stmt('DELETE FROM lock_holders WHERE name = ? AND instance_id = ?')
const REMOVE_ALL = stmt<LockHolderRow>(`DELETE FROM lock_holders WHERE name = ? ${RETURNING}`)
const REMOVE_INSTANCE = stmt<LockHolderRow>(`DELETE FROM lock_holders WHERE instance_id = ? ${RETURNING}`)
const REMOVE_EXPIRED = stmt<LockHolderRow>(`DELETE FROM lock_holders WHERE expires_at IS NOT NULL AND expires_at <= ? ${RETURNING}`)
const ALL = stmt<LockHolderRow>(`SELECT ${COLUMNS} FROM lock_holders ORDER BY name, fence`)
// A prefix as a range of names (bytewise order on both backends): no LIKE escaping, and it uses the primary key.
const PREFIXED = stmt<LockHolderRow>(`SELECT ${COLUMNS} FROM lock_holders WHERE name >= ? AND name < ? ORDER BY name, fence`)

/** Fences as numbers (PostgreSQL's BIGINT arrives as text), in place: these rows are read on every grant. */
function rows(list: LockHolderRow[]): LockHolderRow[] {
  for (const r of list) r.fence = int(r.fence)
  return list
}
const row = (r: LockHolderRow | null) => r && rows([r])[0]
/** Holders in grant order: RETURNING promises no order, and the holders' read leaves it here. */
const byFence = (list: LockHolderRow[]) => rows(list).sort((a, b) => a.fence - b.fence)

export function locksWrites(w: Runner): LocksWrites {
  return {
    holders: async (name) => byFence(await w.all(HOLDERS, name)),
    insert: async (r) => void (await w.run(INSERT, r.name, r.instance_id, r.limit, r.fence, r.reason, r.acquired_at, r.expires_at)),
    renew: async (name, id, reason, expires) => row(await w.get(RENEW, reason, expires, name, id)),
    drop: async (name, id) => (await w.run(DROP, name, id)) === 1,
    removeAll: async (name) => byFence(await w.all(REMOVE_ALL, name)),
    removeInstance: async (id) => byFence(await w.all(REMOVE_INSTANCE, id)),
    removeExpired: async (now) => byFence(await w.all(REMOVE_EXPIRED, now)),
  }
}

export function locksStore(r: Runner): LocksStore {
  return {
    list: async (prefix) => rows(await (prefix ? r.all(PREFIXED, prefix, prefix + '\uffff') : r.all(ALL))),
    holders: async (name) => byFence(await r.all(HOLDERS, name)),
  }
}

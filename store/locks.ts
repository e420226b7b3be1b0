// Locks: one row per holder of a named lock (a mutex is a lock of limit 1).
// The holders of a name share its limit: the first grant of a free lock sets it.
import type { Database } from 'bun:sqlite'

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
  holders(name: string): LockHolderRow[]
  insert(row: LockHolderRow): void
  /** Renewal by the holder: new reason and expiry, same fence. */
  renew(name: string, instanceId: string, reason: string | null, expiresAt: string | null): LockHolderRow | null
  /** Removes one holder; returns the row it removed. */
  remove(name: string, instanceId: string): LockHolderRow | null
  /** Removes every holder of `name`. */
  removeAll(name: string): LockHolderRow[]
  /** Removes every grant of an instance. */
  removeInstance(instanceId: string): LockHolderRow[]
  /** Removes grants whose expires_at is at or before `now`. */
  removeExpired(now: string): LockHolderRow[]
}

export interface LocksStore {
  /** Holders of every held lock whose name starts with `prefix`, by name then grant order. */
  list(prefix?: string): Promise<LockHolderRow[]>
  holders(name: string): Promise<LockHolderRow[]>
}

export const COLUMNS = 'name, instance_id, lock_limit AS "limit", fence, reason, acquired_at, expires_at'
const RETURNING = `RETURNING ${COLUMNS}`

export function locksWrites(db: Database): LocksWrites {
  const holders = db.query<LockHolderRow, [string]>(`SELECT ${COLUMNS} FROM lock_holders WHERE name = ? ORDER BY fence`)
  const insert = db.query<unknown, [string, string, number, number, string | null, string, string | null]>(
    'INSERT INTO lock_holders (name, instance_id, lock_limit, fence, reason, acquired_at, expires_at) VALUES (?, ?, ?, ?, ?, ?, ?)',
  )
  const renew = db.query<LockHolderRow, [string | null, string | null, string, string]>(
    `UPDATE lock_holders SET reason = ?, expires_at = ? WHERE name = ? AND instance_id = ? ${RETURNING}`,
  )
  const remove = db.query<LockHolderRow, [string, string]>(`DELETE FROM lock_holders WHERE name = ? AND instance_id = ? ${RETURNING}`)
  const removeAll = db.query<LockHolderRow, [string]>(`DELETE FROM lock_holders WHERE name = ? ${RETURNING}`)
  const removeInstance = db.query<LockHolderRow, [string]>(`DELETE FROM lock_holders WHERE instance_id = ? ${RETURNING}`)
  const removeExpired = db.query<LockHolderRow, [string]>(
    `DELETE FROM lock_holders WHERE expires_at IS NOT NULL AND expires_at <= ? ${RETURNING}`,
  )
  const byFence = (rows: LockHolderRow[]) => rows.sort((a, b) => a.fence - b.fence)
  return {
    holders: (name) => holders.all(name),
    insert: (r) => void insert.run(r.name, r.instance_id, r.limit, r.fence, r.reason, r.acquired_at, r.expires_at),
    renew: (name, id, reason, expires) => renew.get(reason, expires, name, id),
    remove: (name, id) => remove.get(name, id),
    removeAll: (name) => byFence(removeAll.all(name)),
    removeInstance: (id) => byFence(removeInstance.all(id)),
    removeExpired: (now) => byFence(removeExpired.all(now)),
  }
}

/** A prefix as a range of names (bytewise order on both backends): no LIKE escaping, and it uses the primary key. */
export const prefixRange = (prefix: string): [string, string] => [prefix, prefix + '\uffff']

export function locksStore(db: Database): LocksStore {
  const all = db.query<LockHolderRow, []>(`SELECT ${COLUMNS} FROM lock_holders ORDER BY name, fence`)
  const prefixed = db.query<LockHolderRow, [string, string]>(
    `SELECT ${COLUMNS} FROM lock_holders WHERE name >= ? AND name < ? ORDER BY name, fence`,
  )
  const holders = db.query<LockHolderRow, [string]>(`SELECT ${COLUMNS} FROM lock_holders WHERE name = ? ORDER BY fence`)
  return {
    list: async (prefix) => (prefix ? prefixed.all(...prefixRange(prefix)) : all.all()),
    holders: async (name) => holders.all(name),
  }
}

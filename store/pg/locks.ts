// Lock holders on PostgreSQL (twin of store/locks.ts).
import type { SQL } from 'bun'
import type { Async } from '../index'
import { COLUMNS, prefixRange, type LockHolderRow, type LocksStore, type LocksWrites } from '../locks'
import { int, q, type PgUnits } from './db'

const toHolder = (r: LockHolderRow): LockHolderRow => ({ ...r, fence: int(r.fence) })
const maybe = (r: LockHolderRow | null) => (r ? toHolder(r) : null)
/** Removed holders in grant order, as the SQLite store sorts them. */
const removed = (where: string) => q<LockHolderRow>(`WITH gone AS (DELETE FROM lock_holders WHERE ${where} RETURNING ${COLUMNS}) SELECT * FROM gone ORDER BY fence`)

export function pgLocksWrites(u: PgUnits): Async<LocksWrites> {
  const holders = q<LockHolderRow>(`SELECT ${COLUMNS} FROM lock_holders WHERE name = ? ORDER BY fence`)
  const insert = q(
    'INSERT INTO lock_holders (name, instance_id, lock_limit, fence, reason, acquired_at, expires_at) VALUES (?, ?, ?, ?, ?, ?, ?)',
  )
  const renew = q<LockHolderRow>(`UPDATE lock_holders SET reason = ?, expires_at = ? WHERE name = ? AND instance_id = ? RETURNING ${COLUMNS}`)
  const remove = q<LockHolderRow>(`DELETE FROM lock_holders WHERE name = ? AND instance_id = ? RETURNING ${COLUMNS}`)
  const removeAll = removed('name = ?')
  const removeInstance = removed('instance_id = ?')
  const removeExpired = removed('expires_at IS NOT NULL AND expires_at <= ?')
  return {
    holders: async (name) => (await holders.all(u.tx, name)).map(toHolder),
    insert: async (r) => void (await insert.run(u.tx, r.name, r.instance_id, r.limit, r.fence, r.reason, r.acquired_at, r.expires_at)),
    renew: async (name, id, reason, expires) => maybe(await renew.get(u.tx, reason, expires, name, id)),
    remove: async (name, id) => maybe(await remove.get(u.tx, name, id)),
    removeAll: async (name) => (await removeAll.all(u.tx, name)).map(toHolder),
    removeInstance: async (id) => (await removeInstance.all(u.tx, id)).map(toHolder),
    removeExpired: async (now) => (await removeExpired.all(u.tx, now)).map(toHolder),
  }
}

export function pgLocksStore(sql: SQL): LocksStore {
  const all = q<LockHolderRow>(`SELECT ${COLUMNS} FROM lock_holders ORDER BY name, fence`)
  const prefixed = q<LockHolderRow>(`SELECT ${COLUMNS} FROM lock_holders WHERE name >= ? AND name < ? ORDER BY name, fence`)
  const holders = q<LockHolderRow>(`SELECT ${COLUMNS} FROM lock_holders WHERE name = ? ORDER BY fence`)
  return {
    list: async (prefix) => (await (prefix ? prefixed.all(sql, ...prefixRange(prefix)) : all.all(sql))).map(toHolder),
    holders: async (name) => (await holders.all(sql, name)).map(toHolder),
  }
}

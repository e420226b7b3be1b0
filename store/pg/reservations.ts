// Path reservations on PostgreSQL (twin of store/reservations.ts).
import type { SQL } from 'bun'
import type { Async } from '../index'
import {
  COLUMNS, HOLDING, listQuery, toHolding, toReservation,
  type HoldingRow, type ReservationsStore, type ReservationsWrites, type Row,
} from '../reservations'
import { int, q, type PgUnits } from './db'

const fromRow = (r: Row) => toReservation({ ...r, fence: int(r.fence) })
const maybe = (r: Row | null) => (r ? fromRow(r) : null)
/** Removed reservations in grant order, as the SQLite store sorts them. */
const removed = (where: string) => q<Row>(`WITH gone AS (DELETE FROM reservations WHERE ${where} RETURNING ${COLUMNS}) SELECT * FROM gone ORDER BY fence`)

export function pgReservationsWrites(u: PgUnits): Async<ReservationsWrites> {
  const holdings = q<HoldingRow>(HOLDING)
  const one = q<Row>(`SELECT ${COLUMNS} FROM reservations WHERE id = ?`)
  const insert = q(`INSERT INTO reservations (${COLUMNS}) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)`)
  const renew = q<Row>(`UPDATE reservations SET expires_at = ? WHERE id = ? RETURNING ${COLUMNS}`)
  const remove = q<Row>(`DELETE FROM reservations WHERE id = ? RETURNING ${COLUMNS}`)
  const removeInstance = removed('instance_id = ?')
  const removeExpired = removed('expires_at IS NOT NULL AND expires_at <= ?')
  return {
    holdings: async (project) => (await holdings.all(u.tx, project)).map(toHolding),
    get: async (id) => maybe(await one.get(u.tx, id)),
    insert: async (r) =>
      void (await insert.run(u.tx, r.id, r.project, r.instance_id, JSON.stringify(r.paths), r.exclusive, r.fence, r.reason, r.created_at, r.expires_at)),
    renew: async (id, expires) => maybe(await renew.get(u.tx, expires, id)),
    remove: async (id) => maybe(await remove.get(u.tx, id)),
    removeInstance: async (id) => (await removeInstance.all(u.tx, id)).map(fromRow),
    removeExpired: async (now) => (await removeExpired.all(u.tx, now)).map(fromRow),
  }
}

export function pgReservationsStore(sql: SQL): ReservationsStore {
  const one = q<Row>(`SELECT ${COLUMNS} FROM reservations WHERE id = ?`)
  const holdings = q<HoldingRow>(HOLDING)
  const shapes = new Map<string, ReturnType<typeof q<Row>>>()
  return {
    async list(filter) {
      const { sql: text, args } = listQuery(filter)
      let stmt = shapes.get(text)
      if (!stmt) shapes.set(text, (stmt = q<Row>(text)))
      return (await stmt.all(sql, ...args)).map(fromRow)
    },
    get: async (id) => maybe(await one.get(sql, id)),
    holdings: async (project) => (await holdings.all(sql, project)).map(toHolding),
  }
}

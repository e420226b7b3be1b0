// Path reservations: globs of a project held by one instance, exclusive or shared.
import type { Database } from 'bun:sqlite'

export interface Reservation {
  id: string
  project: string
  instance_id: string
  paths: string[]
  exclusive: boolean
  fence: number
  reason: string | null
  created_at: string
  expires_at: string | null
}

/** What the overlap check needs of a reservation (a narrow read: grants check against every one of the project). */
export interface Holding {
  id: string
  instance_id: string
  paths: string[]
  exclusive: boolean
}

export interface ReservationFilter {
  project?: string
  instance_id?: string
}

export interface ReservationsWrites {
  /** Every reservation of a project (read on the writer: sees this unit's and its batch's changes). */
  holdings(project: string): Holding[]
  get(id: string): Reservation | null
  insert(r: Reservation): void
  renew(id: string, expiresAt: string | null): Reservation | null
  remove(id: string): Reservation | null
  removeInstance(instanceId: string): Reservation[]
  removeExpired(now: string): Reservation[]
}

export interface ReservationsStore {
  /** Newest first. */
  list(filter: ReservationFilter): Promise<Reservation[]>
  get(id: string): Promise<Reservation | null>
  /** Every reservation of a project (for checks). */
  holdings(project: string): Promise<Holding[]>
}

export type Row = Omit<Reservation, 'paths' | 'exclusive'> & { paths: string; exclusive: number }
export const COLUMNS = 'id, project, instance_id, paths, exclusive, fence, reason, created_at, expires_at'
export const toReservation = (r: Row): Reservation => ({ ...r, paths: JSON.parse(r.paths), exclusive: r.exclusive === 1 })
const maybe = (r: Row | null) => (r ? toReservation(r) : null)

export type HoldingRow = { id: string; instance_id: string; paths: string; exclusive: number }
export const HOLDING = 'SELECT id, instance_id, paths, exclusive FROM reservations WHERE project = ? ORDER BY seq'
/** Parsed path lists by their JSON text: the same few lists are read on every grant. */
const parsed = new Map<string, string[]>()
export function toHolding(r: HoldingRow): Holding {
  let paths = parsed.get(r.paths)
  if (!paths) {
    if (parsed.size >= 50_000) parsed.clear()
    parsed.set(r.paths, (paths = JSON.parse(r.paths) as string[]))
  }
  return { id: r.id, instance_id: r.instance_id, paths, exclusive: r.exclusive === 1 }
}

export function reservationsWrites(db: Database): ReservationsWrites {
  const holdings = db.query<HoldingRow, [string]>(HOLDING)
  const one = db.query<Row, [string]>(`SELECT ${COLUMNS} FROM reservations WHERE id = ?`)
  const insert = db.query<unknown, [string, string, string, string, number, number, string | null, string, string | null]>(
    `INSERT INTO reservations (${COLUMNS}) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)`,
  )
  const renew = db.query<Row, [string | null, string]>(`UPDATE reservations SET expires_at = ? WHERE id = ? RETURNING ${COLUMNS}`)
  const remove = db.query<Row, [string]>(`DELETE FROM reservations WHERE id = ? RETURNING ${COLUMNS}`)
  const removeInstance = db.query<Row, [string]>(`DELETE FROM reservations WHERE instance_id = ? RETURNING ${COLUMNS}`)
  const removeExpired = db.query<Row, [string]>(
    `DELETE FROM reservations WHERE expires_at IS NOT NULL AND expires_at <= ? RETURNING ${COLUMNS}`,
  )
  const byFence = (rows: Row[]) => rows.map(toReservation).sort((a, b) => a.fence - b.fence)
  return {
    holdings: (project) => holdings.all(project).map(toHolding),
    get: (id) => maybe(one.get(id)),
    insert: (r) =>
      void insert.run(r.id, r.project, r.instance_id, JSON.stringify(r.paths), r.exclusive ? 1 : 0, r.fence, r.reason, r.created_at, r.expires_at),
    renew: (id, expires) => maybe(renew.get(expires, id)),
    remove: (id) => maybe(remove.get(id)),
    removeInstance: (id) => byFence(removeInstance.all(id)),
    removeExpired: (now) => byFence(removeExpired.all(now)),
  }
}

/** A list's statement (newest first) and its arguments. */
export function listQuery(filter: ReservationFilter): { sql: string; args: string[] } {
  const where: string[] = []
  const args: string[] = []
  if (filter.project !== undefined) where.push('project = ?'), args.push(filter.project)
  if (filter.instance_id !== undefined) where.push('instance_id = ?'), args.push(filter.instance_id)
  return { sql: `SELECT ${COLUMNS} FROM reservations ${where.length ? `WHERE ${where.join(' AND ')}` : ''} ORDER BY seq DESC`, args }
}

export function reservationsStore(db: Database): ReservationsStore {
  const one = db.query<Row, [string]>(`SELECT ${COLUMNS} FROM reservations WHERE id = ?`)
  const holdings = db.query<HoldingRow, [string]>(HOLDING)
  const shapes = new Map<string, ReturnType<typeof db.query<Row, string[]>>>()
  return {
    async list(filter) {
      const { sql, args } = listQuery(filter)
      let stmt = shapes.get(sql)
      if (!stmt) shapes.set(sql, (stmt = db.query<Row, string[]>(sql)))
      return stmt.all(...args).map(toReservation)
    },
    get: async (id) => maybe(one.get(id)),
    holdings: async (project) => holdings.all(project).map(toHolding),
  }
}

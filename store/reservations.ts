// Path reservations: globs of a project held by one instance, exclusive or shared.
import { int, stmt, type Runner } from './runner'

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
  holdings(project: string): Promise<Holding[]>
  get(id: string): Promise<Reservation | null>
  insert(r: Reservation): Promise<void>
  renew(id: string, expiresAt: string | null): Promise<Reservation | null>
  remove(id: string): Promise<Reservation | null>
  removeInstance(instanceId: string): Promise<Reservation[]>
  removeExpired(now: string): Promise<Reservation[]>
}

export interface ReservationsStore {
  /** Newest first. */
  list(filter: ReservationFilter): Promise<Reservation[]>
  get(id: string): Promise<Reservation | null>
  /** Every reservation of a project (for checks). */
  holdings(project: string): Promise<Holding[]>
}

type Row = Omit<Reservation, 'paths' | 'exclusive' | 'fence'> & { paths: string; exclusive: number; fence: number | string }
const COLUMNS = 'id, project, instance_id, paths, exclusive, fence, reason, created_at, expires_at'
const RETURNING = `RETURNING ${COLUMNS}`
const toReservation = (r: Row): Reservation => ({ ...r, paths: JSON.parse(r.paths), exclusive: r.exclusive === 1, fence: int(r.fence) })
const maybe = (r: Row | null) => (r ? toReservation(r) : null)
/** Removed reservations in grant order: RETURNING promises no order. */
const byFence = (rows: Row[]) => rows.map(toReservation).sort((a, b) => a.fence - b.fence)

type HoldingRow = { id: string; instance_id: string; paths: string; exclusive: number }
/** Parsed path lists by their JSON text: the same few lists are read on every grant. */
const parsed = new Map<string, string[]>()
function toHolding(r: HoldingRow): Holding {
  let paths = parsed.get(r.paths)
  if (!paths) {
    if (parsed.size >= 50_000) parsed.clear()
    parsed.set(r.paths, (paths = JSON.parse(r.paths) as string[]))
  }
  return { id: r.id, instance_id: r.instance_id, paths, exclusive: r.exclusive === 1 }
}

const HOLDINGS = stmt<HoldingRow>('SELECT id, instance_id, paths, exclusive FROM reservations WHERE project = ? ORDER BY seq')
const ONE = stmt<Row>(`SELECT ${COLUMNS} FROM reservations WHERE id = ?`)
const INSERT = stmt(`INSERT INTO reservations (${COLUMNS}) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)`)
const RENEW = stmt<Row>(`UPDATE reservations SET expires_at = ? WHERE id = ? ${RETURNING}`)
const REMOVE = stmt<Row>(`DELETE FROM reservations WHERE id = ? ${RETURNING}`)
const REMOVE_INSTANCE = stmt<Row>(`DELETE FROM reservations WHERE instance_id = ? ${RETURNING}`)
const REMOVE_EXPIRED = stmt<Row>(`DELETE FROM reservations WHERE expires_at IS NOT NULL AND expires_at <= ? ${RETURNING}`)

export function reservationsWrites(w: Runner): ReservationsWrites {
  return {
    holdings: async (project) => (await w.all(HOLDINGS, project)).map(toHolding),
    get: async (id) => maybe(await w.get(ONE, id)),
    insert: async (r) =>
      void (await w.run(INSERT, r.id, r.project, r.instance_id, JSON.stringify(r.paths), r.exclusive ? 1 : 0, r.fence, r.reason, r.created_at, r.expires_at)),
    renew: async (id, expires) => maybe(await w.get(RENEW, expires, id)),
    remove: async (id) => maybe(await w.get(REMOVE, id)),
    removeInstance: async (id) => byFence(await w.all(REMOVE_INSTANCE, id)),
    removeExpired: async (now) => byFence(await w.all(REMOVE_EXPIRED, now)),
  }
}

export function reservationsStore(r: Runner): ReservationsStore {
  return {
    async list(filter) {
      const where: string[] = []
      const args: string[] = []
      if (filter.project !== undefined) where.push('project = ?'), args.push(filter.project)
      if (filter.instance_id !== undefined) where.push('instance_id = ?'), args.push(filter.instance_id)
      const text = `SELECT ${COLUMNS} FROM reservations ${where.length ? `WHERE ${where.join(' AND ')}` : ''} ORDER BY seq DESC`
      return (await r.all(stmt<Row>(text), ...args)).map(toReservation)
    },
    get: async (id) => maybe(await r.get(ONE, id)),
    holdings: async (project) => (await r.all(HOLDINGS, project)).map(toHolding),
  }
}

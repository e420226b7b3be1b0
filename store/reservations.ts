// Path reservations: globs of a project held by one instance, exclusive or shared.
import { int, send, stmt, type Dialect, type Runner, type Stmt, type UnitHooks } from './runner'
import { pathPrefixes, prefixesMeet, prefixQuery } from '../lib/path-prefix'
import { settingsOn } from './projects'

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
  /** Read with it so an edit in edit-reserve mode decides on its own reservation without reading it again. */
  reason: string | null
  expires_at: string | null
}

export interface ReservationFilter {
  project?: string
  instance_id?: string
}

/** The reads an overlap check needs: on the writer (a unit) or on committed data. */
export interface HoldingsReads {
  /** Every reservation of a project, in grant order. */
  holdings(project: string): Promise<Holding[]>
  /**
   * The reservations of a project that could overlap `paths` (lib/path-prefix.ts): those
   * whose paths' literal prefixes meet the paths' ones; every one when a path has none. Grant order.
   */
  holdingsFor(project: string, paths: string[]): Promise<readonly Holding[]>
  /** Whether the project's paths compare without regard to case (its settings, store/projects.ts). */
  caseInsensitive(project: string): Promise<boolean>
}

export interface ReservationsWrites extends HoldingsReads {
  get(id: string): Promise<Reservation | null>
  insert(r: Reservation): Promise<void>
  renew(id: string, expiresAt: string | null): Promise<Reservation | null>
  remove(id: string): Promise<Reservation | null>
  removeInstance(instanceId: string): Promise<Reservation[]>
  removeExpired(now: string): Promise<Reservation[]>
}

/**
 * What a unit changed: a reservation of `project` indexed under `prefixes` (`granted`, `renewed`
 * to a new expiry, or `removed`), or (prefixes null) the project's settings.
 */
export type ReservationChange =
  | { project: string; prefixes: string[]; granted: Holding }
  | { project: string; prefixes: string[]; renewed: { id: string; expires_at: string | null } }
  | { project: string; prefixes: string[]; removed: string }
  | { project: string; prefixes: null }

export interface ReservationsStore extends HoldingsReads {
  /** Newest first. */
  list(filter: ReservationFilter): Promise<Reservation[]>
  get(id: string): Promise<Reservation | null>
  /** A committed unit changed these reservations, or a project's settings (called by the writes, after COMMIT). */
  changed(changes: ReservationChange[]): void
}

type Row = Omit<Reservation, 'paths' | 'exclusive' | 'fence'> & { paths: string; exclusive: number; fence: number | string }
const COLUMNS = 'id, project, instance_id, paths, exclusive, fence, reason, created_at, expires_at'
const RETURNING = `RETURNING ${COLUMNS}`
const toReservation = (r: Row): Reservation => ({ ...r, paths: JSON.parse(r.paths), exclusive: r.exclusive === 1, fence: int(r.fence) })
const maybe = (r: Row | null) => (r ? toReservation(r) : null)
/** Removed reservations in grant order: RETURNING promises no order. */
const byFence = (rows: Row[]) => rows.map(toReservation).sort((a, b) => a.fence - b.fence)

type HoldingRow = { id: string; instance_id: string; paths: string; exclusive: number; reason: string | null; expires_at: string | null }
/** Parsed path lists by their JSON text: the same few lists are read on every grant. */
const parsed = new Map<string, string[]>()
function toHolding(r: HoldingRow): Holding {
  let paths = parsed.get(r.paths)
  if (!paths) {
    if (parsed.size >= 50_000) parsed.clear()
    parsed.set(r.paths, (paths = JSON.parse(r.paths) as string[]))
  }
  return { id: r.id, instance_id: r.instance_id, paths, exclusive: r.exclusive === 1, reason: r.reason, expires_at: r.expires_at }
}

const HOLDING_COLUMNS = 'id, instance_id, paths, exclusive, reason, expires_at'
const HOLDINGS = stmt<HoldingRow>(`SELECT ${HOLDING_COLUMNS} FROM reservations WHERE project = ? ORDER BY seq`)
const ONE = stmt<Row>(`SELECT ${COLUMNS} FROM reservations WHERE id = ?`)
const INSERT = stmt(`INSERT INTO reservations (${COLUMNS}) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)`)
const RENEW = stmt<Row>(`UPDATE reservations SET expires_at = ? WHERE id = ? ${RETURNING}`)
const REMOVE = stmt<Row>(`DELETE FROM reservations WHERE id = ? ${RETURNING}`)
const REMOVE_INSTANCE = stmt<Row>(`DELETE FROM reservations WHERE instance_id = ? ${RETURNING}`)
const REMOVE_EXPIRED = stmt<Row>(`DELETE FROM reservations WHERE expires_at IS NOT NULL AND expires_at <= ? ${RETURNING}`)

/**
 * The reservation index (reservation_paths: one row per distinct prefix of a reservation's
 * paths; rows from before the index have prefix '', an ancestor of every path, so they are
 * always read). Prefixes are compared bytewise (SQLite's BINARY, PostgreSQL's "C"), so
 * everything below `a/b` lies between `a/b/` and `a/b0` ('0' follows '/').
 */
export function indexStatements(d: Dialect) {
  return {
    add: stmt(`INSERT INTO reservation_paths (project, prefix, reservation_id) SELECT ?, x.value, ? FROM ${d.elements('?')}`),
    drop: stmt('DELETE FROM reservation_paths WHERE reservation_id = ?'),
    // By inRows: as IN (subquery), PostgreSQL hash-joins a scan of every index row with the few reservations going.
    dropInstance: stmt(`DELETE FROM reservation_paths WHERE ${d.inRows('reservation_id', 'SELECT id FROM reservations WHERE instance_id = ?')}`),
    dropExpired: stmt(
      `DELETE FROM reservation_paths WHERE ${d.inRows('reservation_id', 'SELECT id FROM reservations WHERE expires_at IS NOT NULL AND expires_at <= ?')}`,
    ),
  }
}

/** Lists padded to a power of two (repeating the last element), so a few statement texts serve every check. */
const padded = (xs: string[]) => {
  let n = 1
  while (n < xs.length) n *= 2
  return xs.concat(Array(n - xs.length).fill(xs.at(-1)))
}

/**
 * The reservations whose prefix is one of `exact` or lies below one of `below`: one
 * index search per arm. Placeholders rather than a JSON table, so both planners see
 * how few prefixes there are and search the primary key for each.
 */
export function nearStatement(d: Dialect, exact: number, below: number): Stmt<HoldingRow> {
  const arms = [`SELECT reservation_id FROM reservation_paths WHERE project = ? AND prefix IN (${Array(exact).fill('?').join(', ')})`]
  for (let i = 0; i < below; i++) arms.push('SELECT reservation_id FROM reservation_paths WHERE project = ? AND prefix > ? AND prefix < ?')
  return stmt<HoldingRow>(`SELECT ${HOLDING_COLUMNS} FROM reservations WHERE ${d.inRows('id', arms.join(' UNION ALL '))} ORDER BY seq`)
}

/** holdings and holdingsFor over one runner (the unit's or committed reads). */
function holdingsReads(r: Runner, d: Dialect): HoldingsReads {
  const holdings = async (project: string) => (await r.all(HOLDINGS, project)).map(toHolding)
  return {
    holdings,
    caseInsensitive: async (project) => (await settingsOn(r, project)).case_insensitive,
    async holdingsFor(project, paths) {
      const q = prefixQuery(paths)
      if (!q) return holdings(project)
      const exact = padded(q.exact)
      const below = q.below.length ? padded(q.below) : []
      const args = [project, ...exact, ...below.flatMap((p) => [project, `${p}/`, `${p}0`])]
      return (await r.all(nearStatement(d, exact.length, below.length), ...args)).map(toHolding)
    },
  }
}

/** `changed`: the reads' ReservationsStore.changed, called after the COMMIT of each unit that changed a reservation. */
export function reservationsWrites(w: Runner, d: Dialect, unit: UnitHooks, changed: (changes: ReservationChange[]) => void): ReservationsWrites {
  const index = indexStatements(d)
  const removed = <R extends Reservation | Reservation[] | null>(r: R): R => {
    const list = r === null ? [] : Array.isArray(r) ? r : [r]
    if (list.length) unit.afterCommit(() => changed(list.map((x) => ({ project: x.project, prefixes: pathPrefixes(x.paths), removed: x.id }))))
    return r
  }
  return {
    ...holdingsReads(w, d),
    get: async (id) => maybe(await w.get(ONE, id)),
    // The index rows go with their reservation's, and before any removal's, sent without waiting
    // (PostgreSQL: a grant or release under the write lock waits on no round trip for them).
    async insert(r) {
      await send(w, INSERT, r.id, r.project, r.instance_id, JSON.stringify(r.paths), r.exclusive ? 1 : 0, r.fence, r.reason, r.created_at, r.expires_at)
      const prefixes = pathPrefixes(r.paths)
      await send(w, index.add, r.project, r.id, JSON.stringify(prefixes))
      const granted: Holding = { id: r.id, instance_id: r.instance_id, paths: [...r.paths], exclusive: r.exclusive, reason: r.reason, expires_at: r.expires_at }
      unit.afterCommit(() => changed([{ project: r.project, prefixes, granted }]))
    },
    async renew(id, expires) {
      const r = maybe(await w.get(RENEW, expires, id))
      if (r) unit.afterCommit(() => changed([{ project: r.project, prefixes: pathPrefixes(r.paths), renewed: { id: r.id, expires_at: r.expires_at } }]))
      return r
    },
    // Each removal drops the index rows first, in the same unit. A sent DELETE's subquery reads
    // reservations as of its own statement (store/pg/send.ts): a grant sent before it in the unit
    // is in an earlier statement, since the grant's index INSERT writes the table this DELETE does.
    async remove(id) {
      await send(w, index.drop, id)
      return removed(maybe(await w.get(REMOVE, id)))
    },
    async removeInstance(id) {
      await send(w, index.dropInstance, id)
      return removed(byFence(await w.all(REMOVE_INSTANCE, id)))
    },
    async removeExpired(now) {
      await send(w, index.dropExpired, now)
      return removed(byFence(await w.all(REMOVE_EXPIRED, now)))
    },
  }
}

/**
 * A kept answer after one reservation it reads changed, as the read would now answer (in grant
 * order: a grant is the newest); null when that cannot be told without reading. Each edit in
 * edit-reserve mode grants its file the first time and renews it every half TTL: dropping the
 * answer instead would cost that file's next edit a read.
 */
function updated(found: readonly Holding[], change: Exclude<ReservationChange, { prefixes: null }>): readonly Holding[] | null {
  if ('granted' in change) return found.some((h) => h.id === change.granted.id) ? null : [...found, change.granted]
  if ('removed' in change) return found.filter((h) => h.id !== change.removed)
  const at = found.findIndex((h) => h.id === change.renewed.id)
  return at < 0 ? null : found.map((h, i) => (i === at ? { ...h, expires_at: change.renewed.expires_at } : h))
}

/**
 * One kept answer of holdingsFor. A fleet keeps one for every file each agent edits, and each
 * full collection of the heap marks every one: so two fields, and `own` (pathPrefixes of the
 * check's paths, what a change is matched with) is one string for one path, the key itself
 * where that is its prefix (a literal path in lower case).
 */
interface KeptCheck {
  found: readonly Holding[]
  own: string | readonly string[]
}

function ownPrefixes(key: string, paths: string[]): KeptCheck['own'] {
  const own = pathPrefixes(paths)
  if (own.length !== 1) return own
  return own[0] === key ? key : own[0]
}

/** Checks kept in all (a fleet's agents each editing a few files), and projects kept. */
const KEPT_CHECKS = 100_000
const KEPT_PROJECTS = 10_000

/**
 * `keep`: this process is the database's only writer, so the answers of holdingsFor (the
 * hooks' check of every edit) are kept, and brought up to date by each committed unit
 * that grants, renews or removes a reservation the check would read (a grant elsewhere in
 * the project leaves them be), and the project's case rule until its settings change; on
 * PostgreSQL other replicas write too, and every check reads.
 */
function keptChecks(reads: HoldingsReads, keep: boolean) {
  // Projects oldest first; past the bounds the oldest project's checks go first, whole.
  const kept = new Map<string, Map<string, KeptCheck>>()
  let count = 0
  const forget = (project: string) => {
    count -= kept.get(project)?.size ?? 0
    kept.delete(project)
  }
  // Counts the commits that changed reservations, so a read one of them overtook is answered but not kept.
  let writes = 0
  const holdingsFor = async (project: string, paths: string[]): Promise<readonly Holding[]> => {
    const key = paths.join('\0')
    const hit = kept.get(project)?.get(key)
    if (hit) return hit.found
    const seen = writes
    const found = await reads.holdingsFor(project, paths)
    if (seen !== writes) return found
    while (kept.size && (count >= KEPT_CHECKS || (kept.size >= KEPT_PROJECTS && !kept.has(project)))) forget(kept.keys().next().value!)
    let checks = kept.get(project)
    if (!checks) kept.set(project, (checks = new Map()))
    if (!checks.has(key)) count++
    checks.set(key, { found, own: ownPrefixes(key, paths) })
    return found
  }
  // The projects' case rule, read with any check that finds a reservation.
  const caseless = new Map<string, boolean>()
  const caseInsensitive = async (project: string): Promise<boolean> => {
    const hit = caseless.get(project)
    if (hit !== undefined) return hit
    const seen = writes
    const value = await reads.caseInsensitive(project)
    if (seen !== writes) return value
    if (caseless.size >= KEPT_PROJECTS) caseless.delete(caseless.keys().next().value!)
    caseless.set(project, value)
    return value
  }
  return {
    holdingsFor: keep ? holdingsFor : reads.holdingsFor,
    caseInsensitive: keep ? caseInsensitive : reads.caseInsensitive,
    changed(changes: ReservationChange[]) {
      if (!keep) return
      writes++
      for (const change of changes) {
        const checks = kept.get(change.project)
        if (change.prefixes === null) (forget(change.project), caseless.delete(change.project))
        else if (checks)
          for (const [key, check] of checks) {
            if (!prefixesMeet(check.own, change.prefixes)) continue
            const found = updated(check.found, change)
            if (found) check.found = found
            else checks.delete(key), count--
          }
      }
    },
  }
}

export function reservationsStore(r: Runner, d: Dialect, keep = false): ReservationsStore {
  const reads = holdingsReads(r, d)
  return {
    ...reads,
    ...keptChecks(reads, keep),
    async list(filter) {
      const where: string[] = []
      const args: string[] = []
      if (filter.project !== undefined) where.push('project = ?'), args.push(filter.project)
      if (filter.instance_id !== undefined) where.push('instance_id = ?'), args.push(filter.instance_id)
      const text = `SELECT ${COLUMNS} FROM reservations ${where.length ? `WHERE ${where.join(' AND ')}` : ''} ORDER BY seq DESC`
      return (await r.all(stmt<Row>(text), ...args)).map(toReservation)
    },
    get: async (id) => maybe(await r.get(ONE, id)),
  }
}

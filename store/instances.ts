// Instance registry: agents that registered with the service. Only a SHA-256 of
// each instance token is kept; the token itself is shown once, at registration.
import { nowIso } from '../lib/time'
import { int, stmt, type Dialect, type Runner, type UnitHooks } from './runner'

export type InstanceStatus = 'active' | 'stale'

export interface Instance {
  id: string
  name: string
  workspace: string
  intent: string
  stack: string
  capabilities: string[]
  status: InstanceStatus
  registered_at: string
  last_seen: string
}

export interface NewInstance {
  name: string
  workspace?: string
  intent?: string
  stack?: string
  capabilities?: string[]
}

export interface InstanceFilter {
  name?: string
  workspace?: string
  stack?: string
  /** Exact match of one element of `capabilities`. */
  capability?: string
  status?: InstanceStatus
}

export interface InstancesStore {
  list(filter: InstanceFilter): Promise<Instance[]>
  get(id: string): Promise<Instance | null>
  stale(): Promise<Instance[]>
  /** The instance of an instance token, and the agent token that registered it (null: the admin token, or none). */
  byTokenHash(tokenHash: string): Promise<{ id: string; token_id: string | null } | null>
  /** The agent token that registered instance `id` (null: the admin token, or none); undefined for an unknown instance. */
  tokenIdOf(id: string): Promise<string | null | undefined>
  count(): Promise<number>
}

export interface InstancesWrites {
  /** `tokenId`: the agent token registering it (null for the admin token or without auth); `id` when the caller chose it. */
  register(i: NewInstance, tokenHash: string, tokenId: string | null, id?: string): Promise<Instance>
  /** The registered instances (active or stale) named `name` that agent token `tokenId` registered, newest first. */
  namedFor(name: string, tokenId: string): Promise<{ id: string; token_hash: string }[]>
  /** Takes up a registered instance again: the given fields replace its own, last_seen is now, status active. */
  resume(id: string, i: NewInstance): Promise<Instance | null>
  get(id: string): Promise<Instance | null>
  /** Refreshes last_seen and makes a stale instance active again. */
  heartbeat(id: string): Promise<Instance | null>
  /** heartbeat of each of `ids` (unknown ones skipped), in one statement. */
  heartbeatAll(ids: string[]): Promise<void>
  activate(id: string): Promise<Instance | null>
  setCapabilities(id: string, capabilities: string[]): Promise<Instance | null>
  /** Sets the intent; counts as a sign of life (last_seen). */
  setIntent(id: string, intent: string): Promise<Instance | null>
  delete(id: string): Promise<Instance | null>
  /** Active instances last seen before `cutoff` become stale; returns them. */
  markStale(cutoff: string): Promise<Instance[]>
}

/** An instance as stored (capabilities as JSON text). */
export type InstanceRow = Omit<Instance, 'capabilities'> & { capabilities: string }
type Row = InstanceRow
export const INSTANCE_COLUMNS = 'id, name, workspace, intent, stack, capabilities, status, registered_at, last_seen'
const COLUMNS = INSTANCE_COLUMNS
const RETURNING = `RETURNING ${COLUMNS}`
export const toInstance = (r: Row): Instance => ({
  id: r.id,
  name: r.name,
  workspace: r.workspace,
  intent: r.intent,
  stack: r.stack,
  capabilities: JSON.parse(r.capabilities),
  status: r.status,
  registered_at: r.registered_at,
  last_seen: r.last_seen,
})
const maybe = (r: Row | null): Instance | null => (r ? toInstance(r) : null)

const INSERT = stmt<Row>(
  `INSERT INTO instances (id, name, workspace, intent, stack, capabilities, status, registered_at, last_seen, token_hash, token_id)
   VALUES (?, ?, ?, ?, ?, ?, 'active', ?, ?, ?, ?) ${RETURNING}`,
)
const ONE = stmt<Row>(`SELECT ${COLUMNS} FROM instances WHERE id = ?`)
const BEAT = stmt<Row>(`UPDATE instances SET last_seen = ?, status = 'active' WHERE id = ? ${RETURNING}`)
const ACTIVATE = stmt<Row>(`UPDATE instances SET status = 'active' WHERE id = ? ${RETURNING}`)
const CAPABILITIES = stmt<Row>(`UPDATE instances SET capabilities = ? WHERE id = ? ${RETURNING}`)
const INTENT = stmt<Row>(`UPDATE instances SET intent = ?, last_seen = ? WHERE id = ? ${RETURNING}`)
const REMOVE = stmt<Row>(`DELETE FROM instances WHERE id = ? ${RETURNING}`)
const STALE = stmt<Row>(`SELECT ${COLUMNS} FROM instances WHERE status = 'stale' ORDER BY last_seen, id`)
const RESUME = stmt<Row>(
  `UPDATE instances SET workspace = COALESCE(?, workspace), intent = COALESCE(?, intent), stack = COALESCE(?, stack),
     capabilities = COALESCE(?, capabilities), last_seen = ?, status = 'active' WHERE id = ? ${RETURNING}`,
)
const BY_HASH = stmt<{ id: string; token_id: string | null }>('SELECT id, token_id FROM instances WHERE token_hash = ?')
const TOKEN_ID = stmt<{ token_id: string | null }>('SELECT token_id FROM instances WHERE id = ?')
const NAMED_FOR = stmt<{ id: string; token_hash: string }>('SELECT id, token_hash FROM instances WHERE name = ? AND token_id = ? ORDER BY registered_at DESC')
const COUNT = stmt<{ n: number | string }>('SELECT COUNT(*) AS n FROM instances')

/** `deleted`: told after the COMMIT of a unit that deleted instances (the kept live sessions of store/sessions.ts). */
export function instancesWrites(w: Runner, d: Dialect, unit: UnitHooks, deleted: (ids: string[]) => void): InstancesWrites {
  const markStale = stmt<Row & { seq: number | string }>(
    `UPDATE instances SET status = 'stale' WHERE status = 'active' AND last_seen < ? ${RETURNING}, ${d.seq} AS seq`,
  )
  const beatAll = stmt(`UPDATE instances SET last_seen = ?, status = 'active' WHERE ${d.inRows('id', `SELECT x.value FROM ${d.elements('?')}`)}`)
  return {
    async register(i, tokenHash, tokenId, id = crypto.randomUUID()) {
      const at = nowIso()
      const caps = JSON.stringify(i.capabilities ?? [])
      return toInstance((await w.get(INSERT, id, i.name, i.workspace ?? '', i.intent ?? '', i.stack ?? '', caps, at, at, tokenHash, tokenId))!)
    },
    async resume(id, i) {
      const caps = i.capabilities === undefined ? null : JSON.stringify(i.capabilities)
      return maybe(await w.get(RESUME, i.workspace ?? null, i.intent ?? null, i.stack ?? null, caps, nowIso(), id))
    },
    namedFor: (name, tokenId) => w.all(NAMED_FOR, name, tokenId),
    get: async (id) => maybe(await w.get(ONE, id)),
    heartbeat: async (id) => maybe(await w.get(BEAT, nowIso(), id)),
    // One instance (a quiet server batches none) by its key; more through the list.
    heartbeatAll: async (ids) => void (await (ids.length === 1 ? w.run(BEAT, nowIso(), ids[0]) : w.run(beatAll, nowIso(), JSON.stringify(ids)))),
    activate: async (id) => maybe(await w.get(ACTIVATE, id)),
    setCapabilities: async (id, caps) => maybe(await w.get(CAPABILITIES, JSON.stringify(caps), id)),
    setIntent: async (id, text) => maybe(await w.get(INTENT, text, nowIso(), id)),
    async delete(id) {
      const gone = maybe(await w.get(REMOVE, id))
      if (gone) unit.afterCommit(() => deleted([gone.id]))
      return gone
    },
    // In insertion order.
    markStale: async (cutoff) => (await w.all(markStale, cutoff)).sort((a, b) => int(a.seq) - int(b.seq)).map(toInstance),
  }
}

export function instancesStore(r: Runner, d: Dialect): InstancesStore {
  return {
    async list(filter) {
      const where: string[] = []
      const args: string[] = []
      for (const field of ['name', 'workspace', 'stack', 'status'] as const) {
        if (filter[field] !== undefined) where.push(`${field} = ?`), args.push(filter[field]!)
      }
      if (filter.capability !== undefined) where.push(d.hasElement('capabilities', '?')), args.push(d.element(filter.capability))
      // Insertion order breaks ties: registrations within one millisecond keep theirs.
      const text = `SELECT ${COLUMNS} FROM instances ${where.length ? `WHERE ${where.join(' AND ')}` : ''} ORDER BY registered_at, ${d.seq}`
      return (await r.all(stmt<Row>(text), ...args)).map(toInstance)
    },
    get: async (id) => maybe(await r.get(ONE, id)),
    stale: async () => (await r.all(STALE)).map(toInstance),
    byTokenHash: (h) => r.get(BY_HASH, h),
    tokenIdOf: async (id) => {
      const row = await r.get(TOKEN_ID, id)
      return row ? row.token_id : undefined
    },
    count: async () => int((await r.get(COUNT))!.n),
  }
}

// Instance registry: agents that registered with the service. Only a SHA-256 of
// each instance token is kept; the token itself is shown once, at registration.
import type { Database } from 'bun:sqlite'
import { now } from './db'

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
  idByTokenHash(tokenHash: string): Promise<string | null>
  count(): Promise<number>
}

export interface InstancesWrites {
  register(i: NewInstance, tokenHash: string): Instance
  get(id: string): Instance | null
  /** Refreshes last_seen and makes a stale instance active again. */
  heartbeat(id: string): Instance | null
  activate(id: string): Instance | null
  setCapabilities(id: string, capabilities: string[]): Instance | null
  /** Sets the intent; counts as a sign of life (last_seen). */
  setIntent(id: string, intent: string): Instance | null
  delete(id: string): Instance | null
  /** Active instances last seen before `cutoff` become stale; returns them. */
  markStale(cutoff: string): Instance[]
}

export type Row = Omit<Instance, 'capabilities'> & { capabilities: string }
export const COLUMNS = 'id, name, workspace, intent, stack, capabilities, status, registered_at, last_seen'
export const toInstance = (r: Row): Instance => ({ ...r, capabilities: JSON.parse(r.capabilities) })
export const maybe = (r: Row | null): Instance | null => (r ? toInstance(r) : null)

/** The WHERE clause of a list (`capability` is the backend's test that `?` is an element of `capabilities`) and its arguments. */
export function instanceWhere(filter: InstanceFilter, capability: string): { where: string; args: string[] } {
  const where: string[] = []
  const args: string[] = []
  for (const field of ['name', 'workspace', 'stack', 'status'] as const) {
    if (filter[field] !== undefined) where.push(`${field} = ?`), args.push(filter[field]!)
  }
  if (filter.capability !== undefined) where.push(capability), args.push(filter.capability)
  return { where: where.length ? `WHERE ${where.join(' AND ')}` : '', args }
}

export function instancesWrites(db: Database): InstancesWrites {
  const insert = db.query<Row, [string, string, string, string, string, string, string, string, string]>(
    `INSERT INTO instances (id, name, workspace, intent, stack, capabilities, status, registered_at, last_seen, token_hash)
     VALUES (?, ?, ?, ?, ?, ?, 'active', ?, ?, ?) RETURNING ${COLUMNS}`,
  )
  const one = db.query<Row, [string]>(`SELECT ${COLUMNS} FROM instances WHERE id = ?`)
  const beat = db.query<Row, [string, string]>(`UPDATE instances SET last_seen = ?, status = 'active' WHERE id = ? RETURNING ${COLUMNS}`)
  const activate = db.query<Row, [string]>(`UPDATE instances SET status = 'active' WHERE id = ? RETURNING ${COLUMNS}`)
  const capabilities = db.query<Row, [string, string]>(`UPDATE instances SET capabilities = ? WHERE id = ? RETURNING ${COLUMNS}`)
  const intent = db.query<Row, [string, string, string]>(`UPDATE instances SET intent = ?, last_seen = ? WHERE id = ? RETURNING ${COLUMNS}`)
  const remove = db.query<Row, [string]>(`DELETE FROM instances WHERE id = ? RETURNING ${COLUMNS}`)
  const markStale = db.query<Row, [string]>(
    `UPDATE instances SET status = 'stale' WHERE status = 'active' AND last_seen < ? RETURNING ${COLUMNS}`,
  )
  return {
    register(i, tokenHash) {
      const at = now()
      const caps = JSON.stringify(i.capabilities ?? [])
      return toInstance(insert.get(crypto.randomUUID(), i.name, i.workspace ?? '', i.intent ?? '', i.stack ?? '', caps, at, at, tokenHash)!)
    },
    get: (id) => maybe(one.get(id)),
    heartbeat: (id) => maybe(beat.get(now(), id)),
    activate: (id) => maybe(activate.get(id)),
    setCapabilities: (id, caps) => maybe(capabilities.get(JSON.stringify(caps), id)),
    setIntent: (id, text) => maybe(intent.get(text, now(), id)),
    delete: (id) => maybe(remove.get(id)),
    markStale: (cutoff) => markStale.all(cutoff).map(toInstance),
  }
}

export function instancesStore(db: Database): InstancesStore {
  const one = db.query<Row, [string]>(`SELECT ${COLUMNS} FROM instances WHERE id = ?`)
  const stale = db.query<Row, []>(`SELECT ${COLUMNS} FROM instances WHERE status = 'stale' ORDER BY last_seen, id`)
  const byHash = db.query<{ id: string }, [string]>('SELECT id FROM instances WHERE token_hash = ?')
  const count = db.query<{ n: number }, []>('SELECT COUNT(*) AS n FROM instances')
  // Each filter combination is one statement shape: prepare it once.
  const shapes = new Map<string, ReturnType<typeof db.query<Row, string[]>>>()
  return {
    async list(filter) {
      const { where, args } = instanceWhere(filter, 'EXISTS (SELECT 1 FROM json_each(capabilities) WHERE value = ?)')
      const sql = `SELECT ${COLUMNS} FROM instances ${where} ORDER BY registered_at, rowid`
      let stmt = shapes.get(sql)
      if (!stmt) shapes.set(sql, (stmt = db.query<Row, string[]>(sql)))
      return stmt.all(...args).map(toInstance)
    },
    get: async (id) => maybe(one.get(id)),
    stale: async () => stale.all().map(toInstance),
    idByTokenHash: async (h) => byHash.get(h)?.id ?? null,
    count: async () => count.get()!.n,
  }
}

// The instance registry on PostgreSQL (twin of store/instances.ts).
import type { SQL } from 'bun'
import type { Async } from '../index'
import { now } from '../db'
import { COLUMNS, instanceWhere, maybe, toInstance, type InstancesStore, type InstancesWrites, type Row } from '../instances'
import { q, type PgUnits } from './db'

const RETURNING = `RETURNING ${COLUMNS}`
// The capabilities are a JSON array of strings: containment of a one-element array is element equality.
const HAS_CAPABILITY = 'capabilities::jsonb @> jsonb_build_array(?::text)'

export function pgInstancesWrites(u: PgUnits): Async<InstancesWrites> {
  const insert = q<Row>(
    `INSERT INTO instances (id, name, workspace, intent, stack, capabilities, status, registered_at, last_seen, token_hash)
     VALUES (?, ?, ?, ?, ?, ?, 'active', ?, ?, ?) ${RETURNING}`,
  )
  const one = q<Row>(`SELECT ${COLUMNS} FROM instances WHERE id = ?`)
  const beat = q<Row>(`UPDATE instances SET last_seen = ?, status = 'active' WHERE id = ? ${RETURNING}`)
  const activate = q<Row>(`UPDATE instances SET status = 'active' WHERE id = ? ${RETURNING}`)
  const capabilities = q<Row>(`UPDATE instances SET capabilities = ? WHERE id = ? ${RETURNING}`)
  const intent = q<Row>(`UPDATE instances SET intent = ?, last_seen = ? WHERE id = ? ${RETURNING}`)
  const remove = q<Row>(`DELETE FROM instances WHERE id = ? ${RETURNING}`)
  // In insertion order, as SQLite's update walks its rowids.
  const markStale = q<Row>(
    `WITH s AS (UPDATE instances SET status = 'stale' WHERE status = 'active' AND last_seen < ? ${RETURNING}, seq)
     SELECT ${COLUMNS} FROM s ORDER BY seq`,
  )
  return {
    async register(i, tokenHash) {
      const at = now()
      const caps = JSON.stringify(i.capabilities ?? [])
      return maybe(await insert.get(u.tx, crypto.randomUUID(), i.name, i.workspace ?? '', i.intent ?? '', i.stack ?? '', caps, at, at, tokenHash))!
    },
    get: async (id) => maybe(await one.get(u.tx, id)),
    heartbeat: async (id) => maybe(await beat.get(u.tx, now(), id)),
    activate: async (id) => maybe(await activate.get(u.tx, id)),
    setCapabilities: async (id, caps) => maybe(await capabilities.get(u.tx, JSON.stringify(caps), id)),
    setIntent: async (id, text) => maybe(await intent.get(u.tx, text, now(), id)),
    delete: async (id) => maybe(await remove.get(u.tx, id)),
    markStale: async (cutoff) => (await markStale.all(u.tx, cutoff)).map(toInstance),
  }
}

export function pgInstancesStore(sql: SQL): InstancesStore {
  const one = q<Row>(`SELECT ${COLUMNS} FROM instances WHERE id = ?`)
  const stale = q<Row>(`SELECT ${COLUMNS} FROM instances WHERE status = 'stale' ORDER BY last_seen, id`)
  const byHash = q<{ id: string }>('SELECT id FROM instances WHERE token_hash = ?')
  const count = q<{ n: number }>('SELECT COUNT(*)::int AS n FROM instances')
  const shapes = new Map<string, ReturnType<typeof q<Row>>>()
  return {
    async list(filter) {
      const { where, args } = instanceWhere(filter, HAS_CAPABILITY)
      // seq is insertion order, as SQLite's rowid: registrations within one millisecond keep theirs.
      const text = `SELECT ${COLUMNS} FROM instances ${where} ORDER BY registered_at, seq`
      let stmt = shapes.get(text)
      if (!stmt) shapes.set(text, (stmt = q<Row>(text)))
      return (await stmt.all(sql, ...args)).map(toInstance)
    },
    get: async (id) => maybe(await one.get(sql, id)),
    stale: async () => (await stale.all(sql)).map(toInstance),
    idByTokenHash: async (h) => (await byHash.get(sql, h))?.id ?? null,
    count: async () => (await count.get(sql))!.n,
  }
}

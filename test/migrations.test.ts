// Schema migrations keep the data: a database written by an older schema opens with
// every document, version and history entry intact.
import { afterAll, expect, test } from 'bun:test'
import { Database } from 'bun:sqlite'
import { mkdirSync, rmSync } from 'node:fs'
import { join } from 'node:path'
import { MIGRATIONS } from '../store/sqlite/db'
import { openStore } from '../store'
import { tempDir } from './helpers'
import { onPostgres } from './pg'

const dir = tempDir('muster-migrate-')
afterAll(() => rmSync(dir, { recursive: true, force: true }))

/** A database in `at` at the schema just before the migration that contains `marker`. */
function schemaBefore(at: string, marker: string): Database {
  const before = MIGRATIONS.findIndex((m) => m.includes(marker))
  expect(before).toBeGreaterThan(0)
  mkdirSync(at, { recursive: true })
  const old = new Database(join(at, 'muster.db'), { create: true, strict: true })
  for (let v = 0; v < before; v++) old.exec(MIGRATIONS[v]), old.exec(`PRAGMA user_version = ${v + 1}`)
  return old
}

test.skipIf(onPostgres)('documents written before values were kept once are all there after the migration', async () => {
  // The schema as it was before doc_versions: documents (current, with value) and document_history.
  const old = schemaBefore(dir, 'CREATE TABLE doc_versions')
  const row = (space: string, key: string, version: number, text: string) => [space, key, version, `h${version}`, 'application/json', `2026-01-0${version}T00:00:00.000Z`, new TextEncoder().encode(text)]
  const history = old.query('INSERT INTO document_history VALUES (?, ?, ?, ?, ?, ?, ?)')
  const current = old.query('INSERT INTO documents VALUES (?, ?, ?, ?, ?, ?, ?)')
  for (const [v, text] of [[1, '{"v":1}'], [2, '{"v":2}']] as const) history.run(...(row('state', 'a/b', v, text) as [string]))
  current.run(...(row('state', 'a/b', 2, '{"v":2}') as [string]))
  history.run(...(row('spec:shop', 'api', 1, '{"s":1}') as [string]))
  current.run(...(row('spec:shop', 'api', 1, '{"s":1}') as [string]))
  old.close()

  const store = openStore(dir)
  try {
    const doc = await store.state.get('a/b')
    expect(new TextDecoder().decode(doc!.value)).toBe('{"v":2}')
    expect(doc).toMatchObject({ key: 'a/b', version: 2, hash: 'h2' })
    expect((await store.state.history('a/b', 10))!.map((h) => h.version)).toEqual([2, 1])
    expect(new TextDecoder().decode((await store.state.getVersion('a/b', 1))!.value)).toBe('{"v":1}')
    expect((await store.specs.list('shop')).map((s) => s.name)).toEqual(['api'])
    expect(await store.state.list()).toEqual([{ key: 'a/b', version: 2, content_type: 'application/json', updated_at: '2026-01-02T00:00:00.000Z' }])
    // and writes go on from there
    const meta = await store.write((tx) => tx.state.put('a/b', new TextEncoder().encode('{"v":3}'), 'application/json'))
    expect(meta.version).toBe(3)
  } finally {
    store.close()
  }
})

test.skipIf(onPostgres)('versions written while they had a (space, key, version) index are all there after the chain migration', async () => {
  const sub = join(dir, 'chain')
  const old = schemaBefore(sub, 'CREATE TABLE doc_anchors')
  const version = old.query('INSERT INTO doc_versions (space, key, version, hash, content_type, updated_at, value) VALUES (?, ?, ?, ?, ?, ?, ?)')
  const point = old.query('INSERT OR REPLACE INTO doc_current (space, key, version_id) VALUES (?, ?, ?)')
  // Two keys' versions interleaved (ids do not follow one key), and a deleted key's leftover row.
  for (let v = 1; v <= 130; v++)
    for (const [space, key] of [['state', 'a'], ['spec:shop', 'api']]) {
      const id = version.run(space, key, v, `h${v}`, 'application/json', '2026-01-01T00:00:00.000Z', new TextEncoder().encode(`{"${key}":${v}}`)).lastInsertRowid
      point.run(space, key, Number(id))
    }
  version.run('state', 'gone', 1, 'h', 'application/json', '2026-01-01T00:00:00.000Z', new TextEncoder().encode('{}'))
  old.close()

  const store = openStore(sub)
  try {
    const text = (d: { value: Uint8Array } | null) => d && new TextDecoder().decode(d.value)
    for (const v of [1, 63, 64, 65, 128, 129, 130]) {
      expect(text(await store.state.getVersion('a', v))).toBe(`{"a":${v}}`)
      expect(text(await store.specs.getVersion('shop', 'api', v))).toBe(`{"api":${v}}`)
    }
    expect((await store.state.history('a', 200))!.map((h) => h.version)).toEqual(Array.from({ length: 130 }, (_, i) => 130 - i))
    expect(await store.state.get('gone')).toBeNull()
    const meta = await store.write((tx) => tx.state.put('gone', new TextEncoder().encode('{"new":1}'), 'application/json'))
    expect(meta.version).toBe(1)
    expect((await store.state.history('gone', 10))!.map((h) => h.version)).toEqual([1])
    expect((await store.write((tx) => tx.state.put('a', new TextEncoder().encode('{"a":131}'), 'application/json'))).version).toBe(131)
    expect(text(await store.state.getVersion('a', 129))).toBe('{"a":129}')
  } finally {
    store.close()
  }
})

/**
 * A table whose times rise with ids after its time index goes (`marker`): rows stamped by a clock
 * that stepped back (minutes 1, 2, 3, then 1 twice, then 4) take the newest earlier time, time
 * windows stay exact, and a new row goes on from the newest time, whatever the clock says.
 */
function risesWithIds(what: string, marker: string, insertSql: string, t: {
  list: (store: ReturnType<typeof openStore>, from?: string, to?: string) => Promise<{ id: number; time: string }[]>
  append: (store: ReturnType<typeof openStore>) => Promise<string>
  more?: (store: ReturnType<typeof openStore>) => Promise<void>
}) {
  test.skipIf(onPostgres)(`${what} stamped by a clock that stepped back rise with their ids after the time index goes, and time windows stay exact`, async () => {
    const sub = join(dir, marker.replace(/\W+/g, '-'))
    const old = schemaBefore(sub, marker)
    const insert = old.query(insertSql)
    for (const minute of [1, 2, 3, 1, 1, 4]) insert.run(`2026-01-01T00:0${minute}:00.000Z`)
    old.close()

    const store = openStore(sub)
    try {
      expect((await t.list(store)).map((e) => [e.id, e.time.slice(14, 16)])).toEqual([[6, '04'], [5, '03'], [4, '03'], [3, '03'], [2, '02'], [1, '01']])
      const ids = async (from?: string, to?: string) => (await t.list(store, from, to)).map((e) => e.id)
      expect(await ids('2026-01-01T00:03:00.000Z', '2026-01-01T00:03:00.000Z')).toEqual([5, 4, 3])
      expect(await ids(undefined, '2026-01-01T00:02:30.000Z')).toEqual([2, 1])
      expect(await ids('2026-01-01T00:01:30.000Z')).toEqual([6, 5, 4, 3, 2])
      await t.more?.(store)
      expect((await t.append(store)) >= '2026-01-01T00:04:00.000Z').toBe(true)
    } finally {
      store.close()
    }
  })
}

risesWithIds('events', 'DROP INDEX events_created', "INSERT INTO events (topic, data, source, created_at) VALUES ('t.x', 'null', '', ?)", {
  list: async (store, from, to) => (await store.events.query({ from, to, limit: 10 })).map((e) => ({ id: e.id, time: e.created_at })),
  append: async (store) => (await store.write(async (tx) => await tx.emit('t.x', null, ''))).created_at,
})

risesWithIds('audit entries', 'DROP INDEX audit_timestamp', "INSERT INTO audit (timestamp, actor, action, resource, detail, outcome) VALUES (?, 'a', 'x.y', 'r', '', 'success')", {
  list: async (store, from, to) => (await store.audit.list({ from, to, limit: 10 })).map((e) => ({ id: e.id, time: e.timestamp })),
  append: async (store) => {
    await store.write((tx) => tx.audit.append({ actor: 'a', action: 'x.y', resource: 'r', detail: '', outcome: 'success' }))
    return (await store.audit.list({ limit: 1 }))[0].timestamp
  },
  more: async (store) => expect((await store.audit.summary('2026-01-01T00:03:00.000Z')).total_entries).toBe(4),
})

test.skipIf(onPostgres)('messages indexed by the old trigger are found after the word index takes batches, and so are new ones', async () => {
  const sub = join(dir, 'words')
  const old = schemaBefore(sub, 'messages_fts_through')
  const insert = old.query(
    `INSERT INTO messages (from_name, recipients, broadcast, subject, body, thread, importance, ack_required, created_at)
     VALUES ('human', '["dev"]', 0, ?, 'before the migration', '1', 'normal', 0, '2026-01-01T00:00:00.000Z')`,
  )
  for (const subject of ['old alpha', 'old beta']) insert.run(subject)
  old.close()

  const store = openStore(sub)
  try {
    const words = async (...w: string[]) => (await store.messages.list({ words: w, limit: 10 })).map((m) => m.subject)
    // The trigger indexed these: no batch is needed to find them.
    expect(await words('old')).toEqual(['old beta', 'old alpha'])
    await store.write((tx) =>
      tx.messages.insert({
        from: 'human', from_instance_id: null, to: ['dev'], subject: 'new alpha', body: 'after', thread: null, reply_to: null,
        importance: 'normal', ack_required: false, ack_within_ms: null, created_at: '2026-01-02T00:00:00.000Z',
      }),
    )
    expect(store.messages.wordsBehind()).toBe(true)
    await store.write((tx) => tx.messages.indexWords())
    expect(store.messages.wordsBehind()).toBe(false)
    expect(await words('alpha')).toEqual(['new alpha', 'old alpha'])
  } finally {
    store.close()
  }
})

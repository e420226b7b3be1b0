// The naive key/value server issue 16 measures Muster against ("a naive Bun + bun:sqlite KV"):
// one row per key (INSERT OR REPLACE), SQLite's own settings for a WAL database (its
// autocheckpoint inline in a COMMIT), writes of one event-loop turn in one transaction and
// each answered after its COMMIT, as Muster acknowledges them; a GET is one SELECT. No
// versions, history, event, audit, validation, ETag, cache or checkpointer thread. bench/state.ts
// runs it beside Muster so a run shows what the runtime and SQLite give a write with nothing
// on top, on the same machine and load.
// Usage: bun bench/kv.ts <data dir>; prints "kv on <url>," when listening.
import { Database } from 'bun:sqlite'
import { join } from 'node:path'
import { pathOf } from '../http/url'
import { serveReference } from './reference'

const db = new Database(join(process.argv[2], 'kv.db'))
db.exec('PRAGMA journal_mode = WAL')
db.exec('PRAGMA synchronous = NORMAL')
db.exec('CREATE TABLE IF NOT EXISTS kv (key TEXT PRIMARY KEY, value BLOB NOT NULL) WITHOUT ROWID')
const put = db.prepare('INSERT OR REPLACE INTO kv (key, value) VALUES (?, ?)')
const get = db.prepare<{ value: Uint8Array<ArrayBuffer> }, [string]>('SELECT value FROM kv WHERE key = ?')
const [begin, commit] = [db.prepare('BEGIN IMMEDIATE'), db.prepare('COMMIT')]

/** Writes of this event-loop turn, answered once their COMMIT is done. */
let acks: (() => void)[] = []
function write(key: string, value: Uint8Array): Promise<void> {
  if (!acks.length) {
    begin.run()
    setImmediate(() => {
      commit.run()
      const done = acks
      acks = []
      for (const ack of done) ack()
    })
  }
  put.run(key, value)
  return new Promise((resolve) => acks.push(resolve))
}

// The key from the URL's path, as the floor takes it, without Muster's key checks.
const keyOf = (url: string) => decodeURIComponent(pathOf(url).slice('/api/state/'.length))

serveReference('kv', {
  GET: (request) => {
    const row = get.get(keyOf(request.url))
    return row ? new Response(row.value, { headers: { 'content-type': 'application/json' } }) : new Response('key not found', { status: 404 })
  },
  PUT: async (request) => {
    const key = keyOf(request.url)
    await write(key, new Uint8Array(await request.arrayBuffer()))
    return Response.json({ key })
  },
})

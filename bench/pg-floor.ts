// The floor of a state PUT on PostgreSQL (bench/pg-state.ts): a bare Bun.serve whose
// PUT /api/state/<key> runs, in one transaction on a pool as large as Muster's, the rows
// Muster's PUT writes (the current version read, the new version and its pointer, the
// event with the next gapless id, the audit entry), one client-library call per
// statement, at PostgreSQL's default durability. No group commit, no cluster-wide
// lock, no HTTP framework: what Bun and PostgreSQL give these rows with nothing on top.
// Writers of one key queue on its row (FOR UPDATE), as Muster's units queue on its lock.
// With --sequence, event ids come from a sequence instead (gaps, no commit order): no
// transaction waits for another's COMMIT, which shows what the gapless counter costs.
// Run: bun bench/pg-floor.ts <database url> [--sequence] (prints `pg-floor on <url>,` when ready).
import { SQL } from 'bun'
import { connect, migrate } from '../store/pg/db'

const sql: SQL = connect(process.argv[2])
await migrate(sql)
const sequence = process.argv.includes('--sequence')
if (sequence) await sql.unsafe('CREATE SEQUENCE IF NOT EXISTS floor_events START 1000000000')

const META = 'SELECT v.version FROM doc_current c JOIN doc_versions v ON v.id = c.version_id WHERE c.space = $1 AND c.key = $2 FOR UPDATE OF c'
const MAX = 'SELECT MAX(version) AS v FROM doc_versions WHERE space = $1 AND key = $2'
const APPEND = `WITH v AS (INSERT INTO doc_versions (space, key, version, hash, content_type, updated_at, value)
  VALUES ($1, $2, $3, $4, $5, $6, $7) RETURNING id)
  INSERT INTO doc_current (space, key, version_id) SELECT $1, $2, id FROM v
  ON CONFLICT (space, key) DO UPDATE SET version_id = excluded.version_id`
const EVENT = `WITH n AS (UPDATE event_counter SET value = value + 1 WHERE id = 1 RETURNING value),
  e AS (INSERT INTO events (id, topic, data, source, created_at, echo) SELECT value, $1, $2, $3, $4, 0 FROM n RETURNING id)
  SELECT e.id, pg_notify('muster_events', e.id::text) FROM e`
const EVENT_SEQUENCE = `INSERT INTO events (id, topic, data, source, created_at, echo)
  VALUES (nextval('floor_events'), $1, $2, $3, $4, 0) RETURNING id`
const AUDIT = 'INSERT INTO audit (timestamp, actor, action, resource, detail, outcome) VALUES ($1, $2, $3, $4, $5, $6)'

async function put(key: string, value: Uint8Array, contentType: string) {
  return sql.begin(async (tx) => {
    const [cur] = await tx.unsafe(META, ['state', key])
    const version = cur ? Number(cur.version) + 1 : Number((await tx.unsafe(MAX, ['state', key]))[0]?.v ?? 0) + 1
    const meta = { key, version, hash: Bun.SHA256.hash(value, 'hex') as string, content_type: contentType, updated_at: new Date().toISOString() }
    await tx.unsafe(APPEND, ['state', key, version, meta.hash, contentType, meta.updated_at, value])
    await tx.unsafe(sequence ? EVENT_SEQUENCE : EVENT, ['state.changed', JSON.stringify({ key, version, hash: meta.hash, operation: 'put' }), 'state', meta.updated_at])
    await tx.unsafe(AUDIT, [meta.updated_at, 'anonymous', 'state.put', `state/${key}`, `version ${version}`, 'success'])
    return meta
  })
}

const PREFIX = '/api/state/'
const server = Bun.serve({
  hostname: '127.0.0.1',
  port: 0,
  async fetch(req) {
    const path = new URL(req.url).pathname
    if (req.method !== 'PUT' || !path.startsWith(PREFIX)) return new Response('not found', { status: 404 })
    const value = new Uint8Array(await req.arrayBuffer())
    return Response.json(await put(decodeURIComponent(path.slice(PREFIX.length)), value, req.headers.get('content-type') ?? 'application/octet-stream'))
  },
})
console.log(`pg-floor on http://127.0.0.1:${server.port},`)

// PostgreSQL plans after a bulk load: a generic plan made while the tables were empty scans
// them, and it is kept until their statistics change. The server's leader analyzes a table
// that grew (store/pg/statistics.ts), which makes every session plan the statement anew:
// here a session of the test's own, holding the plans the server's sessions would hold.
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { SQL } from 'bun'
import { startApp, type InProcessServer } from './helpers'
import { databaseFor, onPostgres } from './pg'
import { INBOX_READS } from '../store/messages'
import { indexStatements, nearStatement } from '../store/reservations'
import { PG } from '../store/pg/runner'
import { toPg } from '../store/pg/db'

const MESSAGES = 20_000
const HELD = 10_000
const LOADED = ['messages', 'message_receipts', 'reservations', 'reservation_paths', 'instances', 'hook_sessions']

const literal = (v: unknown) => (typeof v === 'number' ? String(v) : `'${String(v).replaceAll("'", "''")}'`)

describe.skipIf(!onPostgres)('plans of the hook path and inbox reads after a bulk load (PostgreSQL)', () => {
  let server: InProcessServer
  let sql: SQL
  // name -> EXECUTE text with its arguments, under a generic plan.
  const plans: Record<string, string> = {}

  beforeAll(async () => {
    server = await startApp()
    sql = new SQL({ url: await databaseFor(server.dataDir), max: 1 })
    // Only the server's statistics keeping may refresh them here, not an autovacuum that happens to come by.
    for (const t of LOADED) await sql.unsafe(`ALTER TABLE ${t} SET (autovacuum_enabled = false)`)
    // A young server's tables: a few rows, analyzed (as autovacuum does after 50 changes).
    await load(1, 20, 20)
    for (const t of LOADED) await sql.unsafe(`ANALYZE ${t}`)
    await sql.unsafe('SET plan_cache_mode = force_generic_plan')
    const prepare = async (name: string, text: string, args: unknown[]) => {
      await sql.unsafe(`PREPARE ${name} AS ${toPg(text)}`)
      plans[name] = `EXECUTE ${name}(${args.map(literal).join(', ')})`
    }
    const inbox = { name: 'reader-7', after: 0, limit: 50, session: 's-7' }
    await prepare('inbox', INBOX_READS.INBOX.s.sql, INBOX_READS.INBOX.args(inbox))
    await prepare('unshown', INBOX_READS.UNSHOWN.s.sql, INBOX_READS.UNSHOWN.args(inbox))
    await prepare('near', nearStatement(PG, 4, 1).sql, ['big', 'src/a.ts', 'src', 'src/b.ts', 'src/b.ts', 'big', 'src/mod7/', 'src/mod70'])
    await prepare('release', indexStatements(PG).dropInstance.sql, ['i-7'])
    await prepare('instance', 'SELECT id, name, status FROM instances WHERE id = ?', ['i-7'])
    await prepare('session', 'SELECT session_id, instance_id, name FROM hook_sessions WHERE session_id = ?', ['s-7'])
  })

  afterAll(async () => {
    await sql?.close()
    await server?.cleanup()
  })

  /** Rows `from` to `messages` (of messages, with their receipts) and to `held` (of the others) into LOADED, as a bulk load would. */
  const load = async (from: number, messages: number, held: number) => {
    await sql.unsafe(`INSERT INTO messages (from_name, recipients, broadcast, subject, body, thread, importance, ack_required, created_at)
      SELECT 'reader-' || ((i + 1) % 100), CASE WHEN i % 100 = 99 THEN '["*"]' ELSE '["reader-' || (i % 100) || '"]' END,
        CASE WHEN i % 100 = 99 THEN 1 ELSE 0 END, 'subject ' || i, 'body ' || i, i::text, 'normal', 0, '2026-01-01T00:00:00Z'
      FROM generate_series(${from}, ${messages}) i`)
    await sql.unsafe(`INSERT INTO message_receipts (name, message_id) SELECT 'reader-' || (m.id % 100), m.id FROM messages m WHERE m.broadcast = 0
      ON CONFLICT DO NOTHING`)
    await sql.unsafe(`INSERT INTO reservations (id, project, instance_id, paths, exclusive, fence, created_at)
      SELECT 'r-' || i, 'big', 'i-' || (i % 50), '["src/mod' || (i % 500) || '/file' || i || '.ts"]', 1, i, '2026-01-01T00:00:00Z'
      FROM generate_series(${from}, ${held}) i`)
    await sql.unsafe(`INSERT INTO reservation_paths (project, prefix, reservation_id) SELECT 'big', 'src/mod' || (i % 500) || '/file' || i || '.ts', 'r-' || i
      FROM generate_series(${from}, ${held}) i`)
    await sql.unsafe(`INSERT INTO instances (id, name, status, registered_at, last_seen, token_hash)
      SELECT 'i-' || i, 'agent-' || i, 'active', '2026-01-01T00:00:00Z', '2026-01-01T00:00:00Z', 'h-' || i FROM generate_series(${from}, ${held}) i`)
    await sql.unsafe(`INSERT INTO hook_sessions (session_id, agent, instance_id, name, token, root, project, started_at)
      SELECT 's-' || i, 'claude-code', 'i-' || i, 'agent-' || i, 't', '/repo', 'big', '2026-01-01T00:00:00Z' FROM generate_series(${from}, ${held}) i`)
  }

  /** The tables of LOADED that any of the plans scans. */
  const scanned = async () => {
    const found = new Set<string>()
    for (const execute of Object.values(plans)) {
      for (const row of await sql.unsafe(`EXPLAIN ${execute}`)) {
        const m = /Seq Scan on (\w+)/.exec(row['QUERY PLAN'])
        if (m && LOADED.includes(m[1]!)) found.add(m[1]!)
      }
    }
    return [...found].sort()
  }

  test('plans made on nearly empty tables are made anew once the tables are loaded', async () => {
    // The premise: on nearly empty tables the generic plans scan (and are kept for this session).
    expect(await scanned()).toEqual([...LOADED].sort())

    await load(21, MESSAGES, HELD)

    // Within a few of the server's looks at the tables, no plan scans a loaded table any more.
    let left = await scanned()
    for (const until = Date.now() + 20_000; left.length && Date.now() < until; left = await scanned()) await Bun.sleep(500)
    expect(left).toEqual([])
  }, 60_000)
})

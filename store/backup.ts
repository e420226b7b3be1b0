// Backup and restore of the whole database file. The heavy reads (VACUUM INTO for
// a snapshot, integrity_check of an uploaded file) run on a read-only connection
// in a worker thread, so the server keeps serving, and writing, meanwhile.
import { Database } from 'bun:sqlite'
import { copyFileSync, linkSync, readdirSync, renameSync, rmSync } from 'node:fs'
import { basename, dirname, join } from 'node:path'
import { invalid } from '../lib/errors'
import { MIGRATIONS, SCHEMA_VERSION, openDatabase } from './sqlite/db'

/** Kept beside the live file after a restore: the database as it was just before (a one-step undo). */
export const PRE_RESTORE_SUFFIX = '.pre-restore'
const TEMP_PREFIX = '.muster-tmp-'

/** A fresh temp path in the data dir: the same filesystem as the live file, so swapping in is a rename. */
export function tempPath(dataDir: string, kind: 'backup' | 'restore'): string {
  return join(dataDir, `${TEMP_PREFIX}${kind}-${crypto.randomUUID()}.db`)
}

/** Removes a temp database and any journal files SQLite left beside it. */
export function removeTemp(file: string): void {
  for (const f of [file, `${file}-wal`, `${file}-shm`, `${file}-journal`]) rmSync(f, { force: true })
}

/** Temp files left by a run that died mid-backup or mid-upload. */
export function removeStaleTemps(dataDir: string): void {
  for (const name of readdirSync(dataDir)) if (name.startsWith(TEMP_PREFIX)) rmSync(join(dataDir, name), { force: true })
}

// ---- read-only queries in a worker ---------------------------------------------

// Inlined (a Blob URL) so that it also runs from a `bun build --compile` binary.
const WORKER_SOURCE = `
import { Database } from 'bun:sqlite'
self.onmessage = (e) => {
  const { file, steps, writable } = e.data
  let db
  try {
    db = new Database(file, { readonly: !writable })
    db.exec('PRAGMA busy_timeout = 5000')
    postMessage({ ok: true, results: steps.map((s) => db.query(s.sql).all(...s.args)) })
  } catch (err) {
    postMessage({ ok: false, error: String((err && err.message) || err) })
  } finally {
    try { db && db.close() } catch {}
  }
}`
let workerUrl: string | null = null

class QueryFailed extends Error {}

/** Runs statements on a connection to `file` (read-only unless `writable`) in a worker thread. */
async function offThread(file: string, steps: { sql: string; args?: string[] }[], opts: { writable?: boolean } = {}): Promise<any[][]> {
  workerUrl ??= URL.createObjectURL(new Blob([WORKER_SOURCE], { type: 'application/javascript' }))
  const worker = new Worker(workerUrl)
  try {
    const reply = await new Promise<{ ok: boolean; results?: any[][]; error?: string }>((resolve, reject) => {
      worker.onmessage = (e) => resolve(e.data)
      worker.onerror = (e) => reject(new Error(`database worker failed: ${e.message}`))
      worker.postMessage({ file, writable: opts.writable ?? false, steps: steps.map((s) => ({ sql: s.sql, args: s.args ?? [] })) })
    })
    if (!reply.ok) throw new QueryFailed(reply.error)
    return reply.results!
  } finally {
    worker.terminate()
  }
}

/**
 * Writes a consistent copy of the database at `source` into the new file `target`
 * (SQLite VACUUM INTO: one read transaction, so exactly the commits made before it began).
 */
export async function snapshot(source: string, target: string): Promise<void> {
  try {
    await offThread(source, [{ sql: 'VACUUM INTO ?', args: [target] }])
  } catch (err) {
    removeTemp(target)
    throw new Error(`backup failed: ${(err as Error).message}`)
  }
}

// ---- checking a candidate --------------------------------------------------------

// Everything the schema consists of, as SQLite stores it: a table that lost a key
// or gained a column, a missing index, a trigger or a view all show here.
const SCHEMA_SQL = `SELECT type, name, tbl_name, sql FROM sqlite_master
  WHERE name NOT LIKE 'sqlite_%' ORDER BY rowid`
type SchemaRow = { type: string; name: string; tbl_name: string; sql: string | null }
const describe = (r: SchemaRow) => `${r.type} ${r.name}`

let expected: Map<string, string | null> | null = null
/** The schema a freshly migrated database of this build has. */
function expectedSchema(): Map<string, string | null> {
  if (expected) return expected
  const db = new Database(':memory:')
  for (const m of MIGRATIONS) db.exec(m)
  expected = new Map(db.query<SchemaRow, []>(SCHEMA_SQL).all().map((r) => [describe(r), r.sql]))
  db.close()
  return expected
}

/** What differs between `rows` and this build's schema, for the 400 message. */
function schemaProblem(rows: SchemaRow[]): string | null {
  const want = expectedSchema()
  const have = new Map(rows.map((r) => [describe(r), r.sql]))
  for (const name of want.keys()) if (!have.has(name)) return `${name} is missing`
  for (const [name, sql] of have) {
    if (!want.has(name)) return `${name} is not part of this build's schema`
    if (want.get(name) !== sql) return `${name} differs from this build's schema`
  }
  return null
}

// One write per kind of row the server writes first after a restore, rolled back:
// proves the file opens read-write and takes writes before it replaces anything.
const SMOKE: { sql: string; args?: string[] }[] = [
  { sql: 'BEGIN IMMEDIATE' },
  { sql: `INSERT INTO doc_versions (space, key, version, hash, content_type, updated_at, value) VALUES ('smoke', 'smoke', 1, '', '', '', x'')` },
  { sql: `INSERT INTO doc_current (space, key, version_id) VALUES ('smoke', 'smoke', last_insert_rowid())` },
  { sql: `INSERT INTO audit (timestamp, actor, action, resource, detail, outcome) VALUES ('', '', 'smoke', '', '', '')` },
  { sql: `SELECT count(*) AS n FROM doc_current c JOIN doc_versions v ON v.id = c.version_id WHERE c.space = 'smoke'` },
  { sql: 'ROLLBACK' },
]

/** Throws invalid (400) unless `file` is a sound Muster database of this build's schema version. */
export async function checkBackup(file: string): Promise<void> {
  let integrity: { integrity_check: string }[], version: { user_version: number }[], schema: SchemaRow[]
  try {
    ;[integrity, version, schema] = await offThread(file, [
      { sql: 'PRAGMA integrity_check(5)' },
      { sql: 'PRAGMA user_version' },
      { sql: SCHEMA_SQL },
    ])
    const problems = integrity.map((r) => r.integrity_check).filter((m) => m !== 'ok')
    if (problems.length) throw invalid(`backup is damaged (integrity check failed): ${problems.join('; ')}`)
    const v = version[0]?.user_version ?? 0
    if (v !== SCHEMA_VERSION) throw invalid(`not a Muster backup of this version: schema version ${v}, this server uses ${SCHEMA_VERSION}`)
    const problem = schemaProblem(schema)
    if (problem) throw invalid(`not a Muster backup: ${problem}`)
    const smoke = await offThread(file, SMOKE, { writable: true })
    if (smoke[4]?.[0]?.n !== 1) throw invalid('not a usable Muster backup: a trial write did not read back')
  } catch (err) {
    if (err instanceof QueryFailed) throw invalid(`not a Muster backup: ${err.message}`)
    throw err
  } finally {
    for (const ext of ['-wal', '-shm', '-journal']) rmSync(file + ext, { force: true })
  }
}

// ---- swapping it in ----------------------------------------------------------------

/** The swap failed after the live database was closed; `db` is the old database, reopened. */
export class SwapFailed extends Error {
  constructor(
    readonly db: Database,
    readonly reason: unknown,
  ) {
    super(`restore failed, previous database kept: ${(reason as Error)?.message ?? reason}`)
  }
}

/**
 * Closes `live` (the database at `dbPath`), moves the checked `file` over it and
 * opens the result. The old file stays as `<db>.pre-restore`. Synchronous from the
 * close to the reopen, so no request ever sees a closed database. If anything fails
 * after the close, the old file is put back and SwapFailed carries it reopened.
 */
export function swapIn(live: Database, dbPath: string, file: string): Database {
  const [dir, name] = [dirname(dbPath), basename(dbPath)]
  live.exec('PRAGMA wal_checkpoint(TRUNCATE)')
  live.close(true)
  const keep = dbPath + PRE_RESTORE_SUFFIX
  let moved = false
  try {
    rmSync(keep, { force: true })
    try {
      linkSync(dbPath, keep)
    } catch {
      copyFileSync(dbPath, keep)
    }
    // Closing the last connection checkpointed and removed the WAL; anything left belongs to the old file.
    for (const ext of ['-wal', '-shm']) rmSync(dbPath + ext, { force: true })
    renameSync(file, dbPath)
    moved = true
    return openDatabase(dir, name)
  } catch (err) {
    if (moved) {
      for (const ext of ['-wal', '-shm']) rmSync(dbPath + ext, { force: true })
      copyFileSync(keep, dbPath)
    }
    throw new SwapFailed(openDatabase(dir, name), err)
  }
}

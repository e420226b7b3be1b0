// PostgreSQL for the test suite. `npm test` (test/run.ts) starts a throwaway cluster
// and runs the suite a second time with MUSTER_TEST_PG set to its base URL (only the
// files that can reach it: testsWithoutPostgres); then every server the tests start
// gets a database of its own, named after its data dir (a server restarted on the
// same data dir finds its data again, as on SQLite).
import { SQL } from 'bun'
import { createHash } from 'node:crypto'
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync, chownSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { q } from '../store/pg/db'

/** The cluster's base URL when this run is the PostgreSQL one, else null. */
export const PG_BASE = process.env.MUSTER_TEST_PG || null

/** This is the PostgreSQL run: tests about the embedded SQLite file itself (its files in the data dir) skip with `test.skipIf(onPostgres)`. */
export const onPostgres = PG_BASE !== null

const created = new Set<string>()

/** The database URL for the server on `dataDir`, created on first use. */
export async function databaseFor(dataDir: string): Promise<string> {
  const name = `muster_${createHash('sha256').update(dataDir).digest('hex').slice(0, 16)}`
  if (!created.has(name)) {
    const admin = new SQL(`${PG_BASE}/postgres`)
    try {
      const [row] = await admin.unsafe('SELECT 1 AS one FROM pg_database WHERE datname = $1', [name])
      // A linguistic default collation ('_' before 'a' before 'B'), as many real databases have, so the
      // suite proves the schema's COLLATE "C" keeps SQLite's byte order whatever the database's default.
      if (!row) await admin.unsafe(`CREATE DATABASE ${name} TEMPLATE template0 LOCALE_PROVIDER icu ICU_LOCALE 'en-US' LOCALE 'C.UTF-8'`)
    } finally {
      await admin.close()
    }
    created.add(name)
  }
  return `${PG_BASE}/${name}`
}

/** The server arguments that put a test server on PostgreSQL in the PostgreSQL run (none otherwise). */
export async function databaseArgs(dataDir: string, args: string[]): Promise<string[]> {
  if (!PG_BASE || args.includes('--database')) return []
  return ['--database', await databaseFor(dataDir)]
}

// ---- the throwaway cluster ----------------------------------------------------------

/** initdb and pg_ctl of the newest installed PostgreSQL (Debian's layout), or null. */
export function pgBinaries(): { initdb: string; pgCtl: string } | null {
  const root = '/usr/lib/postgresql'
  if (!existsSync(root)) return null
  for (const v of readdirSync(root).sort((a, b) => Number(b) - Number(a))) {
    const bin = join(root, v, 'bin')
    if (existsSync(join(bin, 'initdb')) && existsSync(join(bin, 'pg_ctl'))) return { initdb: join(bin, 'initdb'), pgCtl: join(bin, 'pg_ctl') }
  }
  return null
}

export interface Cluster {
  url: string
  stop(): Promise<void>
  /** Stops PostgreSQL at once (as a crash would: without `durable`, its last commits may be lost), keeping its data dir: an outage, until up(). */
  down(): Promise<void>
  /** Starts it again on the same port and data. */
  up(): Promise<void>
}

/** Runs a command as the `postgres` user when we are root (PostgreSQL refuses to run as root). */
function asPostgres(cmd: string[]): string[] {
  return process.getuid?.() === 0 ? ['su', 'postgres', '-s', '/bin/sh', '-c', cmd.map((a) => `'${a.replace(/'/g, `'\\''`)}'`).join(' ')] : cmd
}

async function run(cmd: string[]): Promise<void> {
  const proc = Bun.spawn(asPostgres(cmd), { stdout: 'pipe', stderr: 'pipe' })
  if ((await proc.exited) !== 0) throw new Error(`${cmd[0]} failed: ${await new Response(proc.stderr).text()}`)
}

/** A fresh cluster in a temp dir on a free port, trust auth on 127.0.0.1 only. */
export async function startCluster(bins: { initdb: string; pgCtl: string }, opts: { durable?: boolean } = {}): Promise<Cluster> {
  const dir = mkdtempSync(join(tmpdir(), 'muster-pg-'))
  if (process.getuid?.() === 0) {
    const pwd = Bun.spawnSync(['id', '-u', 'postgres']).stdout.toString().trim()
    const gid = Bun.spawnSync(['id', '-g', 'postgres']).stdout.toString().trim()
    chownSync(dir, Number(pwd), Number(gid))
  }
  const data = join(dir, 'data')
  const port = freePort()
  await run([bins.initdb, '-D', data, '-U', 'postgres', '--auth=trust', '-E', 'UTF8', '--locale=C.UTF-8', '--no-sync'])
  // The suite kills Muster processes, never PostgreSQL: a commit PostgreSQL acknowledged survives that
  // without an fsync, so the throwaway cluster skips them to keep the run short. Benchmarks, and tests
  // that stop PostgreSQL itself, ask for `durable`: PostgreSQL's defaults, as in production.
  const fast = opts.durable ? '' : ' -c fsync=off -c synchronous_commit=off -c full_page_writes=off'
  const flags = `-p ${port} -k ${dir} -c listen_addresses=127.0.0.1 -c max_connections=400 -c shared_buffers=64MB${fast}`
  const up = () => run([bins.pgCtl, '-D', data, '-o', flags, '-l', join(dir, 'log'), '-w', 'start'])
  const down = () => run([bins.pgCtl, '-D', data, '-m', 'immediate', 'stop'])
  await up()
  return {
    url: `postgres://postgres@127.0.0.1:${port}`,
    down,
    up,
    async stop() {
      await down().catch(() => {})
      rmSync(dir, { recursive: true, force: true })
    },
  }
}

/** A free TCP port on 127.0.0.1, for servers that cannot take port 0 and report it (PostgreSQL, etcd). */
export function freePort(): number {
  const server = Bun.listen({ hostname: '127.0.0.1', port: 0, socket: { data() {} } })
  const port = server.port
  server.stop(true)
  return port
}

/**
 * Runs one statement on the database of the server on `dataDir`, behind the
 * server's back (to set up a state no API call makes, or to check what is stored):
 * the SQLite file, or in the PostgreSQL run that server's database. `?` placeholders.
 */
export async function rawQuery<Row = Record<string, unknown>>(dataDir: string, text: string, ...args: unknown[]): Promise<Row[]> {
  if (!PG_BASE) {
    const { Database } = await import('bun:sqlite')
    const db = new Database(join(dataDir, 'muster.db'))
    try {
      db.exec('PRAGMA busy_timeout = 5000')
      return db.query(text).all(...(args as never[])) as Row[]
    } finally {
      db.close()
    }
  }
  const sql = new SQL(await databaseFor(dataDir))
  try {
    return await q<Row>(text).all(sql, ...args)
  } finally {
    await sql.close()
  }
}

// ---- which test files the PostgreSQL run repeats ------------------------------------

/**
 * How a test reaches PostgreSQL in the PostgreSQL run: a server (startServer and startApp
 * give it a database through databaseArgs), a raw query, or the cluster's URL. A file that
 * names none of these, itself or through a test/ module it imports, does exactly the same
 * in both runs: `npm test` runs it once. Only helpers.ts and pg.ts, where the names are
 * defined, do not count.
 */
const REACHES_DATABASE = /\b(startServer|startApp|rawQuery|databaseFor|databaseArgs|PG_BASE|onPostgres|MUSTER_TEST_PG)\b/
const DEFINES_THEM = new Set(['helpers.ts', 'pg.ts'])

/** The *.test.ts files in `dir` (names only, sorted) that never reach PostgreSQL, even in the PostgreSQL run. */
export function testsWithoutPostgres(dir: string): string[] {
  // The file and the test/ modules it imports, directly or not.
  const closure = (file: string, seen = new Set<string>()): Set<string> => {
    if (seen.has(file) || !existsSync(join(dir, file))) return seen
    seen.add(file)
    for (const m of readFileSync(join(dir, file), 'utf8').matchAll(/(?:from|import)\s*\(?\s*['"]\.\/([^'"]+?)(?:\.ts)?['"]/g)) closure(`${m[1]}.ts`, seen)
    return seen
  }
  const reaches = (file: string) => [...closure(file)].some((f) => !DEFINES_THEM.has(f) && REACHES_DATABASE.test(readFileSync(join(dir, f), 'utf8')))
  return readdirSync(dir)
    .filter((f) => f.endsWith('.test.ts') && !reaches(f))
    .sort()
}

// Operating the server: a debug log that stays quiet while nothing happens, a PostgreSQL
// start failure that says where it looked (never the password), and a --help that
// describes every flag with its env var and default.
import { afterAll, describe, expect, test } from 'bun:test'
import { readFileSync, rmSync } from 'node:fs'
import { join } from 'node:path'
import { call, eventually, register, startServer, tempDir } from './helpers'
import { freePort, PG_BASE } from './pg'
import { pgStartError } from '../store/pg/errors'

const APP = join(import.meta.dir, '..', 'app.ts')

/** Runs the server with `args` (on a data dir of its own) until it exits: its exit code and what it printed. */
async function runApp(args: string[]): Promise<{ code: number; stdout: string; stderr: string }> {
  const dataDir = tempDir()
  try {
    const proc = Bun.spawn([process.execPath, APP, '--data-dir', dataDir, '--bind', '127.0.0.1:0', '--dashboard-bind', '', ...args], { stdout: 'pipe', stderr: 'pipe' })
    const [code, stdout, stderr] = await Promise.all([proc.exited, new Response(proc.stdout).text(), new Response(proc.stderr).text()])
    return { code, stdout, stderr }
  } finally {
    rmSync(dataDir, { recursive: true, force: true })
  }
}

describe('job lines at --log-level debug', async () => {
  // Every job as often as it can run: an idle server would otherwise log some line a second.
  const fast = ['--liveness-interval', '200ms', '--prune-interval', '200ms', '--compliance-interval', '200ms']
  const s = await startServer({ args: ['--log-format', 'json', '--log-level', 'debug', ...fast] })
  afterAll(() => s.cleanup())
  const jobLines = () =>
    s
      .stdout()
      .trimEnd()
      .split('\n')
      .map((l) => JSON.parse(l))
      .filter((l) => 'job' in l)

  test('an idle server prints no job line in 2 s', async () => {
    await Bun.sleep(2_000)
    expect(jobLines()).toEqual([])
  })

  test('a run that did something prints one, with what it did', async () => {
    const a = await register(s, 'ops-holder')
    expect((await call(s.api, 'PUT', '/api/locks/ops-ttl', { ttl_ms: 1000 }, a.h)).status).toBe(200)
    const run = await eventually(() => jobLines().find((l) => l.job === 'expiry'), 4_000)
    expect(run.events).toBe(1)
    expect(run).toMatchObject({ level: 20, msg: 'job expiry ran' })
    // One pass released it; the passes after it found nothing and said nothing.
    await Bun.sleep(600)
    expect(jobLines().filter((l) => l.job === 'expiry')).toHaveLength(1)
  })
})

describe('a PostgreSQL start failure', () => {
  test('names host, port and database, and not the password', async () => {
    const port = freePort()
    const password = 'hunter2-secret'
    const { code, stdout } = await runApp(['--database', `postgres://muster:${password}@127.0.0.1:${port}/muster`])
    expect(code).toBe(1)
    expect(stdout).toContain(`ERROR muster-server: cannot start: cannot connect to PostgreSQL at 127.0.0.1:${port} (database muster): connection refused; `)
    expect(stdout).not.toContain(password)
    expect(stdout).not.toContain('Failed to connect')
  })

  test('a login PostgreSQL refuses is a connection error too, in its own words; a later failure says it was the schema', () => {
    const url = 'postgres://nobody:hunter2-secret@db.example:6543/shop'
    const refused = { name: 'PostgresError', code: 'ERR_POSTGRES_SERVER_ERROR', errno: '28000', message: 'role "nobody" does not exist' }
    expect(pgStartError(url, refused).message).toBe(
      'cannot connect to PostgreSQL at db.example:6543 (database shop): role "nobody" does not exist (28000); check the user, password and database in --database / SERVICE_DATABASE',
    )
    const denied = { name: 'PostgresError', code: 'ERR_POSTGRES_SERVER_ERROR', errno: '42501', message: 'permission denied for schema public' }
    expect(pgStartError(url, denied).message).toBe('cannot set up the schema in PostgreSQL at db.example:6543 (database shop): permission denied for schema public (42501)')
    // Should a message ever echo the password, it is blanked; no port and no database: PostgreSQL's defaults.
    expect(pgStartError('postgres://u:hunter2-secret@h', new Error('bad hunter2-secret')).message).toBe('cannot set up the schema in PostgreSQL at h:5432 (database u): bad ***')
  })

  test.skipIf(!PG_BASE)('a database that does not exist is named with the server that said so', async () => {
    const { code, stdout } = await runApp(['--database', `${PG_BASE}/muster_no_such_db`])
    expect(code).toBe(1)
    const where = new URL(PG_BASE!).host
    expect(stdout).toContain(`cannot connect to PostgreSQL at ${where} (database muster_no_such_db): database "muster_no_such_db" does not exist (3D000)`)
  })
})

describe('--help', () => {
  test('describes every flag: what it does, its env var and its default, in lines of at most 80 columns', async () => {
    const { code, stdout } = await runApp(['--help'])
    expect(code).toBe(0)
    const lines = stdout.trimEnd().split('\n')
    for (const line of lines) expect(line.length).toBeLessThanOrEqual(80)
    // The flags the parser knows, read from its table.
    const source = readFileSync(join(import.meta.dir, '..', 'lib', 'config.ts'), 'utf8')
    const flags = [...source.matchAll(/flag: '(--[a-z-]+)', env: '([A-Z_]+)'/g)].map((m) => ({ flag: m[1], env: m[2] }))
    expect(flags.length).toBeGreaterThanOrEqual(17)
    for (const { flag, env } of [...flags, { flag: '--version', env: null }, { flag: '--help', env: null }]) {
      const at = lines.findIndex((l) => l === `  ${flag}` || l.startsWith(`  ${flag} `))
      expect(at, `${flag} is listed`).toBeGreaterThan(0)
      // Below the flag: its description (at least one line), then its env var and default.
      const block: string[] = []
      for (let i = at + 1; i < lines.length && lines[i].startsWith('      '); i++) block.push(lines[i].trim())
      const description = env ? block.slice(0, -1) : block
      expect(description.join(' ').length, `${flag} has a description`).toBeGreaterThan(10)
      if (env) expect(block.at(-1)).toMatch(new RegExp(`^env ${env}, default \\S`))
    }
  })
})

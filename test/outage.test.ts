// A PostgreSQL outage is the database's, not a server bug: while the database is
// unreachable every route that needs it answers 503 {error, code} (code is the status,
// as in every error body: spec part 7) with Retry-After, on both ports; /health keeps
// the spec's 200; once the database is back, the same process serves again.
// The outage runs in the suite's PostgreSQL run only, on a cluster of its own (it stops
// it; the suite's shared cluster must keep running), and skips where PostgreSQL is not
// installed; which errors count as an outage needs no database and runs in the other
// run, so each part runs once.
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { SQL } from 'bun'
import { AppError } from '../lib/errors'
import { unavailableOr } from '../store/pg/db'
import { call, eventually, register, startServer, type Agent, type TestServer } from './helpers'
import { PG_BASE, pgBinaries, startCluster, type Cluster } from './pg'

describe.skipIf(PG_BASE !== null)('which PostgreSQL errors are an outage', () => {
  const pgError = (code: string, errno: string) => new SQL.PostgresError('boom', { code, errno: errno || undefined })
  test.each([
    ['ERR_POSTGRES_CONNECTION_REFUSED', ''],
    ['ERR_POSTGRES_CONNECTION_CLOSED', ''],
    ['ERR_POSTGRES_CONNECTION_TIMEOUT', ''],
    ['ERR_POSTGRES_SERVER_ERROR', '57P01'], // terminated by the administrator (a fast shutdown)
    ['ERR_POSTGRES_SERVER_ERROR', '57P03'], // still starting up
    ['ERR_POSTGRES_SERVER_ERROR', '08006'],
    ['ERR_POSTGRES_SERVER_ERROR', '53300'], // no connection slot left
  ])('%s %s is 503 unavailable, naming the error', (code, errno) => {
    const mapped = unavailableOr(pgError(code, errno))
    expect(mapped).toBeInstanceOf(AppError)
    expect((mapped as AppError).kind).toBe('unavailable')
    expect((mapped as AppError).message).toBe(`database unavailable: boom (${errno || code})`)
  })
  test.each([
    ['ERR_POSTGRES_SERVER_ERROR', '23505'], // a unique violation: a bug or a race, not an outage
    ['ERR_POSTGRES_SERVER_ERROR', '08P01'], // a protocol violation
    ['ERR_POSTGRES_SYNTAX_ERROR', ''],
  ])('%s %s is left as it is', (code, errno) => {
    const err = pgError(code, errno)
    expect(unavailableOr(err)).toBe(err)
  })
})

const bins = pgBinaries()
let cluster: Cluster
let server: TestServer
let agent: Agent

/** The requests of the outage: reads and writes of state, a lock, a listing. */
const requests = () =>
  [
    ['GET', '/api/state/outage-key', undefined, {}],
    ['PUT', '/api/state/outage-key', { v: 2 }, {}],
    ['PUT', '/api/locks/outage-lock', {}, agent.h],
    ['GET', '/api/instances', undefined, {}],
  ] as const

describe.skipIf(!PG_BASE || !bins)('a PostgreSQL outage', () => {
  beforeAll(async () => {
    // Durable: the outage stops PostgreSQL as a crash would, and what it acknowledged must be there after.
    cluster = await startCluster(bins!, { durable: true })
    // An explicit --database: the suite's own (databaseArgs) is not added.
    server = await startServer({ args: ['--database', `${cluster.url}/postgres`] })
    agent = await register(server, 'outage-agent')
    expect((await call(server.api, 'PUT', '/api/state/outage-key', { v: 1 })).status).toBe(200)
  }, 30_000)
  afterAll(async () => {
    await server?.cleanup()
    await cluster?.stop()
  })

  test('connections cut under Muster (terminated by the administrator) are answered 200 or 503, never 500', async () => {
    const admin = new SQL(`${cluster.url}/postgres`)
    try {
      for (let round = 0; round < 3; round++) {
        await admin.unsafe('SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE pid <> pg_backend_pid() AND datname = current_database()')
        for (const [method, path, body, headers] of requests()) {
          const r = await call(server.api, method, path, method === 'PUT' && path.includes('state') ? { v: 1 } : body, headers)
          expect({ route: `${method} ${path}`, ok: r.status === 200 || r.status === 503 }).toEqual({ route: `${method} ${path}`, ok: true })
          expect(r.body?.code ?? 200).toBe(r.status)
        }
      }
    } finally {
      await admin.close()
    }
  })

  test('PostgreSQL stops', () => cluster.down())

  for (const port of ['api', 'dashboard'] as const)
    test(`every route that needs the database answers 503 {error, code} with Retry-After (${port} port)`, async () => {
      for (const [method, path, body, headers] of requests()) {
        const r = await call(server[port], method, path, body, headers)
        expect({ route: `${method} ${path}`, status: r.status, code: r.body?.code }).toEqual({
          route: `${method} ${path}`,
          status: 503,
          code: 503,
        })
        expect(r.body.error).toStartWith('database unavailable')
        expect(r.headers.get('content-type')).toStartWith('application/json')
        expect(Number(r.headers.get('retry-after'))).toBeGreaterThan(0)
      }
    })

  test('/health keeps the spec answer, and the log names the outage without a stack per request', async () => {
    expect((await call(server.api, 'GET', '/health')).status).toBe(200)
    expect((await call(server.api, 'GET', '/livez')).status).toBe(200)
    const ready = await call(server.api, 'GET', '/readyz')
    expect([ready.status, ready.body.code]).toEqual([503, 503])
    expect(ready.body.error).toStartWith('not ready: database')
    expect(server.stdout()).toContain('database unavailable')
    expect(server.output()).not.toContain('internal error')
    expect(server.output()).not.toMatch(/\n\s+at /)
    // What no request waits for (audit entries, agent metrics, jobs) fails alike: warnings, and a job's only once.
    expect(server.stdout()).not.toMatch(/ERROR .*(audit append|agent metric count|implicit heartbeat|job \S+) failed/)
    expect(server.stdout().match(/WARN .*job expiry failed/g)?.length ?? 0).toBeLessThanOrEqual(1)
  })

  test('once the database is back, the same process serves again', async () => {
    await cluster.up()
    for (const port of ['api', 'dashboard'] as const) {
      await eventually(async () => (await call(server[port], 'GET', '/api/state/outage-key')).status === 200, 15_000, 100)
      for (const [method, path, body, headers] of requests()) expect((await call(server[port], method, path, body, headers)).status).toBe(200)
    }
    expect((await call(server.api, 'GET', '/api/state/outage-key')).body).toEqual({ v: 2 })
    expect((await call(server.api, 'GET', '/readyz')).status).toBe(200)
  }, 40_000)
})

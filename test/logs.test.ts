// The server log on stdout: `--log-format json` gives one JSON object per line in
// pino's own shape (level as pino's number, time, pid, hostname, fields, msg), an access
// line per request, and lines for auth failures, webhook failures, restores and job
// runs that did something; `pretty` (the default) one readable line per entry;
// `--log-level` filters.
import { afterAll, describe, expect, test } from 'bun:test'
import { join } from 'node:path'
import pino from 'pino'
import { call, eventually, register, startServer } from './helpers'

const TOKEN = 'log-token'
const auth = { authorization: `Bearer ${TOKEN}` }

type Line = { level: number; time: string; msg: string; [field: string]: unknown }

/** The keys of the line pino itself writes by default (with the server's ISO time) for `fields` and a message. */
function pinoKeys(fields: object): string[] {
  let line = ''
  pino({ timestamp: pino.stdTimeFunctions.isoTime }, { write: (l: string) => void (line = l) }).info(fields, 'm')
  return Object.keys(JSON.parse(line))
}

describe('--log-format json', async () => {
  const s = await startServer({ args: ['--auth-token', TOKEN, '--log-format', 'json', '--log-level', 'debug', '--liveness-interval', '200ms', '--stale-timeout', '1s'] })
  afterAll(() => s.cleanup())
  /** Every stdout line parsed as JSON: a line that is not JSON fails the test. */
  const lines = (): Line[] => s.stdout().trimEnd().split('\n').map((l) => JSON.parse(l))
  const accessLine = (method: string, path: string, status: number) =>
    eventually(() => lines().find((l) => l.method === method && l.path === path && l.status === status && 'duration_ms' in l))

  test("every line is JSON in pino's shape: level number, ISO time, pid, hostname, msg; the first says where the server listens", () => {
    for (const line of lines()) {
      expect(line.time).toMatch(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/)
      expect([20, 30, 40, 50]).toContain(line.level)
      expect(line).toMatchObject({ pid: s.proc.pid, hostname: expect.any(String), msg: expect.any(String) })
      expect(line).not.toHaveProperty('message')
    }
    expect(lines()[0]).toMatchObject({ level: 30, msg: expect.stringMatching(/^Muster API on http:\/\/127\.0\.0\.1:\d+, dashboard on /) })
  })

  test('the lines written without pino (listening, access) have the keys of pino\'s own, in its order', async () => {
    expect((await call(s.api, 'GET', '/api/state', undefined, auth)).status).toBe(200)
    const access = (await accessLine('GET', '/api/state', 200))!
    const { level, time, pid, hostname, msg, ...fields } = access
    expect(Object.keys(access)).toEqual(pinoKeys(fields))
    expect(Object.keys(lines()[0])).toEqual(pinoKeys({}))
    // And a line pino wrote in the server (fields and a message), for comparison.
    await call(s.api, 'GET', '/api/state', undefined, { authorization: 'Bearer nope' })
    const failure = (await eventually(() => lines().find((l) => l.msg === 'auth failure')))!
    const { level: _l, time: _t, pid: _p, hostname: _h, msg: _m, ...failureFields } = failure
    expect(Object.keys(failure)).toEqual(pinoKeys(failureFields))
  })

  test('one access line per request: method, route pattern, path, status, duration and actor', async () => {
    const agent = await register(s, 'logger', auth)
    expect((await call(s.api, 'PUT', '/api/state/logs/k', { a: 1 }, { ...auth, 'x-instance-token': agent.token })).status).toBe(200)
    expect((await call(s.api, 'GET', '/api/state/logs/missing', undefined, auth)).status).toBe(404)
    expect((await call(s.api, 'GET', '/api/nowhere', undefined, auth)).status).toBe(404)

    const put = (await accessLine('PUT', '/api/state/logs/k', 200))!
    expect(put).toMatchObject({ level: 30, route: '/api/state/*', actor: agent.id, msg: 'PUT /api/state/logs/k 200' })
    expect(put.duration_ms).toBeNumber()
    expect(await accessLine('GET', '/api/state/logs/missing', 404)).toMatchObject({ route: '/api/state/*', actor: 'admin' })
    expect(await accessLine('GET', '/api/nowhere', 404)).toMatchObject({ route: '(unmatched)' })
    const registrations = lines().filter((l) => l.path === '/api/instances/register' && 'duration_ms' in l)
    expect(registrations).toHaveLength(1)
  })

  test('an auth failure is a warn line (and its access line), without the token', async () => {
    expect((await call(s.api, 'GET', '/api/state', undefined, { authorization: 'Bearer wrong-secret' })).status).toBe(401)
    await accessLine('GET', '/api/state', 401)
    expect(lines().find((l) => l.msg === 'auth failure' && l.reason === 'wrong token')).toMatchObject({ level: 40, method: 'GET', path: '/api/state' })
    expect(s.stdout()).not.toContain('wrong-secret')
  })

  test('a failed webhook delivery is a warn line naming the webhook and the event', async () => {
    expect((await call(s.api, 'POST', '/api/webhooks', { id: 'nowhere', url: 'http://127.0.0.1:1/in', patterns: ['logs.*'] }, auth)).status).toBe(200)
    const event = (await call(s.api, 'POST', '/api/events/publish', { topic: 'logs.done', data: {} }, auth)).body
    // The first failed attempt (with a retry to come, when deliveries are retried).
    const line = await eventually(() => lines().find((l) => l.msg.startsWith('webhook delivery failed')), 10_000)
    expect(line).toMatchObject({ level: 40, webhook: 'nowhere', event_id: event.id, url: 'http://127.0.0.1:1/in' })
  })

  test('a restore is logged with its size and who did it', async () => {
    const backup = new Uint8Array(await (await fetch(`${s.api}/api/backup`, { headers: auth })).arrayBuffer())
    const r = await call(s.api, 'POST', '/api/restore', backup, { ...auth, 'content-type': 'application/octet-stream' })
    expect(r.status).toBe(200)
    // The line reaches our pipe from the server's batched stdout, possibly after the answer.
    const line = await eventually(() => lines().find((l) => l.msg === 'database restored from backup'))
    expect(line).toMatchObject({ level: 30, bytes: backup.byteLength, actor: 'admin' })
  })

  test('a job run that did something is logged (at debug for frequent jobs) with what it did and its duration', async () => {
    await register(s, 'sleeper', auth)
    const run = (await eventually(() => lines().find((l) => l.msg === 'job liveness ran'), 5_000))!
    expect(run.stale).toBeGreaterThanOrEqual(1)
    expect(run).toMatchObject({ level: 20, job: 'liveness' })
    expect(run.duration_ms).toBeNumber()
  })

  test('writes are asynchronous, yet nothing queued is lost at shutdown; jobs in flight finish first', async () => {
    await s.stop()
    expect(s.proc.exitCode).toBe(0)
    // The last line is written just before exit. Between the two, a job that was running
    // (liveness every 200 ms) may log its run, but it ends before the store closes: it never fails.
    const all = (await eventually(() => (lines().at(-1)?.msg === 'stopped' ? lines() : null)))!
    const after = all.slice(all.findIndex((l) => l.msg === 'SIGTERM: shutting down'))
    expect(after.length).toBeGreaterThanOrEqual(2)
    for (const line of after.slice(1, -1)) expect(line).toMatchObject({ level: 20, msg: expect.stringMatching(/^job \S+ ran$/) })
  })
})

describe('--log-format pretty (default) and --log-level', async () => {
  const s = await startServer({ args: ['--auth-token', TOKEN, '--log-level', 'warn'] })
  afterAll(() => s.cleanup())

  test('one readable line per entry with time and level; below the level nothing, the listening line always', async () => {
    expect((await call(s.api, 'GET', '/api/state', undefined, auth)).status).toBe(200)
    expect((await call(s.api, 'GET', '/api/state')).status).toBe(401)
    await eventually(() => s.stdout().includes('auth failure'))
    const lines = s.stdout().trimEnd().split('\n')
    for (const line of lines) expect(line).toMatch(/^\d{4}-\d\d-\d\dT[\d:.]+Z (DEBUG|INFO |WARN |ERROR) \S/)
    expect(lines[0]).toMatch(/ INFO  Muster API on http:/)
    expect(lines.slice(1)).toEqual([expect.stringMatching(/ WARN  auth failure method=GET path=\/api\/state reason="no token"$/)])
  })
})

describe('bad values', () => {
  test('an unknown format or level is one line and exit 2', async () => {
    for (const [args, env, message] of [
      [['--log-format', 'xml'], {}, 'invalid --log-format / SERVICE_LOG_FORMAT "xml": expected json or pretty'],
      [[], { SERVICE_LOG_LEVEL: 'verbose' }, 'invalid --log-level / SERVICE_LOG_LEVEL "verbose": expected debug or info or warn or error'],
    ] as const) {
      const proc = Bun.spawn([process.execPath, join(import.meta.dir, '..', 'app.ts'), ...args], { stdout: 'pipe', stderr: 'pipe', env: { ...process.env, ...env } })
      expect([await proc.exited, (await new Response(proc.stderr).text()).trim()]).toEqual([2, `muster-server: ${message}`])
    }
  })

  test('a server that cannot start says why on stdout, an error line, and exits 1', async () => {
    // The data dir's parent is a file: the line is logged just before process.exit, which must still write it.
    const proc = Bun.spawn([process.execPath, join(import.meta.dir, '..', 'app.ts'), '--data-dir', join(import.meta.path, 'data'), '--bind', '127.0.0.1:0', '--dashboard-bind', ''], { stdout: 'pipe', stderr: 'pipe' })
    const [code, out] = await Promise.all([proc.exited, new Response(proc.stdout).text()])
    expect(code).toBe(1)
    expect(out).toMatch(/^\S+Z ERROR muster-server: cannot start: ENOTDIR: not a directory, mkdir '.*logs\.test\.ts\/data'\n$/)
  })
})

describe('batched writes', () => {
  test('lines queued when the process dies of an uncaught exception are still written, in order', async () => {
    // Lines wait up to 10 ms for the next write; the last ones before the throw must not be lost with the process.
    const script = `import { log } from ${JSON.stringify(join(import.meta.dir, '..', 'obs', 'log.ts'))}
log.info('first')
setTimeout(() => { for (let i = 0; i < 100; i++) log.info('line ' + i); throw new Error('boom') }, 1)`
    const proc = Bun.spawn([process.execPath, '-e', script], { stdout: 'pipe', stderr: 'pipe' })
    const [code, out] = await Promise.all([proc.exited, new Response(proc.stdout).text()])
    expect(code).not.toBe(0)
    expect(out.trimEnd().split('\n').map((l) => l.replace(/^\S+ INFO  /, ''))).toEqual(['first', ...Array.from({ length: 100 }, (_, i) => `line ${i}`)])
  })
})

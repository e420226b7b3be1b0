// Issue 18: what an attacker or an unlucky operator can do to a running server.
// Each test reproduces one fault of the issue over real HTTP (or raw TCP).
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { Database } from 'bun:sqlite'
import { connect } from 'node:net'
import { networkInterfaces } from 'node:os'
import { join } from 'node:path'
import { apiContract } from './contract-fixture'
import { call, eventually, startServer, tempDir, type TestServer } from './helpers'
import { onPostgres } from './pg'

const ROOT = join(import.meta.dir, '..')

/** Runs the server binary expecting it to refuse to start; its exit code and output. */
async function refusedStart(args: string[]): Promise<{ code: number; out: string }> {
  const proc = Bun.spawn([process.execPath, join(ROOT, 'app.ts'), ...args], { cwd: ROOT, stdout: 'pipe', stderr: 'pipe' })
  const timer = setTimeout(() => proc.kill('SIGKILL'), 10_000)
  const code = await proc.exited
  clearTimeout(timer)
  return { code, out: (await new Response(proc.stdout).text()) + (await new Response(proc.stderr).text()) }
}

const portOf = (url: string) => new URL(url).port

/** Sends raw bytes on one TCP connection and collects what comes back until `done(text)` or the timeout. */
function rawExchange(url: string, bytes: string, done: (text: string) => boolean, timeoutMs = 3000): Promise<string> {
  const { hostname, port } = new URL(url)
  return new Promise((resolve) => {
    let got = ''
    const socket = connect(Number(port), hostname, () => socket.write(bytes))
    const finish = () => (clearTimeout(timer), socket.destroy(), resolve(got))
    const timer = setTimeout(finish, timeoutMs)
    socket.on('data', (d) => {
      got += d.toString()
      if (done(got)) finish()
    })
    socket.on('close', finish)
    socket.on('error', finish)
  })
}

const rssKb = (pid: number) => Number(Bun.spawnSync(['ps', '-o', 'rss=', '-p', String(pid)]).stdout.toString().trim())

describe('one server per port and per data dir', () => {
  let s: TestServer
  beforeAll(async () => (s = await startServer()))
  afterAll(() => s.cleanup())

  test('a second server on a port in use refuses to start, naming the port, with exit 1', async () => {
    const r = await refusedStart(['--bind', `127.0.0.1:${portOf(s.api)}`, '--dashboard-bind', '127.0.0.1:0', '--data-dir', tempDir()])
    expect(r.code).toBe(1)
    expect(r.out).toContain(`127.0.0.1:${portOf(s.api)}`)
    expect(r.out).toContain('in use')
    const d = await refusedStart(['--bind', '127.0.0.1:0', '--dashboard-bind', `127.0.0.1:${portOf(s.dashboard)}`, '--data-dir', tempDir()])
    expect(d.code).toBe(1)
    expect(d.out).toContain(`127.0.0.1:${portOf(s.dashboard)}`)
  })

  // The data-dir lock guards the SQLite file; replicas on PostgreSQL share a database by design.
  test.skipIf(onPostgres)('a second server on a data dir in use refuses to start; after a crash (kill -9) the dir is free again', async () => {
    const r = await refusedStart(['--bind', '127.0.0.1:0', '--dashboard-bind', '127.0.0.1:0', '--data-dir', s.dataDir])
    expect(r.code).toBe(1)
    expect(r.out).toContain(s.dataDir)
    expect(r.out).toContain('in use')
    // The first one still serves, with its own writes.
    expect((await call(s.api, 'PUT', '/api/state/one', { v: 1 })).status).toBe(200)
    await s.kill()
    s = await startServer({ dataDir: s.dataDir })
    expect((await call(s.api, 'GET', '/api/state/one')).body).toMatchObject({ v: 1 })
  })
})

describe('restore accepts only a database this build would have made', () => {
  let s: TestServer
  let backup: Uint8Array
  beforeAll(async () => {
    s = await startServer()
    await call(s.api, 'PUT', '/api/state/kept', { v: 1 })
    backup = new Uint8Array(await (await fetch(`${s.api}/api/backup`)).arrayBuffer())
  })
  afterAll(() => s.cleanup())

  /** The backup with `sql` applied to a copy of it. */
  async function crafted(sql: string): Promise<Uint8Array> {
    const file = join(tempDir(), 'crafted.db')
    await Bun.write(file, backup)
    const db = new Database(file)
    db.exec('PRAGMA journal_mode = DELETE')
    db.exec(sql)
    db.close()
    return new Uint8Array(await Bun.file(file).arrayBuffer())
  }

  const variants: [string, string][] = [
    [
      'documents without its primary key',
      `CREATE TABLE d2 (space TEXT NOT NULL, key TEXT NOT NULL, version_id INTEGER NOT NULL);
       INSERT INTO d2 SELECT * FROM doc_current; DROP TABLE doc_current; ALTER TABLE d2 RENAME TO doc_current;`,
    ],
    ['a trigger that fails every state write', `CREATE TRIGGER no_writes BEFORE UPDATE ON doc_current BEGIN SELECT RAISE(ABORT, 'nope'); END;`],
    ['a trigger that wipes the audit log', `CREATE TRIGGER wipe AFTER INSERT ON audit BEGIN DELETE FROM audit; END;`],
    ['an extra column', `ALTER TABLE doc_versions ADD COLUMN extra TEXT`],
    ['a view of its own', `CREATE VIEW v AS SELECT * FROM audit`],
    ['a missing index', `DROP INDEX audit_actor`],
    ['a column of another type', `ALTER TABLE webhooks RENAME COLUMN fail_count TO x; ALTER TABLE webhooks ADD COLUMN fail_count TEXT`],
  ]

  test.each(variants)('a backup with %s is refused with 400 and nothing changes', async (_, sql) => {
    const before = (await call(s.api, 'GET', '/api/audit?limit=1')).body
    const r = await call(s.api, 'POST', '/api/restore', await crafted(sql), { 'content-type': 'application/octet-stream' })
    expect(r.status).toBe(400)
    expect(r.body.code).toBe(400)
    // Writes still work and the audit log still grows.
    const put = await call(s.api, 'PUT', '/api/state/kept', { v: 2 })
    expect(put.status).toBe(200)
    const after = (await call(s.api, 'GET', '/api/audit?limit=1')).body
    expect(after[0].id).toBeGreaterThan(before[0].id)
  })

  test('the untouched backup still restores, and the server restarts on it', async () => {
    const r = await call(s.api, 'POST', '/api/restore', backup, { 'content-type': 'application/octet-stream' })
    expect(r.status).toBe(200)
    await s.stop()
    s = await startServer({ dataDir: s.dataDir })
    expect((await call(s.api, 'GET', '/api/state/kept')).body).toMatchObject({ v: 1 })
    expect((await call(s.api, 'PUT', '/api/state/kept', { v: 3 })).status).toBe(200)
  })
})

describe('bounded answers and reads', () => {
  let s: TestServer
  beforeAll(async () => (s = await startServer()))
  afterAll(() => s.cleanup())

  test('a validation with millions of violations answers at most 10,000, the true count, and /health stays fast', async () => {
    await call(s.api, 'PUT', '/api/validate/flood/rules', [{ rule_id: 'a', pattern: 'a' }])
    const content = 'a\n'.repeat(2_500_000) // 5 MB
    const pending = call(s.api, 'POST', '/api/validate/flood', { content })
    let done = false
    let peakRss = 0
    let slowest = 0
    void pending.then(() => (done = true))
    while (!done) {
      const t0 = performance.now()
      await fetch(`${s.api}/health`)
      slowest = Math.max(slowest, performance.now() - t0)
      peakRss = Math.max(peakRss, rssKb(s.proc.pid))
      await Bun.sleep(20)
    }
    const r = await pending
    expect(r.status).toBe(200)
    expect(r.body.count).toBe(2_500_000)
    expect(r.body.truncated).toBe(true)
    expect(r.body.violations.length).toBe(10_000)
    expect(r.body.violations[9999]).toMatchObject({ rule_id: 'a', line: 10_000 })
    expect(r.text.length).toBeLessThan(2_000_000)
    expect(peakRss).toBeLessThan(600 * 1024)
    expect(slowest).toBeLessThan(1000)
  })

  test('a slow pattern on a small file does not hold the request thread', async () => {
    // RE2 is linear, but with a big constant: this takes ~0.6 s over 60 KB (under the old 64 KB inline cut).
    await call(s.api, 'PUT', '/api/validate/slow/rules', [{ rule_id: 'slow', pattern: '(.*a){100}' }])
    const t0 = performance.now()
    const pending = call(s.api, 'POST', '/api/validate/slow', { content: 'a'.repeat(60_000) })
    await Bun.sleep(20)
    const t1 = performance.now()
    expect((await fetch(`${s.api}/health`)).status).toBe(200)
    const health = performance.now() - t1
    expect((await pending).body.count).toBe(1)
    expect(performance.now() - t0).toBeGreaterThan(300)
    expect(health).toBeLessThan(150)
  })

  test('a validation running past --validation-timeout is stopped with 413; the next ones still answer', async () => {
    const t = await startServer({ args: ['--validation-timeout', '300ms'] })
    try {
      // ~9 s of RE2 work (program of 5,000 instructions over 200 KB, no literal to shortcut it).
      await call(t.api, 'PUT', '/api/validate/stuck/rules', [{ rule_id: 'slow', pattern: '(.*a){1000}' }])
      await call(t.api, 'PUT', '/api/validate/fine/rules', [{ rule_id: 'todo', pattern: 'TODO' }])
      const t0 = performance.now()
      const [stuck, queued] = await Promise.all([
        call(t.api, 'POST', '/api/validate/stuck', { content: 'a'.repeat(200_000) }),
        call(t.api, 'POST', '/api/validate/fine', { content: 'TODO\n'.repeat(100_000) }),
      ])
      expect(stuck.status).toBe(413)
      expect(stuck.body).toEqual({ error: expect.stringContaining('took longer than 300 ms'), code: 413 })
      expect(performance.now() - t0).toBeLessThan(3000)
      // Queued behind it on the same worker: sent on to the replacement.
      expect(queued.body.count).toBe(100_000)
    } finally {
      await t.cleanup()
    }
  })

  test('a webhook receiver that streams an endless answer is cut off, and the server does not balloon', async () => {
    let streamed = 0
    const receiver = Bun.serve({
      port: 0,
      hostname: '127.0.0.1',
      fetch: () =>
        new Response(
          new ReadableStream({
            pull(c) {
              streamed += 1 << 20
              c.enqueue(new Uint8Array(1 << 20))
            },
          }),
        ),
    })
    try {
      const before = rssKb(s.proc.pid)
      const id = 'endless'
      expect((await call(s.api, 'POST', '/api/webhooks', { id, url: `http://127.0.0.1:${receiver.port}/` })).status).toBe(200)
      const t0 = performance.now()
      const r = await call(s.api, 'POST', `/api/webhooks/${id}/test`)
      expect(performance.now() - t0).toBeLessThan(4000)
      expect(JSON.stringify(r.body)).toContain('too large')
      expect(rssKb(s.proc.pid) - before).toBeLessThan(200 * 1024)
      expect(streamed).toBeLessThan(64 << 20)
    } finally {
      receiver.stop(true)
    }
  })
  test("the dashboard's event stream holds a browser that does not read to the API's bounded, counted buffer", async () => {
    // A browser that completes the WebSocket handshake and then never reads.
    const { hostname, port } = new URL(s.dashboard)
    const socket = connect(Number(port), hostname)
    socket.on('error', () => {})
    await new Promise<void>((resolve) => {
      socket.once('data', (d) => (expect(d.toString()).toStartWith('HTTP/1.1 101'), socket.pause(), resolve()))
      socket.write('GET /api/events/subscribe?pattern=flood.* HTTP/1.1\r\nHost: x\r\nUpgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n\r\n')
    })
    try {
      const data = 'x'.repeat(100_000)
      for (let i = 0; i < 250; i++) await call(s.api, 'POST', '/api/events/publish', { topic: 'flood.big', data })
      // Each publish is answered at its COMMIT; the fan-out to the subscription follows within moments
      // (on PostgreSQL through the event feed), so the last event may still be on its way: wait for it.
      const flood = await eventually(async () => {
        const subs = (await call(s.api, 'GET', '/api/events/subscriptions')).body
        const f = subs.find((x: any) => x.pattern === 'flood.*')
        return f && f.sent + f.dropped + f.buffered === 250 ? f : null
      })
      expect(flood.dropped).toBeGreaterThan(0)
      expect(flood.buffered).toBeLessThanOrEqual(64)
      expect(flood.sent + flood.dropped + flood.buffered).toBe(250)
    } finally {
      socket.destroy()
    }
  })
})

describe('no loops, no reach into metadata services', () => {
  let s: TestServer
  beforeAll(async () => (s = await startServer()))
  afterAll(() => s.cleanup())

  test('a webhook aimed at the server itself is refused', async () => {
    for (const host of ['127.0.0.1', 'localhost', '0.0.0.0']) {
      const r = await call(s.api, 'POST', '/api/webhooks', { id: `self-${host}`, url: `http://${host}:${portOf(s.api)}/api/events/publish` })
      expect(r.status).toBe(400)
      expect(r.body.error).toContain('this server')
    }
  })

  // A non-loopback address of this machine, when it has one: with a wildcard bind it reaches the server too.
  // Nothing is sent to it here (the workplace allows traffic to loopback only): a refused webhook sends nothing.
  const lanAddress = Object.values(networkInterfaces()).flat().find((i) => i && !i.internal && i.family === 'IPv4')?.address

  test.skipIf(!lanAddress)('with a wildcard bind, a webhook aimed at a local interface address at its own port is refused', async () => {
    const wild = await startServer({ args: ['--bind', '0.0.0.0:0'] })
    try {
      const self = `http://${lanAddress}:${portOf(wild.api)}`
      for (const url of [`${self}/api/events/publish`, `http://[::ffff:${lanAddress}]:${portOf(wild.api)}/`]) {
        const r = await call(wild.api, 'POST', '/api/webhooks', { id: 'self-lan', url })
        expect([url, r.status, r.body.error]).toEqual([url, 400, expect.stringContaining('this server')])
      }
    } finally {
      await wild.cleanup()
    }
  })

  test('an event published by a webhook delivery is not delivered to webhooks again', async () => {
    // A relay on another port that forwards each delivery to the server: the loop a self-aimed webhook would make.
    let forwarded = 0
    const relay = Bun.serve({
      port: 0,
      hostname: '127.0.0.1',
      async fetch(req) {
        forwarded++
        const headers = Object.fromEntries([...req.headers].filter(([k]) => k.startsWith('x-service-') || k === 'content-type'))
        const event = await req.json()
        await fetch(`${s.api}/api/events/publish`, { method: 'POST', headers, body: JSON.stringify({ topic: 'echo.again', data: event.topic }) })
        return new Response('ok')
      },
    })
    try {
      expect((await call(s.api, 'POST', '/api/webhooks', { id: 'relay', url: `http://127.0.0.1:${relay.port}/`, patterns: ['loop.*', 'echo.*'] })).status).toBe(200)
      await call(s.api, 'POST', '/api/events/publish', { topic: 'loop.start' })
      await eventually(async () => (await call(s.api, 'GET', '/api/events/history?topic=echo.*')).body.length === 1)
      await Bun.sleep(300)
      expect(forwarded).toBe(1)
      expect((await call(s.api, 'GET', '/api/events/history?topic=echo.*')).body.length).toBe(1)
    } finally {
      relay.stop(true)
    }
  })

  test('link-local and metadata targets are refused for webhooks and contract tests', async () => {
    for (const url of ['http://169.254.169.254/latest/meta-data/', 'http://[fe80::1]/', 'http://0.0.0.0:1/', 'http://[::ffff:169.254.169.254]/', 'http://[64:ff9b::a9fe:a9fe]/', 'http://[::a9fe:a9fe]/', 'http://metadata.google.internal/']) {
      const r = await call(s.api, 'POST', '/api/webhooks', { id: 'meta', url })
      expect(r.status).toBe(400)
      expect(r.body.error).toContain('not allowed')
    }
    expect((await call(s.api, 'PUT', '/api/contracts/p/c', apiContract())).status).toBe(200)
    const c = await call(s.api, 'POST', '/api/contracts/p/c/test', { endpoint: 'GET /users', base_url: 'http://169.254.169.254/' })
    expect(c.status).toBe(400)
    expect(c.body.error).toContain('not allowed')
    // Loopback and private ranges stay allowed: local development.
    expect((await call(s.api, 'POST', '/api/webhooks', { id: 'private', url: 'http://10.1.2.3:9/' })).status).toBe(200)
  })

  test('--allow-link-local-targets lets an operator reach them', async () => {
    const t = await startServer({ args: ['--allow-link-local-targets'] })
    try {
      expect((await call(t.api, 'POST', '/api/webhooks', { id: 'meta', url: 'http://169.254.169.254/' })).status).toBe(200)
    } finally {
      await t.cleanup()
    }
  })
})

describe('reads see committed data only', () => {
  // A race, so a probabilistic test: against the code before reads had their own connection
  // (18a1108) it failed in 3 of 4 runs of six rounds, each caught GET having returned a version
  // whose COMMIT a kill -9 then lost. On the current code it must never fail.
  test('no GET ever returns a version that a crash (kill -9) then loses', async () => {
    let s = await startServer()
    try {
      for (let round = 0; round < 6; round++) {
        const key = `/api/state/race-${round}`
        const seen = new Set<number>()
        let writing = true
        const writer = async (n: number) => {
          for (let i = 0; writing; i++) await call(s.api, 'PUT', key, { n, i }).catch(() => {})
        }
        const reader = async () => {
          while (writing) {
            const r = await fetch(s.api + key).catch(() => null)
            const v = r?.ok ? Number(r.headers.get('x-service-version')) : NaN
            await r?.arrayBuffer()
            if (Number.isFinite(v)) seen.add(v)
          }
        }
        const running = [...[1, 2, 3, 4].map(writer), ...Array.from({ length: 6 }, reader)]
        await Bun.sleep(500)
        await s.kill()
        writing = false
        await Promise.all(running)
        s = await startServer({ dataDir: s.dataDir })
        const history = (await call(s.api, 'GET', `${key}?history=1&limit=100000`)).body
        const versions = new Set<number>((history.versions ?? history).map((h: any) => h.version))
        expect(seen.size).toBeGreaterThan(10)
        for (const v of seen) expect([round, v, versions.has(v)]).toEqual([round, v, true])
      }
    } finally {
      await s.cleanup()
    }
  })
})

describe('400 instead of 500, and other edges', () => {
  let s: TestServer
  beforeAll(async () => (s = await startServer({ args: ['--auth-token', 'secret'] })))
  afterAll(() => s.cleanup())
  const auth = { authorization: 'Bearer secret' }

  test('numeric parameters out of range are 400', async () => {
    for (const path of [
      '/api/events/history?last=99999999999999999999',
      '/api/audit?limit=99999999999999999999',
      '/api/llm/usage?limit=99999999999999999999',
      '/api/compliance/history?limit=99999999999999999999',
      '/api/state/x?history=1&limit=99999999999999999999',
      '/api/audit?offset=99999999999999999999',
      '/api/state/x?diff=1,99999999999999999999',
    ]) {
      const r = await call(s.api, 'GET', path, undefined, auth)
      expect([path, r.status, r.body?.code]).toEqual([path, 400, 400])
    }
    expect((await call(s.api, 'PUT', '/api/state/x?if_version=99999999999999999999', { v: 1 }, auth)).status).toBe(400)
    expect((await call(s.api, 'POST', '/api/state/x?rollback=99999999999999999999', undefined, auth)).status).toBe(400)
  })

  test('timestamps must be strict RFC 3339', async () => {
    for (const from of ['hello 1', '-1', '2024-02-30', '2024-02-30T00:00:00Z', '2024-13-01T00:00:00Z', '1']) {
      const r = await call(s.api, 'GET', `/api/events/history?from=${encodeURIComponent(from)}`, undefined, auth)
      expect([from, r.status]).toEqual([from, 400])
    }
    for (const from of ['2024-02-29T12:00:00Z', '2024-02-29T12:00:00.123+02:00', '2024-02-29']) {
      const r = await call(s.api, 'GET', `/api/events/history?from=${encodeURIComponent(from)}`, undefined, auth)
      expect([from, r.status]).toEqual([from, 200])
    }
  })

  test('JSON nested too deep is 400', async () => {
    for (const depth of [10_000, 100_000]) {
      const body = '['.repeat(depth) + ']'.repeat(depth)
      const r = await call(s.api, 'PUT', '/api/state/deep', body, { ...auth, 'content-type': 'application/json' })
      expect([depth, r.status, r.body?.code]).toEqual([depth, 400, 400])
    }
    const deep = '{"a":'.repeat(100_000) + '1' + '}'.repeat(100_000)
    const published = await call(s.api, 'POST', '/api/events/publish', `{"topic":"t","data":${deep}}`, { ...auth, 'content-type': 'application/json' })
    expect([published.status, published.body?.code]).toEqual([400, 400])
    expect((await call(s.api, 'PUT', '/api/state/deep', JSON.parse('['.repeat(50) + ']'.repeat(50)), auth)).status).toBe(200)
    expect((await call(s.api, 'POST', '/api/events/publish', { topic: 't', data: JSON.parse('['.repeat(50) + ']'.repeat(50)) }, auth)).status).toBe(200)
  })

  test('LLM records must hold finite costs and safe-integer token counts; the summary never breaks', async () => {
    const r = await call(s.api, 'POST', '/api/llm/usage', { provider: 'p', model: 'm', cost_usd: 1e308 }, auth)
    expect(r.status).toBe(400)
    const t = await call(s.api, 'POST', '/api/llm/usage', { provider: 'p', model: 'm', tokens_in: 2 ** 60 }, auth)
    expect(t.status).toBe(400)
    expect((await call(s.api, 'GET', '/api/llm/usage/summary', undefined, auth)).status).toBe(200)
  })

  test('?token= authenticates only a WebSocket upgrade, not a REST call that claims one', async () => {
    const r = await call(s.api, 'GET', '/api/state?token=secret', undefined, { upgrade: 'websocket' })
    expect(r.status).toBe(401)
    // The real upgrade still works with ?token=.
    const ws = new WebSocket(`${s.api.replace('http', 'ws')}/api/events/subscribe?token=secret`)
    await new Promise((resolve, reject) => ((ws.onopen = resolve), (ws.onerror = reject)))
    ws.close()
  })

  test('routing does not depend on the Host header; HTTP/1.0 without Host is answered', async () => {
    const short = await rawExchange(s.api, 'GET /api/state/x HTTP/1.1\r\nHost: ab\r\nAuthorization: Bearer secret\r\nConnection: close\r\n\r\n', (t) => t.includes('\r\n\r\n{'))
    expect(short).toMatch(/^HTTP\/1.1 404/)
    const old = await rawExchange(s.api, 'GET /health HTTP/1.0\r\n\r\n', (t) => t.includes('}'))
    expect(old).toMatch(/^HTTP\/1.[01] 200/)
    const oldState = await rawExchange(s.api, 'GET /api/state/x HTTP/1.0\r\nAuthorization: Bearer secret\r\n\r\n', (t) => t.includes('}'))
    expect(oldState).toMatch(/^HTTP\/1.[01] 404/)
  })

  // Not fixable in Muster: Bun's HTTP server (uWS) closes a connection when a request is pipelined
  // behind a response that is still pending, i.e. behind any asynchronous handler
  // (oven-sh/bun#38128, open). A todo until Bun ships the fix: `bun test --todo` shows it failing.
  test.todo('a request pipelined after one with a body is answered', async () => {
    const body = JSON.stringify({ v: 1 })
    const put = `PUT /api/state/piped HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer secret\r\nContent-Type: application/json\r\nContent-Length: ${body.length}\r\n\r\n${body}`
    const get = `GET /api/state/piped HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer secret\r\n\r\n`
    const got = await rawExchange(s.api, put + get, (t) => (t.match(/HTTP\/1.1 200/g) ?? []).length >= 2)
    expect((got.match(/HTTP\/1.1 200/g) ?? []).length).toBe(2)
  })

  // Also Bun's: it answers oversized headers (431) and unparsable requests (400, 505) itself, before any
  // handler; test/error-bodies.test.ts pins how, so a Bun upgrade that changes it is noticed.
})

describe('shutdown', () => {
  test('SIGTERM exits within 5 s though an upload is still arriving and headers are half-sent', async () => {
    const s = await startServer()
    const { hostname, port } = new URL(s.api)
    const upload = connect(Number(port), hostname, () =>
      upload.write('PUT /api/state/slow HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 1000000\r\n\r\n{"v":"'),
    )
    const headers = connect(Number(port), hostname, () => headers.write('GET /health HTTP/1.1\r\nHost: x\r\n'))
    upload.on('error', () => {})
    headers.on('error', () => {})
    const drip = setInterval(() => upload.write('a'), 100)
    await Bun.sleep(300)
    const t0 = performance.now()
    s.proc.kill('SIGTERM')
    await s.proc.exited
    clearInterval(drip)
    upload.destroy()
    headers.destroy()
    expect(performance.now() - t0).toBeLessThan(5500)
    expect(s.proc.exitCode).toBe(0)
    await s.cleanup()
  })
})

// Two server processes on one PostgreSQL database (docs/replicas.md): what one commits,
// the other serves, streams and enforces at once; jobs run once; killing one loses no
// acknowledged write and the other takes the jobs over.
// Runs in the suite's PostgreSQL run only (test/run.ts); the SQLite run has one process per data dir.
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { SQL } from 'bun'
import { call, eventually, register, startServer, tempDir, type TestServer } from './helpers'
import { PG_BASE, databaseFor } from './pg'

type Ev = { id: number; topic: string; data: any; source: string }

const LEADER_LINE = 'now runs the jobs'
let url = ''
let a: TestServer
let b: TestServer

/** A replica on the shared database; quick liveness so stale detection is observable. */
const replica = () =>
  startServer({ args: ['--database', url, '--log-level', 'info', '--stale-timeout', '1s', '--liveness-interval', '200ms'] })

const history = async (server: TestServer, topic: string) =>
  (await call(server.api, 'GET', `/api/events/history?topic=${topic}&last=1000`)).body as Ev[]

describe.skipIf(!PG_BASE)('two replicas on one PostgreSQL database', () => {
  beforeAll(async () => {
    url = await databaseFor(tempDir('muster-replicas-'))
    a = await replica()
    // A first, and leader, so that killing it later shows the jobs moving to B.
    await eventually(() => a.stdout().includes(LEADER_LINE), 10_000)
    b = await replica()
  })
  afterAll(async () => {
    await a?.cleanup()
    await b?.cleanup()
  })

  test('a WebSocket subscriber on B receives, in order, what is published through A', async () => {
    const frames: Ev[] = []
    const ws = new WebSocket(`${b.api.replace(/^http/, 'ws')}/api/events/subscribe?pattern=rep.ws.*`)
    ws.onmessage = (m) => frames.push(JSON.parse(String(m.data)))
    await new Promise((resolve, reject) => ((ws.onopen = resolve), (ws.onerror = reject)))
    const ids: number[] = []
    for (let i = 0; i < 20; i++) ids.push((await call(a.api, 'POST', '/api/events/publish', { topic: 'rep.ws.x', data: { i } })).body.id)
    await eventually(() => frames.length >= 20, 10_000)
    ws.close()
    expect(frames.map((f) => f.id)).toEqual(ids)
    expect(frames.map((f) => f.data.i)).toEqual([...Array(20).keys()])
  })

  test('events published concurrently through A reach subscribers on both replicas in id order, each once', async () => {
    const subscribe = (api: string) => {
      const frames: Ev[] = []
      const ws = new WebSocket(`${api.replace(/^http/, 'ws')}/api/events/subscribe?pattern=rep.many.*`)
      ws.onmessage = (m) => frames.push(JSON.parse(String(m.data)))
      return { frames, ws, open: new Promise((resolve, reject) => ((ws.onopen = resolve), (ws.onerror = reject))) }
    }
    const [onA, onB] = [subscribe(a.api), subscribe(b.api)]
    await Promise.all([onA.open, onB.open])
    // Many at once, so units share transactions and a NOTIFY carries several events.
    const ids: number[] = []
    for (let round = 0; round < 4; round++)
      ids.push(...(await Promise.all(Array.from({ length: 50 }, (_, i) => call(a.api, 'POST', '/api/events/publish', { topic: 'rep.many.x', data: { round, i } })))).map((r) => r.body.id as number))
    ids.sort((x, y) => x - y)
    await eventually(() => onA.frames.length >= ids.length && onB.frames.length >= ids.length, 10_000)
    await Bun.sleep(200)
    onA.ws.close(), onB.ws.close()
    expect(onA.frames.map((f) => f.id)).toEqual(ids)
    expect(onB.frames.map((f) => f.id)).toEqual(ids)
  })

  test('events committed while the replicas\' LISTEN connections are cut still reach B\'s subscriber, in order, once', async () => {
    const frames: Ev[] = []
    const ws = new WebSocket(`${b.api.replace(/^http/, 'ws')}/api/events/subscribe?pattern=rep.deaf.*`)
    ws.onmessage = (m) => frames.push(JSON.parse(String(m.data)))
    await new Promise((resolve, reject) => ((ws.onopen = resolve), (ws.onerror = reject)))
    const admin = new SQL(url)
    const ids: number[] = []
    try {
      const cut = await admin.unsafe(
        `SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = current_database() AND query LIKE 'LISTEN %'`,
      )
      expect(cut.length).toBeGreaterThanOrEqual(2)
      for (let i = 0; i < 10; i++) ids.push((await call(a.api, 'POST', '/api/events/publish', { topic: 'rep.deaf.x', data: { i } })).body.id)
    } finally {
      await admin.close()
    }
    await eventually(() => frames.length >= 10, 15_000)
    await Bun.sleep(300)
    ws.close()
    expect(frames.map((f) => f.id)).toEqual(ids)
  })

  test('a PUT through A is read back through B at once', async () => {
    for (let i = 1; i <= 5; i++) {
      const put = await call(a.api, 'PUT', '/api/state/rep-read', { i })
      expect(put.status).toBe(200)
      const got = await call(b.api, 'GET', '/api/state/rep-read')
      expect(got.status).toBe(200)
      expect(got.body).toEqual({ i })
      expect(got.headers.get('etag')).toBe(`"${put.body.hash}"`)
    }
  })

  test('concurrent if_version writes through A and B: exactly one wins', async () => {
    for (let round = 0; round < 5; round++) {
      const key = `rep-cas-${round}`
      const v = (await call(a.api, 'PUT', `/api/state/${key}`, { v: 0 })).body.version
      const [ra, rb] = await Promise.all([
        call(a.api, 'PUT', `/api/state/${key}?if_version=${v}`, { by: 'a' }),
        call(b.api, 'PUT', `/api/state/${key}?if_version=${v}`, { by: 'b' }),
      ])
      expect([ra.status, rb.status].sort()).toEqual([200, 412])
      const winner = ra.status === 200 ? 'a' : 'b'
      expect((await call(b.api, 'GET', `/api/state/${key}`)).body).toEqual({ by: winner })
    }
  })

  test('a lock held through A is 409 through B, and free through B once A releases it', async () => {
    const x = await register(a, 'rep-lock-x')
    const y = await register(b, 'rep-lock-y')
    expect((await call(a.api, 'PUT', '/api/locks/rep-lock', {}, x.h)).status).toBe(200)
    const held = await call(b.api, 'PUT', '/api/locks/rep-lock', {}, y.h)
    expect(held.status).toBe(409)
    expect(held.body.holders[0].instance_id).toBe(x.id)
    expect((await call(a.api, 'DELETE', '/api/locks/rep-lock', undefined, x.h)).status).toBe(200)
    expect((await call(b.api, 'PUT', '/api/locks/rep-lock', {}, y.h)).status).toBe(200)
  })

  test('a waiter on B is granted the lock when it is released through A', async () => {
    const x = await register(a, 'rep-wait-x')
    const y = await register(b, 'rep-wait-y')
    expect((await call(a.api, 'PUT', '/api/locks/rep-wait', {}, x.h)).status).toBe(200)
    const waiting = call(b.api, 'PUT', '/api/locks/rep-wait', { wait_ms: 10_000 }, y.h)
    await Bun.sleep(300)
    const released = performance.now()
    expect((await call(a.api, 'DELETE', '/api/locks/rep-wait', undefined, x.h)).status).toBe(200)
    const got = await waiting
    expect(got.status).toBe(200)
    expect(got.body.instance_id).toBe(y.id)
    expect(performance.now() - released).toBeLessThan(3000)
  })

  test('a webhook fires once per event, whichever replica the event went through', async () => {
    const got: number[] = []
    const receiver = Bun.serve({
      hostname: '127.0.0.1',
      port: 0,
      async fetch(req) {
        got.push(JSON.parse(await req.text()).id)
        return new Response('ok')
      },
    })
    try {
      const hook = await call(a.api, 'POST', '/api/webhooks', { id: 'rep-hook', url: `http://127.0.0.1:${receiver.port}/`, patterns: ['rep.hook.*'] })
      expect(hook.status).toBe(200)
      const ids: number[] = []
      for (let i = 0; i < 10; i++) {
        const via = i % 2 ? a : b
        ids.push((await call(via.api, 'POST', '/api/events/publish', { topic: 'rep.hook.x', data: { i } })).body.id)
      }
      await eventually(() => got.length >= 10, 10_000)
      await Bun.sleep(1000) // a second delivery, if any, would arrive by now
      expect(got.sort((x, y) => x - y)).toEqual(ids)
    } finally {
      receiver.stop(true)
    }
  })

  test('an instance that goes quiet is marked stale once, not once per replica', async () => {
    const x = await register(b, 'rep-quiet')
    await eventually(async () => (await call(a.api, 'GET', `/api/instances/${x.id}`)).body.status === 'stale', 10_000)
    await Bun.sleep(1000)
    const stale = (await history(b, 'instance.stale')).filter((e) => e.data.id === x.id || e.data.instance_id === x.id)
    expect(stale.length).toBe(1)
  })

  test('kill -9 of one replica during writes through both: every acknowledged write is readable through the other, which takes over the jobs', async () => {
    const acked = new Map<string, number>()
    let stop = false
    const writer = async (server: TestServer, tag: string) => {
      for (let i = 0; !stop; i++) {
        const r = await call(server.api, 'PUT', `/api/state/rep-kill-${tag}-${i % 20}`, { i }).catch(() => null)
        if (!r) return // the replica is gone
        if (r.status === 200) acked.set(`rep-kill-${tag}-${i % 20}`, i)
      }
    }
    const writers = [writer(a, 'a'), writer(b, 'b')]
    await Bun.sleep(700)
    await a.kill()
    await Bun.sleep(300)
    stop = true
    await Promise.all(writers)
    expect(acked.size).toBeGreaterThan(10)
    for (const [key, i] of acked) {
      const got = await call(b.api, 'GET', `/api/state/${key}`)
      expect(got.status).toBe(200)
      expect((got.body as { i: number }).i).toBeGreaterThanOrEqual(i)
    }
    // A led; B takes the jobs within a few seconds: a quiet instance still goes stale.
    await eventually(() => b.stdout().includes(LEADER_LINE), 10_000)
    const x = await register(b, 'rep-after-kill')
    await eventually(async () => (await call(b.api, 'GET', `/api/instances/${x.id}`)).body.status === 'stale', 10_000)
  })
})

// Long-poll watches over real HTTP: a state key with If-None-Match and ?wait=,
// event history with ?after_id=&wait=. Woken by the write itself, never missed,
// and ended cleanly by a shutdown.
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { call, register, startServer, type TestServer } from './helpers'

let s: TestServer
beforeAll(async () => (s = await startServer()))
afterAll(() => s.cleanup())

let n = 0
const fresh = () => `watch/${++n}-${Math.random().toString(36).slice(2, 7)}`
const put = (key: string, value: unknown) => call(s.api, 'PUT', `/api/state/${key}`, value)
const watch = (key: string, tag: string, wait: string, server = s) =>
  call(server.api, 'GET', `/api/state/${key}?wait=${wait}`, undefined, { 'if-none-match': tag })
const timed = async <T>(p: Promise<T>): Promise<[T, number]> => {
  const t0 = Date.now()
  const r = await p
  return [r, Date.now() - t0]
}
const lastId = async () => (await call(s.api, 'GET', '/api/events/history?last=1')).body[0]?.id ?? 0

describe('GET /api/state/{key}?wait= with If-None-Match', () => {
  test('an ETag that differs already is answered at once as a plain GET', async () => {
    const key = fresh()
    await put(key, { v: 1 })
    const [r, ms] = await timed(watch(key, '"stale-etag"', '30s'))
    expect(r.status).toBe(200)
    expect(r.body).toEqual({ v: 1 })
    expect(r.headers.get('etag')).toMatch(/^"[0-9a-f]{64}"$/)
    expect(ms).toBeLessThan(1000)
  })

  test('the current ETag holds the request until a write: 200 with the new value and ETag', async () => {
    const key = fresh()
    const etag = (await call(s.api, 'GET', `/api/state/${(await put(key, { v: 1 }), key)}`)).headers.get('etag')!
    const held = timed(watch(key, etag, '20s'))
    await Bun.sleep(200)
    const w = (await put(key, { v: 2 })).body
    const [r, ms] = await held
    expect(r.status).toBe(200)
    expect(r.body).toEqual({ v: 2 })
    expect(r.headers.get('etag')).toBe(`"${w.hash}"`)
    expect(r.headers.get('x-service-version')).toBe('2')
    expect(ms).toBeGreaterThanOrEqual(190)
    expect(ms).toBeLessThan(2000)
  })

  test('no change within wait: 304 with the unchanged ETag and no body; a write of the same bytes is no change', async () => {
    const key = fresh()
    await put(key, { same: true })
    const etag = (await call(s.api, 'GET', `/api/state/${key}`)).headers.get('etag')!
    const held = timed(watch(key, etag, '700ms'))
    await Bun.sleep(100)
    expect((await put(key, { same: true })).body.version).toBe(2)
    const [r, ms] = await held
    expect(r.status).toBe(304)
    expect(r.text).toBe('')
    expect(r.headers.get('etag')).toBe(etag)
    expect(ms).toBeGreaterThanOrEqual(680)
    expect(ms).toBeLessThan(2500)
  })

  test('a delete while held answers 404; a key that is already gone answers 404 at once', async () => {
    const key = fresh()
    await put(key, 1)
    const etag = (await call(s.api, 'GET', `/api/state/${key}`)).headers.get('etag')!
    const held = watch(key, etag, '20s')
    await Bun.sleep(100)
    await call(s.api, 'DELETE', `/api/state/${key}`)
    expect(await held).toMatchObject({ status: 404, body: { error: 'key not found', code: 404 } })
    const [gone, ms] = await timed(watch(key, etag, '20s'))
    expect(gone.status).toBe(404)
    expect(ms).toBeLessThan(1000)
  })

  test('If-None-Match: * waits for the key to be created; times out with a bare 304', async () => {
    const key = fresh()
    const held = watch(key, '*', '20s')
    await Bun.sleep(100)
    await put(key, { born: true })
    const r = await held
    expect(r.status).toBe(200)
    expect(r.body).toEqual({ born: true })
    const nothing = await watch(fresh(), '*', '300ms')
    expect(nothing.status).toBe(304)
    expect(nothing.headers.get('etag')).toBeNull()
    // An existing key has been created already: answered at once.
    expect((await watch(key, '*', '20s')).body).toEqual({ born: true })
  })

  test('without If-None-Match wait is ignored; a bad or too long wait is 400', async () => {
    const key = fresh()
    await put(key, 7)
    const [r, ms] = await timed(call(s.api, 'GET', `/api/state/${key}?wait=30s`))
    expect(r.status).toBe(200)
    expect(ms).toBeLessThan(1000)
    const etag = r.headers.get('etag')!
    // A watch is of the current value: with ?version= the read is that read, at once.
    const [v, vms] = await timed(call(s.api, 'GET', `/api/state/${key}?version=1&wait=30s`, undefined, { 'if-none-match': etag }))
    expect(v.status).toBe(200)
    expect(vms).toBeLessThan(1000)
    expect(await watch(key, etag, '61s')).toMatchObject({ status: 400, body: { error: 'invalid wait: at most 60s', code: 400 } })
    expect((await watch(key, etag, 'soon')).status).toBe(400)
    expect((await watch(key, etag, '-5s')).status).toBe(400)
  })

  test('no missed wake-up: a write right after each watch starts always wakes it', async () => {
    const key = fresh()
    let tag = `"${(await put(key, { i: 0 })).body.hash}"`
    for (let i = 1; i <= 30; i++) {
      const held = watch(key, tag, '10s')
      const w = (await put(key, { i })).body
      const [r, ms] = await timed(held)
      expect(r.status).toBe(200)
      expect(r.body).toEqual({ i })
      expect(ms).toBeLessThan(2000)
      tag = `"${w.hash}"`
    }
  })

  test('50 watchers of one key are all answered by one write', async () => {
    const key = fresh()
    const tag = `"${(await put(key, { gen: 0 })).body.hash}"`
    const held = Array.from({ length: 50 }, () => watch(key, tag, '20s'))
    await Bun.sleep(200)
    const t0 = Date.now()
    await put(key, { gen: 1 })
    const all = await Promise.all(held)
    expect(Date.now() - t0).toBeLessThan(2000)
    expect(all.every((r) => r.status === 200 && r.body.gen === 1)).toBe(true)
  })

  test('a watch is held past the server\'s 30 s idle timeout (Elysia\'s default; contract waits go to 60 s)', async () => {
    const key = fresh()
    const tag = `"${(await put(key, 'x')).body.hash}"`
    const held = watch(key, tag, '45s')
    await Bun.sleep(31_000)
    await put(key, 'y')
    const r = await held
    expect(r.status).toBe(200)
    expect(r.body).toBe('y')
  }, 50_000)
})

describe('GET /api/events/history?after_id=&wait=', () => {
  test('holds until a matching event is published; other topics do not answer it', async () => {
    const after = await lastId()
    const held = timed(call(s.api, 'GET', `/api/events/history?after_id=${after}&wait=20s&topic=build.*`))
    await Bun.sleep(150)
    await call(s.api, 'POST', '/api/events/publish', { topic: 'deploy.done', data: 1 })
    await Bun.sleep(150)
    await call(s.api, 'POST', '/api/events/publish', { topic: 'build.done', data: { ok: true } })
    const [r, ms] = await held
    expect(r.status).toBe(200)
    expect(r.body).toEqual([expect.objectContaining({ topic: 'build.done', data: { ok: true }, source: '' })])
    expect(ms).toBeGreaterThanOrEqual(290)
    expect(ms).toBeLessThan(3000)
  })

  test('events already there are answered at once, oldest first', async () => {
    const after = await lastId()
    await call(s.api, 'POST', '/api/events/publish', { topic: 'early.one' })
    await call(s.api, 'POST', '/api/events/publish', { topic: 'early.two' })
    const [r, ms] = await timed(call(s.api, 'GET', `/api/events/history?after_id=${after}&wait=20s&topic=early.*`))
    expect(r.body.map((e: any) => e.topic)).toEqual(['early.one', 'early.two'])
    expect(ms).toBeLessThan(1000)
  })

  test('the source filter applies; nothing within wait: 200 []', async () => {
    const after = await lastId()
    const held = call(s.api, 'GET', `/api/events/history?after_id=${after}&wait=20s&source=state`)
    await Bun.sleep(100)
    await call(s.api, 'POST', '/api/events/publish', { topic: 'noise' })
    await put(fresh(), 1)
    const r = await held
    expect(r.body.map((e: any) => [e.topic, e.source])).toEqual([['state.changed', 'state']])
    const [none, ms] = await timed(call(s.api, 'GET', `/api/events/history?after_id=${await lastId()}&wait=400ms&topic=never.*`))
    expect(none).toMatchObject({ status: 200, body: [] })
    expect(ms).toBeGreaterThanOrEqual(380)
  })

  test('without after_id wait is ignored; a bad wait is 400', async () => {
    const [r, ms] = await timed(call(s.api, 'GET', '/api/events/history?wait=30s&last=1'))
    expect(r.status).toBe(200)
    expect(ms).toBeLessThan(1000)
    expect((await call(s.api, 'GET', '/api/events/history?after_id=0&wait=2m')).status).toBe(400)
    expect((await call(s.api, 'GET', '/api/events/history?after_id=0&wait=x')).status).toBe(400)
  })
})

describe('shutdown', () => {
  test('held watches and lock waits end at once when the server stops', async () => {
    const t = await startServer()
    try {
      const tag = `"${(await call(t.api, 'PUT', '/api/state/k', 1)).body.hash}"`
      const last = (await call(t.api, 'GET', '/api/events/history?last=1')).body[0].id
      const a = await register(t, 'a')
      const b = await register(t, 'b')
      await call(t.api, 'PUT', '/api/locks/l', {}, { 'x-instance-token': a.token })
      const held = [
        watch('k', tag, '60s', t),
        call(t.api, 'GET', `/api/events/history?after_id=${last + 100}&wait=60s`),
        call(t.api, 'PUT', '/api/locks/l', { wait_ms: 60_000 }, { 'x-instance-token': b.token }),
      ]
      await Bun.sleep(300)
      const t0 = Date.now()
      await t.stop()
      expect(Date.now() - t0).toBeLessThan(3000)
      expect(t.proc.exitCode).toBe(0)
      const [w, e, l] = await Promise.all(held)
      expect(w.status).toBe(304)
      expect(e).toMatchObject({ status: 200, body: [] })
      expect(l.status).toBe(409)
    } finally {
      await t.cleanup()
    }
  })
})

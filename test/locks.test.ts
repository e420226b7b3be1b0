// Locks over real HTTP: every status of the contract, waiting in line, races,
// TTL expiry, holders going stale or away, and grants surviving a restart.
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { call, eventually, register, startServer, type Agent, type TestServer } from './helpers'

let s: TestServer
beforeAll(async () => (s = await startServer()))
afterAll(() => s.cleanup())

const lock = (a: Pick<Agent, 'h'> | null, name: string, body?: unknown, server = s) => call(server.api, 'PUT', `/api/locks/${name}`, body, a?.h ?? {})
const unlock = (a: Pick<Agent, 'h'> | null, name: string, query = '', server = s) => call(server.api, 'DELETE', `/api/locks/${name}${query}`, undefined, a?.h ?? {})
const events = async (topic: string, server = s) => (await call(server.api, 'GET', `/api/events/history?topic=${topic}&last=500`)).body as any[]
let n = 0
const fresh = () => `lk-${++n}-${Math.random().toString(36).slice(2, 7)}`

describe('acquire', () => {
  test('a free lock is granted with a fence; lock.acquired is published and lock.acquire audited', async () => {
    const a = await register(s, 'alpha')
    const name = `${fresh()}/build`
    const r = await lock(a, name, { reason: 'deploying' })
    expect(r.status).toBe(200)
    expect(r.body).toEqual({ name, instance_id: a.id, fence: expect.any(Number), limit: 1, reason: 'deploying', acquired_at: expect.any(String), expires_at: null })
    expect(r.body.acquired_at).toMatch(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/)
    const ev = (await events('lock.acquired')).find((e) => e.data.name === name)
    expect(ev).toMatchObject({ source: 'coordination', data: { name, instance_id: a.id, fence: r.body.fence } })
    const audit = (await call(s.api, 'GET', `/api/audit?action=lock.acquire&actor=${a.id}`)).body
    expect(audit[0]).toMatchObject({ actor: a.id, action: 'lock.acquire', resource: `locks/${name}`, outcome: 'success' })
  })

  test('no body at all is a plain acquire', async () => {
    const a = await register(s, 'nobody')
    const r = await call(s.api, 'PUT', `/api/locks/${fresh()}`, undefined, a.h)
    expect(r.status).toBe(200)
    expect(r.body.limit).toBe(1)
  })

  test('re-acquiring renews: same fence, new TTL and reason', async () => {
    const a = await register(s, 'renewer')
    const name = fresh()
    const first = (await lock(a, name, { reason: 'one' })).body
    const again = await lock(a, name, { ttl_ms: 60_000, reason: 'two' })
    expect(again.status).toBe(200)
    expect(again.body).toMatchObject({ fence: first.fence, reason: 'two', acquired_at: first.acquired_at })
    const left = Date.parse(again.body.expires_at) - Date.now()
    expect(left).toBeGreaterThan(55_000)
    expect(left).toBeLessThanOrEqual(60_000)
    expect((await events('lock.acquired')).filter((e) => e.data.name === name)).toHaveLength(1)
  })

  test('a held lock is 409 naming its holder with liveness', async () => {
    const a = await register(s, 'holder')
    const b = await register(s, 'intruder')
    const name = fresh()
    const g = (await lock(a, name, { reason: 'mine', ttl_ms: 30_000 })).body
    const r = await lock(b, name)
    expect(r.status).toBe(409)
    expect(r.body).toEqual({
      error: 'lock is held',
      code: 409,
      holders: [{ instance_id: a.id, instance_name: 'holder', instance_status: 'active', fence: g.fence, reason: 'mine', acquired_at: g.acquired_at, expires_at: g.expires_at }],
    })
    // Error entries are written by the HTTP layer just after the answer.
    const audit = await eventually(async () => (await call(s.api, 'GET', `/api/audit?action=lock.acquire&actor=${b.id}`)).body[0])
    expect(audit).toMatchObject({ outcome: 'error', resource: `locks/${name}` })
  })

  test('X-Instance-Token is required (400) and must be known (403); bad input is 400 and grants nothing', async () => {
    const a = await register(s, 'checker')
    const name = fresh()
    expect(await lock(null, name)).toMatchObject({ status: 400, body: { error: 'X-Instance-Token is required', code: 400 } })
    expect(await lock({ h: { 'x-instance-token': 'f'.repeat(64) } }, name)).toMatchObject({
      status: 403,
      body: { error: 'unknown instance token: register again', code: 403 },
    })
    for (const body of [{ ttl_ms: 999 }, { ttl_ms: 604_800_001 }, { ttl_ms: 1.5 }, { wait_ms: 60_001 }, { wait_ms: -1 }, { limit: 0 }, { limit: 1001 }, { reason: 'x'.repeat(1001) }, { ttl_ms: 'soon' }]) {
      const r = await lock(a, name, body)
      expect(r.status).toBe(400)
      expect(r.body.code).toBe(400)
    }
    expect((await call(s.api, 'GET', `/api/locks/${name}`)).status).toBe(404)
  })
})

describe('both ways in', () => {
  test('a plain acquire and release (outside the framework) answer and audit as through the full route', async () => {
    const a = await register(s, 'parity')
    // A query sends the request through the framework's route; `?via=full` changes nothing else.
    const send = async (way: 'fast' | 'full', method: string, name: string, body?: string, headers: Record<string, string> = a.h) => {
      const r = await fetch(`${s.api}/api/locks/${way}/${name}${way === 'full' ? '?via=full' : ''}`, { method, body, headers: { 'content-type': 'application/json', ...headers } })
      const json = await r.json()
      return { status: r.status, type: r.headers.get('content-type'), body: { ...json, name: json.name && 'n', fence: json.fence && 'f', acquired_at: json.acquired_at && 't', expires_at: json.expires_at && 'e', holders: json.holders?.map((h: any) => h.instance_id) } }
    }
    const both = async (method: string, name: string, body?: string, headers?: Record<string, string>) => {
      const [fast, full] = [await send('fast', method, name, body, headers), await send('full', method, name, body, headers)]
      expect(fast).toEqual(full)
      return fast
    }
    expect(await both('PUT', 'k', '{"reason":"r","ttl_ms":60000}')).toEqual({
      status: 200,
      type: 'application/json;charset=utf-8',
      body: { name: 'n', instance_id: a.id, fence: 'f', limit: 1, reason: 'r', acquired_at: 't', expires_at: 'e' },
    })
    expect((await both('PUT', 'k')).body).toMatchObject({ reason: null, expires_at: null })
    expect((await both('PUT', 'k2', '')).status).toBe(200)
    expect((await both('PUT', 'k', '{"ttl_ms":"soon"}')).body).toMatchObject({ code: 400, error: expect.stringContaining('ttl_ms') })
    expect((await both('PUT', 'k', '{"limit":2}')).body).toEqual({ error: 'invalid limit: the lock is held with limit 1', code: 400 })
    expect((await both('PUT', 'k', '{"reason":')).body).toEqual({ error: 'request body must be JSON: not valid JSON', code: 400 })
    expect((await both('PUT', 'k', '[1]')).body).toEqual({ error: 'request body must be JSON: an object', code: 400 })
    expect((await both('PUT', 'k', '{"reason":"a\\u0000b"}')).body).toEqual({ error: 'text must not contain NUL bytes', code: 400 })
    expect((await both('PUT', 'k', '{}', {})).body).toEqual({ error: 'X-Instance-Token is required', code: 400 })
    expect((await both('PUT', 'k', '{}', { 'x-instance-token': 'nope' })).body).toEqual({ error: 'unknown instance token: register again', code: 403 })
    const b = await register(s, 'parity-other')
    expect((await both('PUT', 'k', '{}', b.h)).body).toEqual({ error: 'lock is held', code: 409, holders: [a.id] })
    expect((await both('DELETE', 'k', undefined, b.h)).body).toEqual({ error: 'lock is held by another instance', code: 403 })
    expect(await both('DELETE', 'k')).toEqual({ status: 200, type: 'application/json;charset=utf-8', body: { name: 'n', released: true } })
    expect((await both('DELETE', 'k')).body).toEqual({ error: 'lock not held', code: 404 })
    // The same audit entries, in the same order, for both ways in.
    const entries = (await call(s.api, 'GET', '/api/audit?limit=200')).body as any[]
    const of = (way: string) => entries.filter((e) => e.resource.startsWith(`locks/${way}/`)).map((e) => [e.action, e.resource.slice(6 + way.length), e.outcome, e.detail.replace(/\d+/g, 'N')])
    expect(of('fast')).toEqual(of('full'))
    expect(of('fast')).toHaveLength(14)
  })
})

describe('semaphores', () => {
  test('limit N admits N holders; a different limit while held is 400', async () => {
    const [a, b, c] = await Promise.all(['s1', 's2', 's3'].map((x) => register(s, x)))
    const name = fresh()
    expect((await lock(a, name, { limit: 2 })).body.limit).toBe(2)
    expect((await lock(b, name)).body.limit).toBe(2) // a later grant takes the lock's limit
    const full = await lock(c, name, { limit: 2 })
    expect(full.status).toBe(409)
    expect(full.body.holders.map((h: any) => h.instance_id)).toEqual([a.id, b.id])
    const other = await lock(c, name, { limit: 3 })
    expect(other).toMatchObject({ status: 400, body: { error: 'invalid limit: the lock is held with limit 2' } })
    expect((await lock(a, name, { limit: 5 })).status).toBe(400) // a holder too
  })
})

describe('read', () => {
  test('GET /api/locks lists held locks by name with holders; ?prefix; GET one; 404 when free', async () => {
    const a = await register(s, 'lister')
    const base = fresh()
    await lock(a, `${base}/b`)
    await lock(a, `${base}/a`, { limit: 3, reason: 'r' })
    await lock(a, `${fresh()}-other`)
    const list = (await call(s.api, 'GET', `/api/locks?prefix=${base}/`)).body
    expect(list.map((l: any) => l.name)).toEqual([`${base}/a`, `${base}/b`])
    expect(list[0]).toEqual({
      name: `${base}/a`,
      limit: 3,
      holders: [{ instance_id: a.id, instance_name: 'lister', instance_status: 'active', fence: expect.any(Number), reason: 'r', acquired_at: expect.any(String), expires_at: null }],
    })
    const all = (await call(s.api, 'GET', '/api/locks')).body.map((l: any) => l.name)
    expect(all).toEqual([...all].sort())
    expect((await call(s.api, 'GET', `/api/locks/${base}/a`)).body).toEqual(list[0])
    expect(await call(s.api, 'GET', `/api/locks/${base}/zzz`)).toMatchObject({ status: 404, body: { error: 'lock not held', code: 404 } })
  })
})

describe('release', () => {
  test('by the holder 200, by another 403, when free 404; lock.released reason released', async () => {
    const a = await register(s, 'rel-a')
    const b = await register(s, 'rel-b')
    const name = fresh()
    const g = (await lock(a, name)).body
    expect(await unlock(b, name)).toMatchObject({ status: 403, body: { code: 403 } })
    expect(await unlock(null, name)).toMatchObject({ status: 400, body: { error: 'X-Instance-Token is required' } })
    expect(await unlock(a, name)).toMatchObject({ status: 200, body: { name, released: true } })
    expect(await unlock(a, name)).toMatchObject({ status: 404, body: { error: 'lock not held', code: 404 } })
    const ev = (await events('lock.released')).find((e) => e.data.name === name)
    expect(ev).toMatchObject({ source: 'coordination', data: { name, instance_id: a.id, fence: g.fence, reason: 'released' } })
    const audit = await eventually(async () => {
      const list = (await call(s.api, 'GET', `/api/audit?action=lock.release&actor=${a.id}`)).body
      return list.length === 2 && list
    })
    expect(audit.map((e: any) => e.outcome)).toEqual(['error', 'success'])
  })

  test('?force=1 releases every holder without an instance token (reason forced)', async () => {
    const a = await register(s, 'f-a')
    const b = await register(s, 'f-b')
    const name = fresh()
    await lock(a, name, { limit: 2 })
    await lock(b, name)
    expect(await unlock(null, name, '?force=1')).toMatchObject({ status: 200, body: { name, released: true } })
    expect((await call(s.api, 'GET', `/api/locks/${name}`)).status).toBe(404)
    const ev = (await events('lock.released')).filter((e) => e.data.name === name)
    expect(ev.map((e) => [e.data.instance_id, e.data.reason]).sort()).toEqual([[a.id, 'forced'], [b.id, 'forced']].sort())
    expect((await unlock(null, name, '?force=1')).status).toBe(404)
    const audit = (await call(s.api, 'GET', `/api/audit?action=lock.release&actor=anonymous`)).body
    expect(audit.some((e: any) => e.resource === `locks/${name}` && e.outcome === 'success')).toBe(true)
  })
})

describe('waiting', () => {
  test('wait_ms holds the request until a release, first come first served', async () => {
    const [a, b, c, d] = await Promise.all(['w-a', 'w-b', 'w-c', 'w-d'].map((x) => register(s, x)))
    const name = fresh()
    await lock(a, name)
    const order: string[] = []
    const take = async (x: Agent) => {
      const r = await lock(x, name, { wait_ms: 10_000 })
      order.push(x.name)
      return r
    }
    const pb = take(b)
    await Bun.sleep(100)
    const pc = take(c)
    await Bun.sleep(100)
    const pd = take(d)
    await Bun.sleep(100)
    // A newcomer without wait_ms does not jump the line.
    expect((await lock(await register(s, 'w-late'), name)).status).toBe(409)
    await unlock(a, name)
    const rb = await pb
    expect(rb.status).toBe(200)
    await unlock(b, name)
    expect((await pc).status).toBe(200)
    await unlock(c, name)
    expect((await pd).status).toBe(200)
    expect(order).toEqual(['w-b', 'w-c', 'w-d'])
  })

  test('semaphore waiters get freed slots one per release, in arrival order', async () => {
    const [a, b, c, d, e] = await Promise.all(['sw-a', 'sw-b', 'sw-c', 'sw-d', 'sw-e'].map((x) => register(s, x)))
    const name = fresh()
    await lock(a, name, { limit: 2 })
    await lock(b, name)
    const got: string[] = []
    const take = (x: Agent) => lock(x, name, { wait_ms: 10_000 }).then((r) => (got.push(x.name), r))
    const pc = take(c)
    await Bun.sleep(80)
    const pd = take(d)
    await Bun.sleep(80)
    const pe = take(e)
    await Bun.sleep(80)
    await unlock(a, name)
    expect((await pc).status).toBe(200)
    await Bun.sleep(150)
    expect(got).toEqual(['sw-c'])
    await unlock(b, name)
    expect((await pd).status).toBe(200)
    await unlock(c, name)
    expect((await pe).status).toBe(200)
    expect(got).toEqual(['sw-c', 'sw-d', 'sw-e'])
    expect((await call(s.api, 'GET', `/api/locks/${name}`)).body.holders.map((h: any) => h.instance_name)).toEqual(['sw-d', 'sw-e'])
  })

  test('a waiter that hangs up leaves the line and is never granted the lock', async () => {
    const a = await register(s, 'hu-a')
    const b = await register(s, 'hu-b')
    const c = await register(s, 'hu-c')
    const name = fresh()
    await lock(a, name)
    const gone = new AbortController()
    const pb = fetch(`${s.api}/api/locks/${name}`, { method: 'PUT', headers: { ...b.h, 'content-type': 'application/json' }, body: JSON.stringify({ wait_ms: 10_000 }), signal: gone.signal }).catch(() => 'aborted')
    await Bun.sleep(100)
    const pc = lock(c, name, { wait_ms: 10_000 })
    await Bun.sleep(100)
    gone.abort()
    expect(await pb).toBe('aborted')
    await Bun.sleep(100)
    await unlock(a, name)
    const r = await pc
    expect(r.status).toBe(200)
    expect((await call(s.api, 'GET', `/api/locks/${name}`)).body.holders.map((h: any) => h.instance_name)).toEqual(['hu-c'])
  })

  test('a wait that runs out is 409 with the holders, after about wait_ms', async () => {
    const a = await register(s, 'wt-a')
    const b = await register(s, 'wt-b')
    const name = fresh()
    await lock(a, name)
    const t0 = Date.now()
    const r = await lock(b, name, { wait_ms: 400 })
    const took = Date.now() - t0
    expect(r.status).toBe(409)
    expect(r.body.holders[0].instance_id).toBe(a.id)
    expect(took).toBeGreaterThanOrEqual(380)
    expect(took).toBeLessThan(3000)
  })

  test('a waiter that gives up lets the next in line through', async () => {
    const [a, b, c] = await Promise.all(['g-a', 'g-b', 'g-c'].map((x) => register(s, x)))
    const name = fresh()
    await lock(a, name)
    const pb = lock(b, name, { wait_ms: 300 })
    await Bun.sleep(50)
    const pc = lock(c, name, { wait_ms: 5000 })
    expect((await pb).status).toBe(409)
    await unlock(a, name)
    expect((await pc).status).toBe(200)
  })
})

describe('races', () => {
  test('12 concurrent acquires of a free mutex: exactly one wins; semaphore of 3: exactly three', async () => {
    const agents = await Promise.all(Array.from({ length: 12 }, (_, i) => register(s, `racer-${i}`)))
    const mutex = fresh()
    const a = await Promise.all(agents.map((x) => lock(x, mutex)))
    expect(a.filter((r) => r.status === 200)).toHaveLength(1)
    expect(a.filter((r) => r.status === 409)).toHaveLength(11)
    const sem = fresh()
    const b = await Promise.all(agents.map((x) => lock(x, sem, { limit: 3 })))
    expect(b.filter((r) => r.status === 200)).toHaveLength(3)
    expect((await call(s.api, 'GET', `/api/locks/${sem}`)).body.holders).toHaveLength(3)
    const fences = [...a, ...b].filter((r) => r.status === 200).map((r) => r.body.fence)
    expect(new Set(fences).size).toBe(fences.length)
  })

  test('12 concurrent waiters on one mutex each get it exactly once, one at a time', async () => {
    const agents = await Promise.all(Array.from({ length: 12 }, (_, i) => register(s, `turn-${i}`)))
    const name = fresh()
    let inside = 0
    let most = 0
    const results = await Promise.all(
      agents.map(async (x) => {
        const r = await lock(x, name, { wait_ms: 30_000 })
        inside++
        most = Math.max(most, inside)
        await Bun.sleep(5)
        inside--
        await unlock(x, name)
        return r
      }),
    )
    expect(results.every((r) => r.status === 200)).toBe(true)
    expect(most).toBe(1)
    const fences = results.map((r) => r.body.fence)
    expect(new Set(fences).size).toBe(12)
  })
})

describe('expiry and liveness', () => {
  test('a TTL grant is released within a second after expires_at (reason expired)', async () => {
    const a = await register(s, 'ttl')
    const name = fresh()
    const g = (await lock(a, name, { ttl_ms: 1000 })).body
    await eventually(async () => (await call(s.api, 'GET', `/api/locks/${name}`)).status === 404, 4000, 20)
    const gone = Date.now()
    expect(gone - Date.parse(g.expires_at)).toBeLessThan(1000)
    const ev = (await events('lock.released')).find((e) => e.data.name === name)
    expect(ev.data).toEqual({ name, instance_id: a.id, fence: g.fence, reason: 'expired' })
  })

  test('a holder marked stale loses every lock (holder_stale); coming back it holds nothing; calls are heartbeats', async () => {
    const t = await startServer({ args: ['--stale-timeout', '400ms', '--liveness-interval', '1h'] })
    try {
      const a = await register(t, 'sleepy')
      const b = await register(t, 'busy')
      await lock(a, 'one', undefined, t)
      await lock(a, 'two', { limit: 2 }, t)
      await lock(b, 'mine', undefined, t)
      // b keeps calling (re-acquiring counts as a heartbeat); a stays silent.
      for (let i = 0; i < 5; i++) {
        await Bun.sleep(120)
        expect((await lock(b, 'mine', undefined, t)).status).toBe(200)
      }
      const check = (await call(t.api, 'POST', '/api/liveness/check')).body
      expect(check.newly_stale.map((i: any) => i.id)).toEqual([a.id])
      expect((await call(t.api, 'GET', '/api/locks', undefined)).body.map((l: any) => l.name)).toEqual(['mine'])
      const rel = (await events('lock.released', t)).map((e) => e.data)
      expect(rel.map((d) => [d.name, d.instance_id, d.reason]).sort()).toEqual([['one', a.id, 'holder_stale'], ['two', a.id, 'holder_stale']])
      // Any call of the stale holder, a read included, makes it active again, holding nothing it had.
      expect((await call(t.api, 'GET', '/api/locks', undefined, a.h)).body.map((l: any) => l.name)).toEqual(['mine'])
      expect((await call(t.api, 'GET', `/api/instances/${a.id}`)).body.status).toBe('active')
      const back = await lock(a, 'three', undefined, t)
      expect(back.status).toBe(200)
      expect((await call(t.api, 'GET', `/api/instances/${a.id}`)).body.status).toBe('active')
      expect((await call(t.api, 'GET', '/api/locks/one')).status).toBe(404)
    } finally {
      await t.cleanup()
    }
  })

  test('deregistering releases the instance\'s locks (holder_deregistered) and wakes waiters', async () => {
    const a = await register(s, 'leaver')
    const b = await register(s, 'heir')
    const name = fresh()
    await lock(a, name)
    const waiting = lock(b, name, { wait_ms: 10_000 })
    await Bun.sleep(100)
    expect((await call(s.api, 'DELETE', `/api/instances/${a.id}`)).status).toBe(200)
    const r = await waiting
    expect(r.status).toBe(200)
    expect(r.body.instance_id).toBe(b.id)
    const ev = (await events('lock.released')).find((e) => e.data.name === name)
    expect(ev.data.reason).toBe('holder_deregistered')
  })
})

describe('durability', () => {
  for (const how of ['stop', 'kill'] as const) {
    test(`grants, fences and deadlines survive a restart (${how === 'kill' ? 'kill -9' : 'SIGTERM'})`, async () => {
      const t = await startServer()
      let u: TestServer | null = null
      try {
        const a = await register(t, 'durable')
        const held = (await lock(a, 'kept', { ttl_ms: 600_000, reason: 'r' }, t)).body
        const view = (await call(t.api, 'GET', '/api/locks/kept')).body
        await (how === 'kill' ? t.kill() : t.stop())
        u = await startServer({ dataDir: t.dataDir })
        expect((await call(u.api, 'GET', '/api/locks/kept')).body).toEqual(view)
        expect(view.holders[0].expires_at).toBe(held.expires_at)
        // The holder still holds it (same fence on renewal); the fence counter carries on.
        expect((await lock(a, 'kept', { ttl_ms: 600_000 }, u)).body.fence).toBe(held.fence)
        expect((await lock(a, 'next', undefined, u)).body.fence).toBeGreaterThan(held.fence)
      } finally {
        await (u ?? t).cleanup()
      }
    })
  }

  test('a TTL that passed while the server was down is released right after the restart', async () => {
    const t = await startServer()
    let u: TestServer | null = null
    try {
      const a = await register(t, 'short')
      await lock(a, 'brief', { ttl_ms: 1000 }, t)
      await t.kill()
      await Bun.sleep(1100)
      u = await startServer({ dataDir: t.dataDir })
      await eventually(async () => (await call(u!.api, 'GET', '/api/locks/brief')).status === 404, 2000, 20)
      expect((await events('lock.released', u)).map((e) => e.data.reason)).toEqual(['expired'])
    } finally {
      await (u ?? t).cleanup()
    }
  })
})

describe('OpenAPI', () => {
  test('every coordination route and the watch parameters are documented', async () => {
    const doc = (await call(s.api, 'GET', '/openapi.json')).body
    const ops = (path: string) => Object.keys(doc.paths[path] ?? {}).sort()
    expect(ops('/api/locks')).toEqual(['get'])
    expect(ops('/api/locks/{name}')).toEqual(['delete', 'get', 'put'])
    expect(ops('/api/reservations')).toEqual(['get', 'post'])
    expect(ops('/api/reservations/check')).toEqual(['post'])
    expect(ops('/api/reservations/{id}')).toEqual(['delete', 'get'])
    expect(ops('/api/reservations/{id}/renew')).toEqual(['post'])
    const params = (path: string) => doc.paths[path].get.parameters.map((p: any) => p.name)
    expect(params('/api/state/{key}')).toContain('wait')
    expect(params('/api/events/history')).toContain('wait')
    expect(Object.keys(doc.paths['/api/locks/{name}'].put.requestBody.content['application/json'].schema.properties).sort()).toEqual(['limit', 'reason', 'ttl_ms', 'wait_ms'])
  })
})

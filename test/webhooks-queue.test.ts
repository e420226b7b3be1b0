// The webhook delivery queue (jobs/webhooks.ts): retries with backoff after a receiver
// blips, no head-of-line blocking (a dead receiver still disables the webhook within
// seconds), a disabled webhook's backlog sent oldest first on enable, redelivery of one
// delivery or everything since a time, PATCH, the deliveries list, and nothing lost
// across kill -9 (a spawned server restarted on its data dir). Real receivers on loopback.
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { createHmac } from 'node:crypto'
import { rmSync } from 'node:fs'
import { call, eventually, startServer, tempDir, type TestServer } from './helpers'
import { PG_BASE, databaseFor, pgBinaries, rawQuery, startCluster } from './pg'
import { MAX_ATTEMPTS, RETRY_CAP_MS, retryDelay } from '../jobs/webhooks'

type Received = { path: string; headers: Record<string, string>; body: any; raw: string; at: number }

const received: Received[] = []
/** Each path's answer: a status, or a queue of statuses answered first (then 200). */
const status: Record<string, number> = {}
const script: Record<string, number[]> = {}
const receiver = Bun.serve({
  hostname: '127.0.0.1',
  port: 0,
  async fetch(req) {
    const path = new URL(req.url).pathname
    const raw = await req.text()
    received.push({ path, headers: Object.fromEntries(req.headers), body: JSON.parse(raw), raw, at: Date.now() })
    return new Response('ok', { status: script[path]?.shift() ?? status[path] ?? 200 })
  },
})
const hookUrl = (path: string) => `http://127.0.0.1:${receiver.port}${path}`
const at = (path: string) => received.filter((r) => r.path === path)

let s: TestServer
beforeAll(async () => (s = await startServer()))
afterAll(async () => {
  receiver.stop(true)
  await s.cleanup()
})

const api = (method: string, path: string, body?: unknown) => call(s.api, method, path, body)
const publish = async (topic: string, data: unknown = null) => (await api('POST', '/api/events/publish', { topic, data })).body
const create = async (id: string, path: string, patterns: string[], extra: Record<string, unknown> = {}) => {
  const r = await api('POST', '/api/webhooks', { id, url: hookUrl(path), patterns, ...extra })
  expect(r.status).toBe(200)
  return r.body
}
const deliveries = async (id: string, query = '') => {
  const r = await api('GET', `/api/webhooks/${id}/deliveries${query}`)
  expect(r.status).toBe(200)
  return r.body.deliveries as any
}
const history = async (topic: string) => (await api('GET', `/api/events/history?topic=${topic}&last=100`)).body as any[]
const audit = async (action: string) => ((await api('GET', `/api/audit?action=${action}&limit=100`)).body as any[])

describe('retries', () => {
  test('the schedule: about 2 s, 10 s, 50 s, 4 min, 21 min, 1.7 h, 4 h (±20 %), given up after 8 attempts (about 6 h)', () => {
    const mid = Array.from({ length: MAX_ATTEMPTS - 1 }, (_, i) => retryDelay(i + 1, 0.5))
    expect(mid).toEqual([2000, 10_000, 50_000, 250_000, 1_250_000, 6_250_000, RETRY_CAP_MS])
    expect(retryDelay(1, 0)).toBe(1600)
    expect(retryDelay(1, 1)).toBe(2400)
    expect(retryDelay(20, 1)).toBe(RETRY_CAP_MS * 1.2)
    const hours = mid.reduce((a, b) => a + b, 0) / 3600_000
    expect(hours).toBeGreaterThan(5)
    expect(hours).toBeLessThan(7)
  })

  test('a receiver that blips is retried within a few seconds, with the same delivery id and body', async () => {
    await create('blip', '/blip', ['blip.*'], { secret: 'k' })
    script['/blip'] = [503]
    const e = await publish('blip.x', { n: 1 })
    await eventually(() => at('/blip').length === 1)
    // Listed as pending, with the failed attempt and when the next one is due.
    const [waiting] = await eventually(async () => {
      const list = await deliveries('blip')
      return list[0]?.attempts === 1 && list
    })
    expect(waiting).toMatchObject({ event_id: e.id, topic: 'blip.x', state: 'pending', attempts: 1, ok: false, status: 503, error: 'HTTP 503', test: false })
    const due = Date.parse(waiting.next_attempt_at) - Date.parse(waiting.at)
    expect(due).toBeGreaterThanOrEqual(1600)
    expect(due).toBeLessThanOrEqual(2400 + 100)

    await eventually(() => at('/blip').length === 2, 5000)
    const [first, retry] = at('/blip')
    expect(retry.at - first.at).toBeGreaterThanOrEqual(1500)
    expect(retry.at - first.at).toBeLessThan(3500)
    expect(retry.raw).toBe(first.raw)
    expect(retry.body).toEqual(e)
    expect(retry.headers['x-service-delivery']).toBe(first.headers['x-service-delivery'])
    expect(retry.headers['webhook-id']).toBe(first.headers['x-service-delivery'])
    expect(retry.headers['x-service-signature']).toBe(`sha256=${createHmac('sha256', 'k').update(retry.raw).digest('hex')}`)
    const [done] = await eventually(async () => {
      const list = await deliveries('blip')
      return list[0]?.state === 'delivered' && list
    })
    expect(done).toMatchObject({ state: 'delivered', attempts: 2, ok: true, status: 200, error: '', next_attempt_at: null, delivery: first.headers['x-service-delivery'] })
    // A success resets the count.
    expect((await api('GET', '/api/webhooks/blip')).body.fail_count).toBe(0)
  })

  test(`a delivery is failed for good at its ${MAX_ATTEMPTS}th failed attempt, and not tried again`, async () => {
    await create('doomed', '/doomed', ['doomed.*'])
    status['/doomed'] = 500
    const e = await publish('doomed.x')
    await eventually(async () => (await deliveries('doomed'))[0]?.attempts === 1)
    // Seven failed attempts in the past (hours of retries), the eighth due now: set behind the server's back.
    await rawQuery(s.dataDir, `UPDATE webhook_deliveries SET attempts = ?, next_attempt_at = '2000-01-01T00:00:00.000Z' WHERE webhook_id = 'doomed'`, MAX_ATTEMPTS - 1)
    const [d] = await eventually(async () => {
      const list = await deliveries('doomed')
      return list[0]?.state === 'failed' && list
    })
    expect(d).toMatchObject({ event_id: e.id, state: 'failed', attempts: MAX_ATTEMPTS, next_attempt_at: null, ok: false, status: 500, error: 'HTTP 500' })
    expect(at('/doomed').length).toBe(2)
    await Bun.sleep(2600)
    expect(at('/doomed').length).toBe(2)
    // Redelivery starts it over.
    delete status['/doomed']
    expect((await api('POST', `/api/webhooks/doomed/deliveries/${d.id}/redeliver`)).body).toMatchObject({ state: 'pending', attempts: 0 })
    await eventually(async () => (await deliveries('doomed'))[0]?.state === 'delivered')
  })

  test('no head-of-line blocking: new events go at once while an old one waits; a dead receiver is disabled within seconds', async () => {
    await create('dead', '/dead', ['dead.*'])
    status['/dead'] = 500
    const started = Date.now()
    const first = await publish('dead.x', 0)
    await eventually(async () => (await deliveries('dead'))[0]?.attempts === 1)
    // The first waits about 2 s for its retry; the next event does not wait for it.
    const second = await publish('dead.x', 1)
    await eventually(() => at('/dead').length === 2)
    expect(at('/dead')[1].body.id).toBe(second.id)
    expect(at('/dead')[1].at - started).toBeLessThan(1500)
    for (let i = 2; i < 10; i++) await publish('dead.x', i)
    const off = await eventually(async () => {
      const h = (await api('GET', '/api/webhooks/dead')).body
      return !h.active && h
    })
    const took = Date.now() - started
    expect(off.fail_count).toBe(10)
    expect(took).toBeLessThan(3000)
    // Ten attempts of ten different events: none of them a retry.
    expect(new Set(at('/dead').slice(0, 10).map((r) => r.body.id)).size).toBe(10)
    expect(at('/dead')[0].body.id).toBe(first.id)
    expect((await history('webhook.disabled')).some((e) => e.data.id === 'dead' && e.data.reason === 'failures')).toBe(true)
    // Disabled: the waiting retries are kept, and none is sent.
    await Bun.sleep(2600)
    expect(at('/dead').length).toBe(10)
    expect((await deliveries('dead', '?state=pending')).length).toBe(10)
  })

  test('a disabled webhook keeps its backlog; enable sends it oldest first; events while disabled are not delivered', async () => {
    await create('later', '/later', ['later.*'])
    status['/later'] = 503
    const sent = []
    for (let i = 0; i < 4; i++) sent.push(await publish('later.x', i))
    await eventually(() => at('/later').length === 4)
    expect((await api('POST', '/api/webhooks/later/disable')).body.active).toBe(false)
    await publish('later.x', 'while disabled')
    delete status['/later']
    await Bun.sleep(2600) // the first retries' time passes: nothing is sent while disabled
    expect(at('/later').length).toBe(4)
    const enabled = await api('POST', '/api/webhooks/later/enable')
    expect(enabled.body).toMatchObject({ active: true, fail_count: 0 })
    await eventually(() => at('/later').length === 8)
    expect(at('/later').slice(4).map((r) => r.body.id)).toEqual(sent.map((e) => e.id))
    await Bun.sleep(200)
    expect(at('/later').length).toBe(8)
    const event = (await history('webhook.enabled')).find((e) => e.data.id === 'later')
    expect(event.data).toEqual({ id: 'later', reason: 'api', backlog: 4 })
    const list = await eventually(async () => {
      const l = await deliveries('later')
      return l.every((d: any) => d.state === 'delivered') && l
    })
    expect(list.map((d: any) => d.attempts)).toEqual([2, 2, 2, 2])
  })
})

describe('which webhooks take an event', () => {
  test('those active when it was published, however soon a disable or enable follows', async () => {
    await create('flip', '/flip', ['flip.*'])
    const before: number[] = []
    const during: number[] = []
    for (let i = 0; i < 10; i++) {
      before.push((await publish('flip.before', i)).id)
      await api('POST', '/api/webhooks/flip/disable')
      during.push((await publish('flip.during', i)).id)
      await api('POST', '/api/webhooks/flip/enable')
    }
    // Each event published before a disable is delivered (at once, or from the backlog on enable); none published while disabled.
    await eventually(() => new Set(at('/flip').map((r) => r.body.id)).size >= 10)
    await Bun.sleep(300)
    const got = new Set(at('/flip').map((r) => r.body.id))
    expect([...got].filter((id) => during.includes(id))).toEqual([])
    expect(before.filter((id) => !got.has(id))).toEqual([])
  })
})

describe('redelivery', () => {
  test('one delivery: sent again with the same delivery id; 404, 400 and 409 change nothing', async () => {
    await create('again', '/again', ['again.*'])
    const e = await publish('again.x', { n: 1 })
    const [d] = await eventually(async () => {
      const list = await deliveries('again')
      return list[0]?.state === 'delivered' && list
    })
    const r = await api('POST', `/api/webhooks/again/deliveries/${d.id}/redeliver`)
    expect(r.status).toBe(200)
    expect(r.body).toMatchObject({ id: d.id, delivery: d.delivery, event_id: e.id, state: 'pending', attempts: 0 })
    await eventually(() => at('/again').length === 2)
    expect(at('/again')[1].raw).toBe(at('/again')[0].raw)
    expect(at('/again')[1].headers['x-service-delivery']).toBe(d.delivery)
    await eventually(async () => (await deliveries('again'))[0].state === 'delivered')

    expect((await api('POST', '/api/webhooks/again/test')).status).toBe(200)
    const test = (await deliveries('again'))[0]
    expect(test).toMatchObject({ test: true, event_id: 0, topic: 'webhook.test', state: 'delivered' })
    const cases: [string, number, string][] = [
      [`/api/webhooks/again/deliveries/999999/redeliver`, 404, 'webhook again has no delivery 999999: GET /api/webhooks/again/deliveries lists them'],
      [`/api/webhooks/nope/deliveries/${d.id}/redeliver`, 404, 'webhook not found'],
      [`/api/webhooks/again/deliveries/abc/redeliver`, 400, 'invalid delivery: expected a delivery id (a positive integer), got "abc"'],
      [`/api/webhooks/again/deliveries/${test.id}/redeliver`, 409, `delivery ${test.id} is a test delivery: send another with POST /api/webhooks/again/test`],
    ]
    for (const [path, code, error] of cases) {
      const bad = await api('POST', path)
      expect({ path, status: bad.status, body: bad.body }).toEqual({ path, status: code, body: { error, code } })
    }
    await Bun.sleep(100)
    expect(at('/again').map((x) => x.body.topic)).toEqual(['again.x', 'again.x', 'webhook.test'])
    expect((await history('webhook.redelivered')).filter((e) => e.data.id === 'again').map((e) => e.data)).toEqual([{ id: 'again', deliveries: [d.id] }])
    const entries = await audit('webhook.redeliver')
    expect(entries.filter((a) => a.resource === `webhooks/again/deliveries/${d.id}/redeliver` && a.outcome === 'success')).toHaveLength(1)
    expect(entries.filter((a) => a.resource.startsWith('webhooks/again/') && a.outcome === 'error').length).toBeGreaterThanOrEqual(3)
  })

  test('everything since a time, oldest first; 400 on a missing or bad since', async () => {
    await create('since', '/since', ['since.*'])
    const first = await publish('since.x', 0)
    await eventually(() => at('/since').length === 1)
    await Bun.sleep(20)
    const from = new Date().toISOString()
    const later = [await publish('since.x', 1), await publish('since.x', 2)]
    await eventually(async () => (await deliveries('since')).filter((d: any) => d.state === 'delivered').length === 3)

    for (const [body, error] of [
      [{}, 'since is required'],
      [{ since: 'yesterday' }, 'invalid since: expected an RFC 3339 timestamp'],
    ] as const) {
      const bad = await api('POST', '/api/webhooks/since/redeliver', body)
      expect(bad.status).toBe(400)
      expect(bad.body.error).toStartWith(error)
    }
    expect((await api('POST', '/api/webhooks/nope/redeliver', { since: from })).status).toBe(404)
    await Bun.sleep(100)
    expect(at('/since').length).toBe(3)

    const r = await api('POST', '/api/webhooks/since/redeliver', { since: from })
    expect(r.status).toBe(200)
    expect(r.body).toEqual({ id: 'since', since: from, redelivered: 2, active: true })
    await eventually(() => at('/since').length === 5)
    expect(at('/since').map((x) => x.body.id)).toEqual([first.id, ...later.map((e) => e.id), ...later.map((e) => e.id)])
    expect((await history('webhook.redelivered')).find((e) => e.data.id === 'since').data).toEqual({ id: 'since', since: from, count: 2 })
  })
})

describe('PATCH /api/webhooks/{id}', () => {
  test('url, patterns and secret change; the secret is never answered; pending deliveries follow the new url', async () => {
    await create('moving', '/old', ['move.a'], { secret: 'first' })
    status['/old'] = 500
    const pending = await publish('move.a', 'to the old url first')
    await eventually(async () => (await api('GET', '/api/webhooks/moving')).body.fail_count === 1)

    const r = await api('PATCH', '/api/webhooks/moving', { url: hookUrl('/new'), patterns: ['move.*'], secret: 'second' })
    expect(r.status).toBe(200)
    expect(Object.keys(r.body).sort()).toEqual(['active', 'created_at', 'fail_count', 'id', 'last_fired', 'patterns', 'url'])
    expect(r.body).toMatchObject({ id: 'moving', url: hookUrl('/new'), patterns: ['move.*'], active: true, fail_count: 1 })
    expect(r.text).not.toContain('second')
    // The waiting delivery is due at once on a new url: fail_count and last_fired may move meanwhile.
    const { id, url, patterns, created_at } = (await api('GET', '/api/webhooks/moving')).body
    expect({ id, url, patterns, created_at }).toEqual({ id: 'moving', url: hookUrl('/new'), patterns: ['move.*'], created_at: r.body.created_at })

    // The waiting retry goes to the new url, signed with the new secret; a new event matches the new patterns.
    const fresh = await publish('move.b', 'new pattern')
    await eventually(() => at('/new').length === 2, 5000)
    expect(at('/new').map((x) => x.body.id).sort()).toEqual([pending.id, fresh.id].sort())
    for (const got of at('/new')) expect(got.headers['x-service-signature']).toBe(`sha256=${createHmac('sha256', 'second').update(got.raw).digest('hex')}`)
    const event = (await history('webhook.updated')).find((e) => e.data.id === 'moving')
    expect(event.data).toEqual({ id: 'moving', url: hookUrl('/new'), patterns: ['move.*'], changed: ['url', 'patterns', 'secret'] })
    expect(JSON.stringify(event)).not.toContain('second')
    expect((await audit('webhook.update')).some((a) => a.resource === 'webhooks/moving' && a.outcome === 'success')).toBe(true)

    // Only the secret: "" stops signing.
    expect((await api('PATCH', '/api/webhooks/moving', { secret: '' })).status).toBe(200)
    await publish('move.c')
    await eventually(() => at('/new').length === 3)
    expect(at('/new')[2].headers['x-service-signature']).toBeUndefined()
  })

  test('400 on bad input and 404 on an unknown webhook; nothing changes', async () => {
    const before = await create('steady', '/steady', ['steady.*'])
    const cases: [unknown, string][] = [
      [{}, 'nothing to change: send at least one of url, patterns, secret'],
      [{ url: 'not a url' }, 'invalid url: expected an absolute http or https URL'],
      [{ url: 'ftp://example.com/x' }, 'invalid url: expected an absolute http or https URL'],
      [{ patterns: [] }, 'invalid patterns: expected at least one topic glob'],
      [{ patterns: ['a.*', ' '] }, 'invalid patterns: a pattern must not be empty'],
      [{ url: hookUrl('/x'), patterns: [] }, 'invalid patterns: expected at least one topic glob'],
    ]
    for (const [body, error] of cases) {
      const r = await api('PATCH', '/api/webhooks/steady', body)
      expect({ body, status: r.status, answer: r.body }).toEqual({ body, status: 400, answer: { error, code: 400 } })
    }
    const wrongType = await api('PATCH', '/api/webhooks/steady', { patterns: 'a.*' })
    expect([wrongType.status, wrongType.body.code]).toEqual([400, 400])
    const unknown = await api('PATCH', '/api/webhooks/nope', { url: hookUrl('/x') })
    expect([unknown.status, unknown.body]).toEqual([404, { error: 'webhook not found', code: 404 }])
    const { last_fired, ...now } = (await api('GET', '/api/webhooks/steady')).body
    expect(now).toEqual(before)
  })
})

describe('the deliveries list', () => {
  test('newest first, filtered by state, paged with before and limit; 400 on bad parameters', async () => {
    await create('listed', '/listed', ['listed.*'])
    script['/listed'] = [500, 500]
    const events = []
    for (let i = 0; i < 5; i++) events.push(await publish('listed.x', i))
    await eventually(async () => {
      const list = await deliveries('listed')
      return list.length === 5 && list.every((d: any) => d.attempts >= 1)
    })
    const all = await deliveries('listed')
    expect(all.map((d: any) => d.event_id)).toEqual(events.map((e) => e.id).reverse())
    const pending = await deliveries('listed', '?state=pending')
    expect(pending.map((d: any) => d.event_id)).toEqual([events[1].id, events[0].id])
    expect((await deliveries('listed', '?state=delivered')).length).toBe(3)
    const page = await deliveries('listed', '?limit=2')
    expect(page.map((d: any) => d.event_id)).toEqual([events[4].id, events[3].id])
    const next = await deliveries('listed', `?limit=2&before=${page[1].id}`)
    expect(next.map((d: any) => d.event_id)).toEqual([events[2].id, events[1].id])
    for (const [query, error] of [
      ['?state=done', 'invalid state: expected pending, delivered, failed'],
      ['?limit=0', 'invalid limit: expected an integer >= 1'],
      ['?limit=201', 'invalid limit: expected an integer >= 1 and <= 200'],
      ['?before=x', 'invalid before: expected an integer >= 1'],
    ]) {
      const r = await api('GET', `/api/webhooks/listed/deliveries${query}`)
      expect({ query, status: r.status, body: r.body }).toEqual({ query, status: 400, body: { error, code: 400 } })
    }
  })
})

describe('durability', () => {
  test('kill -9 while a delivery waits for its retry, and right after publishing: nothing is lost after the restart', async () => {
    const dir = tempDir()
    let a: TestServer | null = await startServer({ dataDir: dir })
    let b: TestServer | null = null
    try {
      const url = (path: string) => hookUrl(path)
      expect((await call(a.api, 'POST', '/api/webhooks', { id: 'crash', url: url('/crash'), patterns: ['crash.*'] })).status).toBe(200)
      expect((await call(a.api, 'POST', '/api/webhooks', { id: 'burst', url: url('/burst'), patterns: ['burst.*'] })).status).toBe(200)
      status['/crash'] = 503
      const waiting = (await call(a.api, 'POST', '/api/events/publish', { topic: 'crash.x', data: 'retry me' })).body
      await eventually(async () => (await call(a!.api, 'GET', '/api/webhooks/crash/deliveries')).body.deliveries[0]?.attempts === 1)
      // A burst of events, then kill -9 at once: some may not have been queued, or not sent, yet.
      const burst = []
      for (let i = 0; i < 30; i++) burst.push((await call(a.api, 'POST', '/api/events/publish', { topic: 'burst.x', data: i })).body)
      await a.kill()
      a = null
      delete status['/crash']
      const first = at('/crash')[0]
      // On a slow machine the burst can outlast the first retry's delay (about 2 s): count what went before the kill.
      const tried = at('/crash').length

      b = await startServer({ dataDir: dir })
      // The retry comes from the restarted server: same delivery id and body.
      await eventually(() => at('/crash').length === tried + 1, 8000)
      const retry = at('/crash')[tried]
      expect(retry.raw).toBe(first.raw)
      expect(retry.body.id).toBe(waiting.id)
      expect(retry.headers['x-service-delivery']).toBe(first.headers['x-service-delivery'])
      // Every event of the burst is delivered (at least once).
      await eventually(() => new Set(at('/burst').map((r) => r.body.id)).size === 30, 8000)
      expect([...new Set(at('/burst').map((r) => r.body.id))].sort((x, y) => x - y)).toEqual(burst.map((e) => e.id))
      // Recorded once the receiver's answer is in.
      const [done] = await eventually(async () => {
        const list = (await call(b!.api, 'GET', '/api/webhooks/crash/deliveries')).body.deliveries
        return list[0]?.state === 'delivered' && list
      })
      expect(done).toMatchObject({ event_id: waiting.id, state: 'delivered', attempts: tried + 1 })

      // An event that committed but was never queued (the server died in between), written here behind
      // the server's back while it is down: the next start catches up from the queue's cursor and sends it.
      await b.stop()
      b = null
      const created = new Date().toISOString()
      if (PG_BASE) {
        await rawQuery(dir, `INSERT INTO events (id, topic, data, source, created_at) SELECT value + 1, 'burst.offline', '{"n":1}', '', ? FROM event_counter`, created)
        await rawQuery(dir, 'UPDATE event_counter SET value = value + 1')
      } else await rawQuery(dir, `INSERT INTO events (topic, data, source, created_at) VALUES ('burst.offline', '{"n":1}', '', ?)`, created)
      b = await startServer({ dataDir: dir })
      const offline = await eventually(() => at('/burst').find((r) => r.body.topic === 'burst.offline'), 8000)
      expect(offline!.body).toMatchObject({ topic: 'burst.offline', data: { n: 1 }, created_at: created })
    } finally {
      await a?.kill()
      await b?.cleanup()
      rmSync(dir, { recursive: true, force: true })
    }
  }, 40_000)

  test.skipIf(!PG_BASE)('PostgreSQL: when the leader dies, the replica taking over sends the pending deliveries', async () => {
    const url = await databaseFor(tempDir('muster-webhook-replicas-'))
    const replica = () => startServer({ args: ['--database', url, '--log-level', 'info'] })
    let leader: TestServer | null = await replica()
    await eventually(() => leader!.stdout().includes('now runs the jobs'), 10_000)
    const other = await replica()
    try {
      expect((await call(other.api, 'POST', '/api/webhooks', { id: 'handover', url: hookUrl('/handover'), patterns: ['handover.*'] })).status).toBe(200)
      status['/handover'] = 503
      const e = (await call(other.api, 'POST', '/api/events/publish', { topic: 'handover.x' })).body
      await eventually(() => at('/handover').length === 1)
      await leader.kill()
      leader = null
      delete status['/handover']
      await eventually(() => at('/handover').length >= 2, 10_000)
      expect(at('/handover').every((r) => r.body.id === e.id)).toBe(true)
      await eventually(async () => (await call(other.api, 'GET', '/api/webhooks/handover/deliveries')).body.deliveries[0]?.state === 'delivered')
    } finally {
      await leader?.cleanup()
      await other.cleanup()
    }
  }, 40_000)

  test.skipIf(!PG_BASE || !pgBinaries())('PostgreSQL: a pending delivery survives a database outage and goes once it is back', async () => {
    // A cluster of its own: the suite's shared one must keep running. Durable, as it is stopped with
    // `-m immediate`: without synchronous commits that loses the last commits it acknowledged.
    const cluster = await startCluster(pgBinaries()!, { durable: true })
    let server: TestServer | null = null
    try {
      const sql = new (await import('bun')).SQL(`${cluster.url}/postgres`)
      await sql.unsafe('CREATE DATABASE muster_outage')
      await sql.close()
      server = await startServer({ args: ['--database', `${cluster.url}/muster_outage`] })
      expect((await call(server.api, 'POST', '/api/webhooks', { id: 'outage', url: hookUrl('/outage'), patterns: ['outage.*'] })).status).toBe(200)
      status['/outage'] = 503
      const e = (await call(server.api, 'POST', '/api/events/publish', { topic: 'outage.x' })).body
      await eventually(() => at('/outage').length === 1, 10_000)
      await cluster.down()
      delete status['/outage']
      await Bun.sleep(3000) // its retry falls due while the database is away
      await cluster.up()
      await eventually(() => at('/outage').length >= 2, 15_000)
      expect(at('/outage').every((r) => r.body.id === e.id)).toBe(true)
      const after = (await call(server.api, 'POST', '/api/events/publish', { topic: 'outage.y' })).body
      await eventually(() => at('/outage').some((r) => r.body.id === after.id), 10_000)
    } finally {
      await server?.cleanup()
      await cluster.stop()
    }
  }, 60_000)
})

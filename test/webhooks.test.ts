import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { createHmac } from 'node:crypto'
import { verify as verifyGithubStyle } from '@octokit/webhooks-methods'
import { Webhook } from 'standardwebhooks'
import { call, eventually, startServer, type TestServer } from './helpers'

type Received = { path: string; headers: Record<string, string>; body: string; at: number }

// A real HTTP receiver: the path picks the behaviour.
const received: Received[] = []
const statusOf: Record<string, number> = { '/ok': 200, '/fail': 500, '/flaky': 200 }
const receiver = Bun.serve({
  hostname: '127.0.0.1',
  port: 0,
  async fetch(req) {
    const path = new URL(req.url).pathname
    received.push({ path, headers: Object.fromEntries(req.headers), body: await req.text(), at: performance.now() })
    if (path === '/slow') await Bun.sleep(400)
    if (path === '/hang') await Bun.sleep(7000)
    return new Response('thanks', { status: statusOf[path] ?? 200 })
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
const hook = async (id: string) => (await api('GET', `/api/webhooks/${id}`)).body
const create = async (body: Record<string, unknown>) => {
  const r = await api('POST', '/api/webhooks', body)
  expect(r.status).toBe(200)
  return r.body
}
const hmac = (secret: string, body: string) => `sha256=${createHmac('sha256', secret).update(body).digest('hex')}`
/** A Standard Webhooks verifier for one of our secrets: the key is the secret's UTF-8 bytes (docs/api/webhooks.md). */
const standardVerifier = (secret: string) => new Webhook(`whsec_${Buffer.from(secret, 'utf8').toString('base64')}`)

/** Checks a delivery the way receivers do, with the two libraries; throws when either rejects it. */
async function expectVerified(r: Received, secret: string): Promise<void> {
  expect(await verifyGithubStyle(secret, r.body, r.headers['x-service-signature']!)).toBe(true)
  expect(await verifyGithubStyle(`${secret}x`, r.body, r.headers['x-service-signature']!)).toBe(false)
  expect(r.headers['webhook-id']).toBe(r.headers['x-service-delivery'])
  expect(Math.abs(Number(r.headers['webhook-timestamp']) - Date.now() / 1000)).toBeLessThan(10)
  expect(standardVerifier(secret).verify(r.body, r.headers)).toEqual(JSON.parse(r.body))
  expect(() => standardVerifier(`${secret}x`).verify(r.body, r.headers)).toThrow()
  // The signature covers the body and the id: neither can be swapped.
  expect(() => standardVerifier(secret).verify(r.body.replace('}', ',"x":1}'), r.headers)).toThrow()
  expect(() => standardVerifier(secret).verify(r.body, { ...r.headers, 'webhook-id': 'other' })).toThrow()
}

describe('webhook resource', () => {
  test('create with defaults; the secret is never returned', async () => {
    const r = await api('POST', '/api/webhooks', { id: 'basic', url: hookUrl('/ok'), secret: 'very-secret-value' })
    expect(r.status).toBe(200)
    expect(Object.keys(r.body).sort()).toEqual(['active', 'created_at', 'fail_count', 'id', 'patterns', 'url'])
    expect(r.body).toMatchObject({ id: 'basic', url: hookUrl('/ok'), patterns: ['*'], active: true, fail_count: 0 })
    expect(new Date(r.body.created_at).toISOString()).toBe(r.body.created_at)
    const list = await api('GET', '/api/webhooks')
    expect(list.status).toBe(200)
    // last_fired may already be set: a `*` webhook receives its own webhook.created event (a ping, as GitHub sends).
    expect(list.body.map(({ last_fired, ...w }: any) => w)).toEqual([r.body])
    await eventually(() => at('/ok').some((d) => JSON.parse(d.body).topic === 'webhook.created' && JSON.parse(d.body).data.id === 'basic'))
    expect(list.text).not.toContain('very-secret-value')
    expect((await api('GET', '/api/webhooks/basic')).text).not.toContain('secret')
  })

  test('409 on a duplicate id; the original is untouched', async () => {
    const before = await api('GET', '/api/webhooks')
    const r = await api('POST', '/api/webhooks', { id: 'basic', url: hookUrl('/other') })
    expect(r.status).toBe(409)
    expect(r.body).toEqual({ error: 'webhook basic already exists', code: 409 })
    // Its deliveries may go on meanwhile (it matches every event): compare what defines it.
    const defined = (list: any[]) => list.map(({ id, url, patterns, created_at, active }) => ({ id, url, patterns, created_at, active }))
    expect(defined((await api('GET', '/api/webhooks')).body)).toEqual(defined(before.body))
  })

  test('400 on invalid input; nothing stored', async () => {
    const cases: [unknown, string][] = [
      [{ url: hookUrl('/ok') }, 'id is required'],
      [{ id: '', url: hookUrl('/ok') }, 'id is required'],
      [{ id: 'a/b', url: hookUrl('/ok') }, 'invalid id: at most 200 characters, without "/" or whitespace'],
      [{ id: 'nourl' }, 'url is required'],
      [{ id: 'badurl', url: 'not a url' }, 'invalid url: expected an absolute http or https URL'],
      [{ id: 'ftp', url: 'ftp://example.com/x' }, 'invalid url: expected an absolute http or https URL'],
      [{ id: 'nopat', url: hookUrl('/ok'), patterns: [] }, 'invalid patterns: expected at least one topic glob'],
      [{ id: 'emptypat', url: hookUrl('/ok'), patterns: ['a.*', ''] }, 'invalid patterns: a pattern must not be empty'],
    ]
    for (const [body, error] of cases) {
      const r = await api('POST', '/api/webhooks', body)
      expect({ body, status: r.status, answer: r.body }).toEqual({ body, status: 400, answer: { error, code: 400 } })
    }
    const wrongType = await api('POST', '/api/webhooks', { id: 'x', url: hookUrl('/ok'), patterns: 'a.*' })
    expect(wrongType.status).toBe(400)
    expect(wrongType.body.code).toBe(400)
    expect((await api('GET', '/api/webhooks')).body.map((w: any) => w.id)).toEqual(['basic'])
  })

  test('delete: {deleted}, then 404; audited', async () => {
    await create({ id: 'doomed', url: hookUrl('/ok') })
    const r = await api('DELETE', '/api/webhooks/doomed')
    expect(r.status).toBe(200)
    expect(r.body).toEqual({ deleted: 'doomed' })
    const again = await api('DELETE', '/api/webhooks/doomed')
    expect(again.status).toBe(404)
    expect(again.body).toEqual({ error: 'webhook not found', code: 404 })
    const audit = await eventually(async () => {
      const list = (await api('GET', '/api/audit?limit=100')).body as { action: string; resource: string; outcome: string }[]
      return list.some((a) => a.action === 'webhook.delete' && a.outcome === 'error') && list
    })
    expect(audit).toContainEqual(expect.objectContaining({ action: 'webhook.delete', resource: 'webhooks/doomed', outcome: 'success' }))
    expect(audit).toContainEqual(expect.objectContaining({ action: 'webhook.create', resource: 'webhooks', outcome: 'success' }))
    expect(audit).toContainEqual(expect.objectContaining({ action: 'webhook.create', outcome: 'error' }))
  })

  test('unknown ids are 404 on every per-webhook route', async () => {
    for (const [method, path] of [
      ['GET', '/api/webhooks/nope'],
      ['POST', '/api/webhooks/nope/test'],
      ['POST', '/api/webhooks/nope/enable'],
      ['POST', '/api/webhooks/nope/disable'],
      ['GET', '/api/webhooks/nope/deliveries'],
    ]) {
      const r = await api(method, path)
      expect({ path, status: r.status, body: r.body }).toEqual({ path, status: 404, body: { error: 'webhook not found', code: 404 } })
    }
  })
})

describe('delivery', () => {
  test('matching events are POSTed with the event body and a verifiable signature', async () => {
    await create({ id: 'signed', url: hookUrl('/signed'), patterns: ['deliv.*', 'also.this'], secret: 's3cret' })
    const a = await publish('deliv.x', { n: 1 })
    await publish('deliv.x.y', 'deeper: no match')
    await publish('other.topic', 'no match')
    const b = await publish('also.this', [1, 2])
    await eventually(() => at('/signed').length >= 2)
    await Bun.sleep(100) // nothing else arrives
    const got = at('/signed')
    expect(got.map((r) => JSON.parse(r.body))).toEqual([a, b])
    for (const r of got) {
      expect(r.headers['content-type']).toBe('application/json')
      expect(r.headers['x-service-event']).toBe(JSON.parse(r.body).topic)
      expect(r.headers['x-service-delivery']).toMatch(/^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/)
      expect(r.headers['x-service-signature']).toBe(hmac('s3cret', r.body))
      expect(r.headers['x-service-signature']).not.toBe(hmac('wrong', r.body))
      await expectVerified(r, 's3cret')
    }
    expect(got[0].headers['x-service-delivery']).not.toBe(got[1].headers['x-service-delivery'])
    const w = await eventually(async () => {
      const h = await hook('signed')
      return h.last_fired && h
    })
    expect(w).toMatchObject({ active: true, fail_count: 0 })
  })

  test('without a secret there is no signature header', async () => {
    await create({ id: 'plain', url: hookUrl('/plain'), patterns: ['plain.*'] })
    const e = await publish('plain.x')
    await eventually(() => at('/plain').length === 1)
    expect(JSON.parse(at('/plain')[0].body)).toEqual(e)
    for (const name of ['x-service-signature', 'webhook-id', 'webhook-timestamp', 'webhook-signature'])
      expect(at('/plain')[0].headers[name]).toBeUndefined()
  })

  test('each webhook has its own queue: a slow receiver does not delay another', async () => {
    await create({ id: 'slowpoke', url: hookUrl('/slow'), patterns: ['queue.*'] })
    await create({ id: 'quick', url: hookUrl('/quick'), patterns: ['queue.*'] })
    const started = performance.now()
    const sent = []
    for (let i = 0; i < 3; i++) sent.push(await publish('queue.x', i))
    await eventually(() => at('/quick').length === 3)
    expect(at('/quick').at(-1)!.at - started).toBeLessThan(400)
    expect(at('/slow').length).toBeLessThan(3) // still working through its queue
    await eventually(() => at('/slow').length === 3, 5000)
    // one at a time, in publish order
    expect(at('/slow').map((r) => JSON.parse(r.body).id)).toEqual(sent.map((e) => e.id))
    expect(at('/slow')[2].at - at('/slow')[0].at).toBeGreaterThanOrEqual(750)
    await api('DELETE', '/api/webhooks/slowpoke')
    await api('DELETE', '/api/webhooks/quick')
  })

  test('a deleted webhook gets nothing more', async () => {
    await create({ id: 'gone', url: hookUrl('/gone'), patterns: ['gone.*'] })
    await publish('gone.a')
    await eventually(() => at('/gone').length === 1)
    await api('DELETE', '/api/webhooks/gone')
    await publish('gone.b')
    await Bun.sleep(150)
    expect(at('/gone').length).toBe(1)
  })

  test('10 consecutive failures disable the webhook; enable resets it and sends the backlog; a success resets fail_count', async () => {
    await create({ id: 'failing', url: hookUrl('/fail'), patterns: ['fail.*'] })
    const published: number[] = []
    for (let i = 0; i < 12; i++) published.push((await publish('fail.x', i)).id)
    const disabled = await eventually(async () => {
      const h = await hook('failing')
      return !h.active && h
    })
    expect(disabled.fail_count).toBe(10)
    expect(disabled.last_fired).toBeString()
    await Bun.sleep(150)
    expect(at('/fail').length).toBe(10) // the queued rest were not tried
    await publish('fail.x', 'while disabled')
    await Bun.sleep(150)
    expect(at('/fail').length).toBe(10)

    // Its backlog: the 10 failed ones and any of the 12 published before the tenth failure disabled it.
    const backlog = ((await api('GET', '/api/webhooks/failing/deliveries?state=pending&limit=200')).body.deliveries as any[]).map((d) => d.event_id).reverse()
    expect(backlog.slice(0, 10)).toEqual(published.slice(0, 10))
    expect(published.slice(0, backlog.length)).toEqual(backlog)
    // The receiver is back: enabling sends the backlog, oldest first; not the one published while disabled.
    statusOf['/fail'] = 200
    const enabled = await api('POST', '/api/webhooks/failing/enable')
    expect(enabled.status).toBe(200)
    expect(enabled.body).toMatchObject({ id: 'failing', active: true, fail_count: 0 })
    await eventually(() => at('/fail').length === 10 + backlog.length)
    await Bun.sleep(150)
    expect(at('/fail').slice(10).map((r) => JSON.parse(r.body).id)).toEqual(backlog)
    statusOf['/fail'] = 500
    // three more failures count up from zero; one success resets to zero
    for (let i = 0; i < 3; i++) await publish('fail.x', `again ${i}`)
    await eventually(async () => (await hook('failing')).fail_count === 3)
    statusOf['/fail'] = 200
    const ok = await publish('fail.x', 'recovered')
    await eventually(() => at('/fail').some((r) => JSON.parse(r.body).id === ok.id))
    const after = await eventually(async () => {
      const h = await hook('failing')
      return h.fail_count === 0 && h
    })
    expect(after.active).toBe(true)
    statusOf['/fail'] = 500
  })

  test('disable stops deliveries until enabled', async () => {
    await create({ id: 'toggle', url: hookUrl('/toggle'), patterns: ['toggle.*'] })
    const off = await api('POST', '/api/webhooks/toggle/disable')
    expect(off.body).toMatchObject({ active: false })
    await publish('toggle.a')
    await Bun.sleep(150)
    expect(at('/toggle').length).toBe(0)
    await api('POST', '/api/webhooks/toggle/enable')
    const e = await publish('toggle.b')
    await eventually(() => at('/toggle').length === 1)
    expect(JSON.parse(at('/toggle')[0].body).id).toBe(e.id)
  })

  test('an unreachable receiver counts as a failure', async () => {
    const closed = Bun.serve({ port: 0, hostname: '127.0.0.1', fetch: () => new Response() })
    const url = `http://127.0.0.1:${closed.port}/`
    closed.stop(true)
    await create({ id: 'nowhere', url, patterns: ['nowhere.*'] })
    await publish('nowhere.x')
    await eventually(async () => (await hook('nowhere')).fail_count === 1)
  })
})

describe('test delivery', () => {
  test('sends a signed webhook.test event and leaves the counters alone', async () => {
    await create({ id: 'tested', url: hookUrl('/tested'), patterns: ['nothing.matches'], secret: 'k' })
    const r = await api('POST', '/api/webhooks/tested/test')
    expect(r.status).toBe(200)
    expect(r.body).toEqual({ tested: 'tested', status: 'ok' })
    const [got] = at('/tested')
    const body = JSON.parse(got.body)
    expect(body).toMatchObject({ topic: 'webhook.test', data: { webhook_id: 'tested' } })
    expect(got.headers['x-service-signature']).toBe(hmac('k', got.body))
    await expectVerified(got, 'k')
    const h = await hook('tested')
    expect(h.fail_count).toBe(0)
    expect(h.last_fired).toBeUndefined()
  })

  test('a secret with any characters verifies: the key is its UTF-8 bytes', async () => {
    const secret = 'clé ✓ 🔑 with spaces'
    await create({ id: 'unicode', url: hookUrl('/unicode'), patterns: ['nothing.matches'], secret })
    expect((await api('POST', '/api/webhooks/unicode/test')).status).toBe(200)
    await expectVerified(at('/unicode')[0]!, secret)
  })

  test('400 when the receiver fails; counters unchanged', async () => {
    await create({ id: 'testfail', url: hookUrl('/fail'), patterns: ['nothing.matches'] })
    const r = await api('POST', '/api/webhooks/testfail/test')
    expect(r.status).toBe(400)
    expect(r.body).toEqual({ error: 'webhook test delivery failed: HTTP 500', code: 400 })
    expect(await hook('testfail')).toMatchObject({ active: true, fail_count: 0 })
  })

  test('a receiver that does not answer within 5 s is a failure', async () => {
    await create({ id: 'hang', url: hookUrl('/hang'), patterns: ['nothing.matches'] })
    const started = performance.now()
    const r = await api('POST', '/api/webhooks/hang/test')
    const took = performance.now() - started
    expect(r.status).toBe(400)
    expect(r.body).toEqual({ error: 'webhook test delivery failed: no answer within 5 s', code: 400 })
    expect(took).toBeGreaterThanOrEqual(4900)
    expect(took).toBeLessThan(6500)
  }, 10_000)
})

describe('recent deliveries', () => {
  test('each attempt, test deliveries included, newest first with status, error and duration; gone with the webhook', async () => {
    await create({ id: 'logged', url: hookUrl('/ok'), patterns: ['logged.*'] })
    expect((await api('GET', '/api/webhooks/logged/deliveries')).body).toEqual({ id: 'logged', deliveries: [] })
    const first = await publish('logged.one', { n: 1 })
    await eventually(async () => (await api('GET', '/api/webhooks/logged/deliveries')).body.deliveries[0]?.attempts === 1)
    await api('POST', '/api/webhooks/logged/test')
    const list = (await api('GET', '/api/webhooks/logged/deliveries')).body.deliveries
    expect(list.map((d: any) => [d.topic, d.event_id, d.ok, d.status, d.error, d.test])).toEqual([
      ['webhook.test', 0, true, 200, '', true],
      ['logged.one', first.id, true, 200, '', false],
    ])
    expect(typeof list[0].duration_ms).toBe('number')
    expect(new Date(list[1].at).toISOString()).toBe(list[1].at)

    await create({ id: 'logged-bad', url: hookUrl('/fail'), patterns: ['logged.*'] })
    await create({ id: 'logged-gone', url: 'http://127.0.0.1:1/nothing-listens', patterns: ['logged.*'] })
    await publish('logged.two')
    // A delivery is listed (pending, no attempt yet) from the moment it is queued: wait for its first attempt.
    const attempted = async (id: string) => {
      const [d] = (await api('GET', `/api/webhooks/${id}/deliveries`)).body.deliveries
      return d?.attempts > 0 && d
    }
    const bad = await eventually(() => attempted('logged-bad'))
    expect(bad).toMatchObject({ topic: 'logged.two', ok: false, status: 500, error: 'HTTP 500', test: false })
    const gone = await eventually(() => attempted('logged-gone'))
    expect(gone).toMatchObject({ topic: 'logged.two', ok: false, status: null })
    expect(gone.error).not.toBe('')

    for (const id of ['logged', 'logged-bad', 'logged-gone']) await api('DELETE', `/api/webhooks/${id}`)
    await create({ id: 'logged', url: hookUrl('/ok'), patterns: ['logged.*'] })
    expect((await api('GET', '/api/webhooks/logged/deliveries')).body.deliveries).toEqual([])
    await api('DELETE', '/api/webhooks/logged')
  })

  test('only the latest 20 are kept', async () => {
    await create({ id: 'many', url: hookUrl('/ok'), patterns: ['many.*'] })
    let last = 0
    for (let i = 0; i < 23; i++) last = (await publish('many.event', { i })).id
    const list = await eventually(async () => {
      const d = (await api('GET', '/api/webhooks/many/deliveries')).body.deliveries
      return d[0]?.event_id === last && d
    })
    expect(list).toHaveLength(20)
    expect(list.map((d: any) => d.event_id)).toEqual([...list.map((d: any) => d.event_id)].sort((a, b) => b - a))
    await api('DELETE', '/api/webhooks/many')
  })
})

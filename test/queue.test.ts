// The task queue over real HTTP: status codes, claim order, dependencies,
// capabilities, dedupe, delay, visibility timeouts, concurrent claimers, and
// requeue when the claimer goes stale, deregisters, or the server restarts.
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { call, eventually, register as registerOn, startServer, type TestServer } from './helpers'

let s: TestServer
beforeAll(async () => (s = await startServer()))
afterAll(() => s.cleanup())

type Res = Awaited<ReturnType<typeof call>>
const on = (server: () => TestServer) => {
  const api = (method: string, path: string, body?: unknown, token?: string): Promise<Res> =>
    call(server().api, method, path, body, token ? { 'x-instance-token': token } : {})
  return {
    api,
    register: async (name: string, capabilities: string[] = []) => (await registerOn(server(), { name, capabilities })).body,
    add: async (queue: string, body: Record<string, unknown>) => {
      const r = await api('POST', `/api/queues/${queue}/tasks`, body)
      expect(r.status).toBe(201)
      return r.body
    },
    claim: (queue: string, token: string | undefined, body?: Record<string, unknown>) => api('POST', `/api/queues/${queue}/claim`, body, token),
    ack: (id: number, token: string | undefined, body: Record<string, unknown>) => api('POST', `/api/tasks/${id}/ack`, body, token),
    nack: (id: number, token: string | undefined, body: Record<string, unknown>) => api('POST', `/api/tasks/${id}/nack`, body, token),
    extend: (id: number, token: string | undefined, body: Record<string, unknown>) => api('POST', `/api/tasks/${id}/extend`, body, token),
    get: async (id: number) => (await api('GET', `/api/tasks/${id}`)).body,
    events: async (topic = 'task.*') => ((await api('GET', `/api/events/history?topic=${topic}&last=1000`)).body as any[]).sort((a, b) => a.id - b.id),
  }
}
const { api, register, add, claim, ack, nack, extend, get, events } = on(() => s)
const eventsOf = async (id: number) => (await events()).filter((e) => e.data.id === id).map((e) => [e.topic, e.data.reason ?? null])
const counts = async (queue: string) => ((await api('GET', '/api/queues')).body.find((q: any) => q.queue === queue)?.counts ?? null)

describe('create', () => {
  test('201 the task with defaults; payload kept as JSON; event task.created and audit task.create', async () => {
    const r = await api('POST', '/api/queues/create-q/tasks', { title: 'build it', payload: { files: ['a.ts'], n: 1 } })
    expect(r.status).toBe(201)
    expect(r.body).toEqual({
      id: expect.any(Number),
      queue: 'create-q',
      title: 'build it',
      payload: { files: ['a.ts'], n: 1 },
      priority: 0,
      status: 'ready',
      depends_on: [],
      requires: [],
      attempts: 0,
      max_attempts: 3,
      claimed_by: null,
      claim_id: null,
      fence: null,
      visible_until: null,
      available_at: null,
      result: null,
      last_error: null,
      dedupe_key: null,
      project: null,
      paths: null,
      reservation_id: null,
      notes: [],
      created_at: r.body.created_at,
      updated_at: r.body.created_at,
    })
    expect(new Date(r.body.created_at).toISOString()).toBe(r.body.created_at)
    expect(await get(r.body.id)).toEqual(r.body)
    const created = (await events('task.created')).find((e) => e.data.id === r.body.id)
    expect(created).toMatchObject({ source: 'coordination', data: { id: r.body.id, queue: 'create-q', status: 'ready' } })
    const audit = (await api('GET', '/api/audit?action=task.create&limit=5')).body
    expect(audit[0]).toMatchObject({ action: 'task.create', resource: 'queues/create-q/tasks', outcome: 'success' })
  })

  test('bad input is 400 naming the problem, and creates nothing', async () => {
    const other = await add('bad-other', { title: 'elsewhere' })
    const bad: [string, unknown, string][] = [
      ['bad-q', {}, 'title is required'],
      ['bad-q', { title: '  ' }, 'title is required'],
      ['bad-q', { title: 'x', priority: 1.5 }, 'invalid priority'],
      ['bad-q', { title: 'x', priority: 'high' }, 'invalid priority'],
      ['bad-q', { title: 'x', depends_on: [999999] }, 'invalid depends_on: no task 999999 in queue bad-q'],
      ['bad-q', { title: 'x', depends_on: [other.id] }, `invalid depends_on: no task ${other.id} in queue bad-q`],
      ['bad-q', { title: 'x', requires: [''] }, 'invalid requires'],
      ['bad-q', { title: 'x', max_attempts: 0 }, 'invalid max_attempts'],
      ['bad-q', { title: 'x', dedupe_key: '' }, 'invalid dedupe_key'],
      ['bad q', { title: 'x' }, 'invalid queue'],
      ['bad%2Fq', { title: 'x' }, 'invalid queue'],
    ]
    for (const [queue, body, message] of bad) {
      const r = await api('POST', `/api/queues/${queue}/tasks`, body)
      expect({ queue, body, status: r.status, code: r.body.code }).toEqual({ queue, body, status: 400, code: 400 })
      expect(r.body.error).toContain(message)
    }
    const malformed = await call(s.api, 'POST', '/api/queues/bad-q/tasks', '{"title":', { 'content-type': 'application/json' })
    expect(malformed.status).toBe(400)
    expect(await counts('bad-q')).toBeNull()
    expect((await api('GET', '/api/queues/bad-q/tasks')).body).toEqual([])
  })

  test('an instance token on create must be known (403) and names the creator in the event', async () => {
    expect((await api('POST', '/api/queues/tok-q/tasks', { title: 'x' }, 'f'.repeat(64))).status).toBe(403)
    const w = await register('creator')
    const t = (await api('POST', '/api/queues/tok-q/tasks', { title: 'x' }, w.token)).body
    expect((await events('task.created')).find((e) => e.data.id === t.id).data.instance_id).toBe(w.id)
    expect(await counts('tok-q')).toMatchObject({ ready: 1 })
  })
})

describe('claim, ack, nack, extend, cancel: status codes', () => {
  test('claim: 400 without token, 403 unknown token, 204 empty, 400 bad wait/visibility, 200 with claim_id and fence', async () => {
    const w = await register('codes')
    expect(await claim('codes-q', undefined)).toMatchObject({ status: 400, body: { error: 'X-Instance-Token is required', code: 400 } })
    expect(await claim('codes-q', 'ab'.repeat(32))).toMatchObject({ status: 403, body: { error: 'unknown instance token: register again', code: 403 } })
    const empty = await claim('codes-q', w.token)
    expect(empty.status).toBe(204)
    expect(empty.text).toBe('')
    expect((await claim('codes-q', w.token, { wait_ms: 60_001 })).body.error).toContain('invalid wait_ms')
    expect((await claim('codes-q', w.token, { wait_ms: -1 })).status).toBe(400)
    expect((await claim('codes-q', w.token, { visibility_ms: 999 })).body.error).toContain('invalid visibility_ms')
    expect((await claim('bad q', w.token)).status).toBe(400)

    const t = await add('codes-q', { title: 'one' })
    const c = await claim('codes-q', w.token, {})
    expect(c.status).toBe(200)
    expect(c.body).toMatchObject({ id: t.id, status: 'claimed', attempts: 1, claimed_by: w.id, visible_until: null })
    expect(c.body.claim_id).toMatch(/^[0-9a-f-]{36}$/)
    expect(c.body.fence).toBeGreaterThan(0)
    // claim_id is the claimer's secret: no read shows it.
    expect((await get(t.id)).claim_id).toBeNull()
    expect((await api('GET', '/api/queues/codes-q/tasks')).body[0].claim_id).toBeNull()
    expect(await claim('codes-q', w.token)).toMatchObject({ status: 204 })
  })

  test('ack / nack / extend: 400, 403, 404, 409 claim lost (nothing changes), 403 for another instance; 200 done with result', async () => {
    const w = await register('acker')
    const other = await register('other')
    const t = await add('ack-q', { title: 'one' })
    const c = (await claim('ack-q', w.token)).body
    const before = await get(t.id)
    for (const send of [ack, nack, extend]) {
      const body = { claim_id: c.claim_id, visibility_ms: 5000 }
      expect((await send(t.id, undefined, body)).body).toEqual({ error: 'X-Instance-Token is required', code: 400 })
      expect((await send(t.id, 'cd'.repeat(32), body)).status).toBe(403)
      expect((await send(999999, w.token, body)).body).toEqual({ error: 'task not found', code: 404 })
      expect((await send('nope' as any, w.token, body)).status).toBe(404)
      expect((await send(t.id, w.token, { visibility_ms: 5000 })).body).toEqual({ error: 'claim_id is required', code: 400 })
      expect(await send(t.id, w.token, { claim_id: 'not-the-claim', visibility_ms: 5000 })).toMatchObject({
        status: 409,
        body: { error: 'claim lost', code: 409 },
      })
      expect((await send(t.id, other.token, body)).status).toBe(403)
    }
    expect((await extend(t.id, w.token, { claim_id: c.claim_id })).body.error).toBe('visibility_ms is required')
    expect((await nack(t.id, w.token, { claim_id: c.claim_id, delay_ms: -5 })).status).toBe(400)
    const after = await get(t.id)
    expect({ ...after, updated_at: null }).toEqual({ ...before, updated_at: null })

    const done = await ack(t.id, w.token, { claim_id: c.claim_id, result: { ok: true, lines: 3 } })
    expect(done.status).toBe(200)
    expect(done.body).toMatchObject({ id: t.id, status: 'done', result: { ok: true, lines: 3 }, claim_id: c.claim_id, claimed_by: w.id })
    expect((await get(t.id)).claim_id).toBeNull()
    // The claim ended: a second ack (or nack, extend) is a lost claim.
    expect((await ack(t.id, w.token, { claim_id: c.claim_id })).status).toBe(409)
    expect((await nack(t.id, w.token, { claim_id: c.claim_id })).status).toBe(409)
    expect((await get(t.id)).status).toBe('done')
    expect(await eventsOf(t.id)).toEqual([
      ['task.created', null],
      ['task.claimed', null],
      ['task.done', null],
    ])
    const audit = (await api('GET', `/api/audit?actor=${w.id}&limit=100`)).body
    expect(audit.filter((e: any) => e.outcome === 'success').map((e: any) => e.action)).toEqual(['task.ack', 'task.claim'])
    await eventually(async () => (await api('GET', `/api/audit?actor=${w.id}&action=task.ack`)).body.some((e: any) => e.outcome === 'error'))
  })

  test('GET and DELETE: 404 unknown, cancel 200 (ends a live claim), 409 on a done task; bad status filter 400', async () => {
    const w = await register('canceller')
    expect((await api('GET', '/api/tasks/999999')).status).toBe(404)
    expect((await api('GET', '/api/tasks/abc')).status).toBe(404)
    expect((await api('DELETE', '/api/tasks/999999')).status).toBe(404)
    expect((await api('GET', '/api/queues/cancel-q/tasks?status=bogus')).body.error).toContain('invalid status')

    const t = await add('cancel-q', { title: 'doomed' })
    const c = (await claim('cancel-q', w.token)).body
    const del = await api('DELETE', `/api/tasks/${t.id}`)
    expect(del.status).toBe(200)
    expect(del.body).toMatchObject({ id: t.id, status: 'cancelled', claim_id: null })
    expect((await ack(t.id, w.token, { claim_id: c.claim_id })).status).toBe(409)
    expect((await api('DELETE', `/api/tasks/${t.id}`)).body.status).toBe('cancelled')
    const cancelled = (await events('task.cancelled')).find((e) => e.data.id === t.id)
    expect(cancelled.data).toEqual({ id: t.id, queue: 'cancel-q', status: 'cancelled', instance_id: w.id })

    const d = await add('cancel-q', { title: 'finished' })
    const dc = (await claim('cancel-q', w.token)).body
    await ack(d.id, w.token, { claim_id: dc.claim_id })
    expect(await api('DELETE', `/api/tasks/${d.id}`)).toMatchObject({ status: 409, body: { error: 'task is done', code: 409 } })
    expect((await api('GET', '/api/queues/cancel-q/tasks?status=cancelled')).body.map((x: any) => x.id)).toEqual([t.id])
    // Refusals are audited by the HTTP layer, after the answer.
    await eventually(async () =>
      (await api('GET', '/api/audit?action=task.cancel&limit=5')).body.some((e: any) => e.resource === `tasks/${d.id}` && e.outcome === 'error'),
    )
  })
})

describe('both ways in', () => {
  test('a plain create, claim and ack (outside the framework) answer and audit as through the full route', async () => {
    const w = await register('parity', ['ts'])
    const other = await register('parity-other')
    const T = (token: string) => ({ 'x-instance-token': token })
    // A query sends the request through the framework's route; `?via=full` changes nothing else. Each way has its own queue.
    const send = async (way: 'fast' | 'full', path: string, body: string | null, headers: Record<string, string> = {}) => {
      const r = await fetch(`${s.api}${path.replace('WAY', way)}${way === 'full' ? '?via=full' : ''}`, {
        method: 'POST',
        body: body ?? undefined,
        headers: { 'content-type': 'application/json', ...headers },
      })
      const text = await r.text()
      const json = text ? JSON.parse(text) : null
      const task = json && 'id' in json ? { ...json, id: 'i', queue: 'q', claim_id: json.claim_id && 'c', fence: json.fence && 'f', visible_until: json.visible_until && 'v', created_at: 't', updated_at: 't' } : json
      return { status: r.status, type: r.headers.get('content-type'), body: task, json }
    }
    const both = async (path: string, body: string | null, headers?: Record<string, string>) => {
      const [fast, full] = [await send('fast', path, body, headers), await send('full', path, body, headers)]
      expect({ path, sent: body, ...fast, json: null }).toEqual({ path, sent: body, ...full, json: null })
      return [fast, full]
    }
    const creates = [
      '{"title":"job","payload":{"c":1}}', '{"title":"x","priority":"5"}', '{"title":"x","priority":"high"}', '{"title":"x","priority":1.5}',
      '{"title":"x","max_attempts":0}', '{"title":"x","depends_on":5}', '{"title":"x","requires":[5]}', '{"title":"needs ts","requires":["ts"]}',
      '{"title":"d","dedupe_key":"k"}', '{"title":"d","dedupe_key":"k"}', '{"title":"d","dedupe_key":5}', '{}', '{"title":"  "}', '',
      'null', '[]', '"x"', '{"title":', '{"title":"a\\u0000b"}', '{"title":"p","paths":["a"]}', '{"title":"e","foo":1}',
    ]
    for (const body of creates) await both('/api/queues/WAY-q/tasks', body)
    expect((await both('/api/queues/WAY-q/tasks', '{"title":"tok"}', T('f'.repeat(64))))[0].status).toBe(403)
    const claims = ['{}', '{"wait_ms":60001}', '{"wait_ms":"x"}', '{"visibility_ms":"5000"}', '[]', 'null', '{', '', '{"x":"\\u0000"}']
    for (const body of claims) await both('/api/queues/WAY-q/claim', body, T(w.token))
    await both('/api/queues/WAY-q/claim', '{}', {})
    await both('/api/queues/WAY-q/claim', '{}', T('ab'.repeat(32)))
    await both('/api/queues/WAY-empty/claim', '{}', T(w.token))
    await both('/api/queues/WAY-q/tasks', '{"title":"last"}')
    const [fast, full] = await both('/api/queues/WAY-q/claim', '{}', T(w.token))
    const ack = async (body: (c: any) => string, headers: Record<string, string>) => {
      const answers = [] as Awaited<ReturnType<typeof send>>[]
      for (const [way, c] of [['fast', fast.json], ['full', full.json]] as const) answers.push(await send(way, `/api/tasks/${c.id}/ack`, body(c), headers))
      expect({ ...answers[0], json: null }).toEqual({ ...answers[1], json: null })
      return answers[0]
    }
    expect((await ack(() => '{"result":1}', {})).body).toEqual({ error: 'claim_id is required', code: 400 })
    expect((await ack((c) => JSON.stringify({ claim_id: c.claim_id }), T(other.token))).status).toBe(403)
    expect((await ack(() => '{"claim_id":"not-the-claim"}', T(w.token))).status).toBe(409)
    expect((await ack(() => 'null', T(w.token))).status).toBe(400)
    expect((await ack((c) => JSON.stringify({ claim_id: c.claim_id, result: { ok: true } }), T(w.token))).body).toMatchObject({ status: 'done', result: { ok: true }, claim_id: 'c' })
    expect((await ack((c) => JSON.stringify({ claim_id: c.claim_id }), T(w.token))).body).toEqual({ error: 'claim lost', code: 409 })
    // The same audit entries, in the same order, for both ways in.
    const entries = ((await api('GET', '/api/audit?limit=1000')).body as any[]).reverse()
    const of = (way: 'fast' | 'full') => {
      const acked = `tasks/${(way === 'fast' ? fast : full).json.id}/ack`
      return entries
        .filter((e) => e.resource.startsWith(`queues/${way}-`) || e.resource === acked)
        .map((e) => [e.action, e.resource.replace(`queues/${way}-`, '').replace(acked, 'ack'), e.outcome, e.detail.replace(/\d+/g, 'N')])
    }
    expect(of('fast')).toEqual(of('full'))
    expect(of('fast').length).toBeGreaterThan(40)
  })
})

describe('order, dependencies, capabilities, dedupe', () => {
  test('claims go by priority (higher first), then creation order; listing uses the same order', async () => {
    const w = await register('orderly')
    const ids: Record<string, number> = {}
    for (const [title, priority] of [['p0', 0], ['p5a', 5], ['pm1', -1], ['p5b', 5], ['p10', 10]] as const)
      ids[title] = (await add('order-q', { title, priority })).id
    const listed = (await api('GET', '/api/queues/order-q/tasks')).body.map((t: any) => t.title)
    expect(listed).toEqual(['p10', 'p5a', 'p5b', 'p0', 'pm1'])
    const claimed: string[] = []
    for (let i = 0; i < 5; i++) claimed.push((await claim('order-q', w.token)).body.title)
    expect(claimed).toEqual(['p10', 'p5a', 'p5b', 'p0', 'pm1'])
    expect((await api('GET', '/api/queues/order-q/tasks?status=claimed&limit=2')).body.map((t: any) => t.title)).toEqual(['p10', 'p5a'])
    expect(await counts('order-q')).toEqual({ blocked: 0, ready: 0, claimed: 5, done: 0, failed: 0, cancelled: 0 })
  })

  test('blocked until every dependency is done; a failed or cancelled one fails its dependents, transitively', async () => {
    const w = await register('deps')
    const a = await add('dep-q', { title: 'a' })
    const b = await add('dep-q', { title: 'b' })
    const c = await add('dep-q', { title: 'c', depends_on: [a.id, b.id], priority: 100 })
    expect(c.status).toBe('blocked')
    expect(c.depends_on).toEqual([a.id, b.id])
    const d = await add('dep-q', { title: 'd', depends_on: [c.id] })
    const e = await add('dep-q', { title: 'e', depends_on: [d.id] })

    // A blocked task is never claimed, whatever its priority.
    const ca = (await claim('dep-q', w.token)).body
    expect(ca.id).toBe(a.id)
    await ack(a.id, w.token, { claim_id: ca.claim_id })
    expect((await get(c.id)).status).toBe('blocked')
    const cb = (await claim('dep-q', w.token)).body
    await ack(b.id, w.token, { claim_id: cb.claim_id })
    expect((await get(c.id)).status).toBe('ready')
    expect(await eventsOf(c.id)).toEqual([
      ['task.created', null],
      ['task.unblocked', null],
    ])
    expect((await add('dep-q', { title: 'on done', depends_on: [a.id] })).status).toBe('ready')

    expect((await api('DELETE', `/api/tasks/${c.id}`)).status).toBe(200)
    expect(await get(d.id)).toMatchObject({ status: 'failed', last_error: `dependency ${c.id} was cancelled` })
    expect(await get(e.id)).toMatchObject({ status: 'failed', last_error: `dependency ${d.id} failed` })
    expect((await events('task.failed')).find((x) => x.data.id === e.id).data).toEqual({ id: e.id, queue: 'dep-q', status: 'failed', reason: 'dependency' })

    const late = await add('dep-q', { title: 'too late', depends_on: [d.id] })
    expect(late).toMatchObject({ status: 'failed', last_error: `dependency ${d.id} failed` })
  })

  test('requires: only a claimer with every capability gets the task; others skip to what they can take', async () => {
    const gpu = await register('gpu-only', ['gpu'])
    const both = await register('gpu-linux', ['gpu', 'linux', 'docker'])
    const special = await add('cap-q', { title: 'needs both', requires: ['gpu', 'linux'], priority: 10 })
    const plain = await add('cap-q', { title: 'anyone' })
    expect((await claim('cap-q', gpu.token)).body.id).toBe(plain.id)
    expect((await claim('cap-q', gpu.token)).status).toBe(204)
    expect((await get(special.id)).status).toBe('ready')
    // Capabilities are read when the claim is decided: a change applies at once.
    await api('POST', `/api/instances/${gpu.id}/capabilities`, { capabilities: ['gpu', 'linux'] })
    const got = await claim('cap-q', gpu.token)
    expect(got.body).toMatchObject({ id: special.id, claimed_by: gpu.id })
    expect((await claim('cap-q', both.token)).status).toBe(204)
  })

  test('dedupe_key: an unfinished task with the key is returned (200), nothing new; once finished a new one is made', async () => {
    const w = await register('deduper')
    const first = await add('dedupe-q', { title: 'lint', dedupe_key: 'lint:main' })
    const again = await api('POST', '/api/queues/dedupe-q/tasks', { title: 'lint again', dedupe_key: 'lint:main', priority: 9 })
    expect(again.status).toBe(200)
    expect(again.body).toEqual(first)
    expect((await add('other-dedupe-q', { title: 'lint', dedupe_key: 'lint:main' })).id).not.toBe(first.id)
    expect((await api('GET', '/api/queues/dedupe-q/tasks')).body).toHaveLength(1)
    expect((await events('task.created')).filter((e) => e.data.queue === 'dedupe-q')).toHaveLength(1)

    const c = (await claim('dedupe-q', w.token)).body
    expect((await api('POST', '/api/queues/dedupe-q/tasks', { title: 'x', dedupe_key: 'lint:main' })).body.id).toBe(first.id)
    await ack(first.id, w.token, { claim_id: c.claim_id })
    const fresh = await api('POST', '/api/queues/dedupe-q/tasks', { title: 'lint', dedupe_key: 'lint:main' })
    expect(fresh.status).toBe(201)
    expect(fresh.body.id).not.toBe(first.id)
  })
})

describe('nack, delay, attempts, visibility', () => {
  test('nack: ready again with last_error, not claimable before delay_ms; a held claim gets it when the delay ends', async () => {
    const w = await register('nacker')
    const t = await add('delay-q', { title: 'flaky' })
    const c = (await claim('delay-q', w.token)).body
    const n = await nack(t.id, w.token, { claim_id: c.claim_id, error: 'tests failed', delay_ms: 1500 })
    expect(n.status).toBe(200)
    expect(n.body).toMatchObject({ status: 'ready', last_error: 'tests failed', attempts: 1, claimed_by: null, claim_id: null })
    expect(Date.parse(n.body.available_at)).toBeGreaterThan(Date.now() + 1000)
    expect((await claim('delay-q', w.token)).status).toBe(204)
    const t0 = Date.now()
    const held = await claim('delay-q', w.token, { wait_ms: 10_000 })
    expect(held.status).toBe(200)
    expect(held.body).toMatchObject({ id: t.id, attempts: 2, available_at: null })
    expect(Date.now()).toBeGreaterThanOrEqual(Date.parse(n.body.available_at))
    expect(Date.now() - t0).toBeLessThan(3000)
    expect(held.body.fence).toBeGreaterThan(c.fence)
    expect(await eventsOf(t.id)).toEqual([
      ['task.created', null],
      ['task.claimed', null],
      ['task.requeued', 'nack'],
      ['task.claimed', null],
    ])
  })

  test('max_attempts: the last nack fails the task (task.failed) and its dependents', async () => {
    const w = await register('exhausted')
    const t = await add('attempts-q', { title: 'hopeless', max_attempts: 2 })
    const dep = await add('attempts-q', { title: 'after', depends_on: [t.id] })
    let c = (await claim('attempts-q', w.token)).body
    expect((await nack(t.id, w.token, { claim_id: c.claim_id, error: 'one' })).body.status).toBe('ready')
    c = (await claim('attempts-q', w.token)).body
    expect(c.attempts).toBe(2)
    const last = await nack(t.id, w.token, { claim_id: c.claim_id, error: 'two', delay_ms: 100 })
    expect(last.body).toMatchObject({ status: 'failed', attempts: 2, last_error: 'two' })
    expect(await get(dep.id)).toMatchObject({ status: 'failed', last_error: `dependency ${t.id} failed` })
    expect((await claim('attempts-q', w.token)).status).toBe(204)
    expect((await events('task.failed')).find((e) => e.data.id === t.id).data).toEqual({
      id: t.id,
      queue: 'attempts-q',
      status: 'failed',
      instance_id: w.id,
      reason: 'nack',
    })
  })

  test('visibility_ms: an unacked claim is requeued (reason timeout) within a second of visible_until; the old claim is lost', async () => {
    const w = await register('slowpoke')
    const t = await add('vis-q', { title: 'slow' })
    const c = (await claim('vis-q', w.token, { visibility_ms: 1000 })).body
    expect(Date.parse(c.visible_until) - Date.parse(c.updated_at)).toBeGreaterThanOrEqual(1000)
    const requeued = await eventually(async () => (await get(t.id)).status === 'ready', 3000)
    expect(Date.now()).toBeLessThan(Date.parse(c.visible_until) + 1000)
    expect(requeued).toBe(true)
    expect(await get(t.id)).toMatchObject({ status: 'ready', claimed_by: null, visible_until: null, last_error: expect.stringContaining('visibility timeout') })
    const ev = (await events('task.requeued')).find((e) => e.data.id === t.id)
    expect(ev.data).toEqual({ id: t.id, queue: 'vis-q', status: 'ready', instance_id: w.id, reason: 'timeout' })
    expect((await ack(t.id, w.token, { claim_id: c.claim_id })).body).toEqual({ error: 'claim lost', code: 409 })
  })

  test('extend pushes visible_until back; the claim survives past the first deadline and acks', async () => {
    const w = await register('extender')
    const t = await add('ext-q', { title: 'long' })
    const c = (await claim('ext-q', w.token, { visibility_ms: 1000 })).body
    await Bun.sleep(500)
    const e = await extend(t.id, w.token, { claim_id: c.claim_id, visibility_ms: 3000 })
    expect(e.status).toBe(200)
    expect(e.body).toMatchObject({ status: 'claimed', claim_id: null })
    expect(Date.parse(e.body.visible_until)).toBeGreaterThan(Date.parse(c.visible_until) + 1500)
    await Bun.sleep(1200)
    expect((await get(t.id)).status).toBe('claimed')
    expect((await ack(t.id, w.token, { claim_id: c.claim_id })).body.status).toBe('done')
    expect((await api('GET', `/api/audit?action=task.extend&actor=${w.id}`)).body).toHaveLength(1)
  })

  test('a visibility timeout on the last attempt fails the task', async () => {
    const w = await register('last-chance')
    const t = await add('vis-fail-q', { title: 'once', max_attempts: 1 })
    await claim('vis-fail-q', w.token, { visibility_ms: 1000 })
    await eventually(async () => (await get(t.id)).status === 'failed', 3000)
    expect((await events('task.failed')).find((e) => e.data.id === t.id).data.reason).toBe('timeout')
  })
})

describe('waiting and concurrency', () => {
  test('wait_ms: the claim is answered by the enqueue itself, and 204 when nothing comes in time', async () => {
    const w = await register('waiter')
    let t0 = Date.now()
    const none = await claim('wait-q', w.token, { wait_ms: 400 })
    expect(none.status).toBe(204)
    expect(Date.now() - t0).toBeGreaterThanOrEqual(390)

    t0 = Date.now()
    const held = claim('wait-q', w.token, { wait_ms: 20_000 })
    await Bun.sleep(300)
    const t = await add('wait-q', { title: 'fresh' })
    const got = await held
    expect(got.status).toBe(200)
    expect(got.body.id).toBe(t.id)
    expect(Date.now() - t0).toBeLessThan(2000)

    // A blocked task does not wake it; its unblocking does.
    const a = await add('wait-q', { title: 'first' })
    const b = await add('wait-q', { title: 'second', depends_on: [a.id] })
    const ca = (await claim('wait-q', w.token)).body
    const held2 = claim('wait-q', w.token, { wait_ms: 20_000 })
    await Bun.sleep(200)
    await ack(a.id, w.token, { claim_id: ca.claim_id })
    expect((await held2).body.id).toBe(b.id)
  })

  test('20 tasks, 5 instances claiming at once: every task claimed exactly once, fences all distinct', async () => {
    const workers = await Promise.all([1, 2, 3, 4, 5].map((i) => register(`racer-${i}`)))
    // Workers start holding claims before any task exists, then tasks arrive all at once.
    const runs = workers.map(async (w) => {
      const mine: any[] = []
      for (;;) {
        const r = await claim('race-q', w.token, { wait_ms: 1500 })
        if (r.status === 204) return mine
        expect(r.status).toBe(200)
        mine.push(r.body)
        expect((await ack(r.body.id, w.token, { claim_id: r.body.claim_id, result: w.id })).status).toBe(200)
      }
    })
    await Bun.sleep(100)
    const tasks = await Promise.all(Array.from({ length: 20 }, (_, i) => add('race-q', { title: `t${i}` })))
    const claimed = (await Promise.all(runs)).flat()
    expect(claimed.map((t) => t.id).sort((x, y) => x - y)).toEqual(tasks.map((t) => t.id).sort((x, y) => x - y))
    expect(new Set(claimed.map((t) => t.fence)).size).toBe(20)
    const claimEvents = (await events('task.claimed')).filter((e) => e.data.queue === 'race-q')
    expect(claimEvents).toHaveLength(20)
    const listed = (await api('GET', '/api/queues/race-q/tasks')).body
    expect(listed.every((t: any) => t.status === 'done' && t.attempts === 1 && t.result === t.claimed_by)).toBe(true)
  })
})

test('20 ready tasks, 5 instances claiming without waiting, as fast as they can: each task once', async () => {
  const workers = await Promise.all([1, 2, 3, 4, 5].map((i) => register(`sprinter-${i}`)))
  const tasks = await Promise.all(Array.from({ length: 20 }, (_, i) => add('sprint-q', { title: `s${i}` })))
  const runs = workers.map(async (w) => {
    const mine: number[] = []
    for (let r = await claim('sprint-q', w.token); r.status === 200; r = await claim('sprint-q', w.token)) mine.push(r.body.id)
    return mine
  })
  const claimed = (await Promise.all(runs)).flat().sort((a, b) => a - b)
  expect(claimed).toEqual(tasks.map((t) => t.id).sort((a, b) => a - b))
  const listed = (await api('GET', '/api/queues/sprint-q/tasks')).body
  expect(listed.every((t: any) => t.status === 'claimed' && t.attempts === 1)).toBe(true)
})

describe('the claimer dies', () => {
  let live: TestServer
  const L = on(() => live)
  beforeAll(async () => (live = await startServer({ args: ['--stale-timeout', '400ms', '--liveness-interval', '1h'] })))
  afterAll(() => live.cleanup())

  test('stale claimer: its claims are requeued at once (holder_stale); coming back it holds nothing and its ack is 409', async () => {
    const w = await L.register('sleepy')
    const t = await L.add('stale-q', { title: 'abandoned' })
    const c = (await L.claim('stale-q', w.token)).body
    await Bun.sleep(500)
    const check = (await L.api('POST', '/api/liveness/check')).body
    expect(check.newly_stale.map((i: any) => i.id)).toEqual([w.id])
    expect(await L.get(t.id)).toMatchObject({ status: 'ready', claimed_by: null, attempts: 1, last_error: 'claimer went stale' })
    const ev = (await L.events('task.requeued')).find((e) => e.data.id === t.id)
    expect(ev).toMatchObject({ source: 'coordination', data: { id: t.id, queue: 'stale-q', status: 'ready', instance_id: w.id, reason: 'holder_stale' } })

    expect((await L.ack(t.id, w.token, { claim_id: c.claim_id })).body).toEqual({ error: 'claim lost', code: 409 })
    // That call was a sign of life: active again, and the task is claimable by anyone (itself included).
    expect((await L.api('GET', `/api/instances/${w.id}`)).body.status).toBe('active')
    const again = (await L.claim('stale-q', w.token)).body
    expect(again).toMatchObject({ id: t.id, attempts: 2 })
    expect(again.claim_id).not.toBe(c.claim_id)
  })

  test('every call with the instance token is a heartbeat: reads and empty claims keep an idle claimer active', async () => {
    const w = await L.register('polite')
    const t = await L.add('beat-q', { title: 'long job' })
    const c = (await L.claim('beat-q', w.token)).body
    await Bun.sleep(250)
    expect((await L.claim('beat-q', w.token)).status).toBe(204)
    // Only reads from here on: without their heartbeats the instance would be stale by the check.
    for (const path of ['/api/queues', `/api/tasks/${t.id}`, '/api/queues/beat-q/tasks']) {
      await Bun.sleep(250)
      expect((await L.api('GET', path, undefined, w.token)).status).toBe(200)
    }
    await Bun.sleep(250)
    // Over 1 s since the claim, never 400 ms without a call: still active, still holding it.
    expect((await L.api('POST', '/api/liveness/check')).body.newly_stale.some((i: any) => i.id === w.id)).toBe(false)
    expect((await L.ack(t.id, w.token, { claim_id: c.claim_id })).status).toBe(200)
  })

  test('deregistered claimer: claims requeued (holder_deregistered); its token is then 403', async () => {
    const w = await L.register('leaver')
    const t = await L.add('dereg-q', { title: 'orphan' })
    const c = (await L.claim('dereg-q', w.token)).body
    expect((await L.api('DELETE', `/api/instances/${w.id}`)).status).toBe(200)
    expect(await L.get(t.id)).toMatchObject({ status: 'ready', last_error: 'claimer deregistered' })
    const ev = (await L.events('task.requeued')).find((e) => e.data.id === t.id)
    expect(ev.data).toEqual({ id: t.id, queue: 'dereg-q', status: 'ready', instance_id: w.id, reason: 'holder_deregistered' })
    expect((await L.ack(t.id, w.token, { claim_id: c.claim_id })).status).toBe(403)
  })

  test('a held claim of another instance gets a requeued task at once', async () => {
    const dying = await L.register('dying')
    const t = await L.add('handover-q', { title: 'pass it on' })
    await L.claim('handover-q', dying.token)
    const heir = await L.register('heir')
    const held = L.claim('handover-q', heir.token, { wait_ms: 20_000 })
    await Bun.sleep(200)
    await L.api('DELETE', `/api/instances/${dying.id}`)
    expect((await held).body).toMatchObject({ id: t.id, claimed_by: heir.id, attempts: 2 })
  })
})

test('a claimed task survives a restart: still claimed with its fence, ackable with its claim_id; fences keep growing', async () => {
  const first = await startServer()
  const { dataDir } = first
  let second: TestServer | null = null
  try {
    const A = on(() => first)
    const w = await A.register('survivor')
    const t = await A.add('restart-q', { title: 'durable' })
    const c = (await A.claim('restart-q', w.token, { visibility_ms: 600_000 })).body
    await first.kill()
    second = await startServer({ dataDir })
    const B = on(() => second!)
    expect(await B.get(t.id)).toMatchObject({ status: 'claimed', fence: c.fence, claimed_by: w.id, visible_until: c.visible_until })
    expect((await B.ack(t.id, w.token, { claim_id: c.claim_id, result: 'ok' })).body).toMatchObject({ status: 'done', result: 'ok' })
    await B.add('restart-q', { title: 'next' })
    expect((await B.claim('restart-q', w.token)).body.fence).toBeGreaterThan(c.fence)
  } finally {
    await second?.cleanup()
    await first.cleanup()
  }
})

describe('discovery', () => {
  test('OpenAPI documents every task route; the MCP discovery tool lists them (still five tools)', async () => {
    const paths = (await api('GET', '/openapi.json')).body.paths
    expect(Object.keys(paths)).toEqual(expect.arrayContaining(['/api/queues', '/api/queues/{queue}/tasks', '/api/queues/{queue}/claim', '/api/tasks/{id}', '/api/tasks/{id}/ack', '/api/tasks/{id}/nack', '/api/tasks/{id}/extend']))
    expect(Object.keys(paths['/api/tasks/{id}'])).toEqual(expect.arrayContaining(['get', 'delete']))
    const rpc = (method: string, params: unknown) =>
      call(s.api, 'POST', '/mcp', { jsonrpc: '2.0', id: 1, method, params }, { accept: 'application/json, text/event-stream' })
    const endpoints = (await rpc('tools/call', { name: 'get_endpoints', arguments: {} })).body.result.structuredContent
    expect(endpoints.endpoints.tasks).toContain('POST /api/queues/{queue}/claim')
    expect(endpoints.cli.commands.some((c: string) => c.startsWith('muster task'))).toBe(true)
    expect((await rpc('tools/list', {})).body.result.tools).toHaveLength(5)
  })
})

test('a held claim ends at once with 204 when the server stops', async () => {
  const server = await startServer()
  try {
    const w = await registerOn(server, 'patient')
    const t0 = Date.now()
    const held = call(server.api, 'POST', '/api/queues/idle-q/claim', { wait_ms: 60_000 }, { 'x-instance-token': w.token })
    await Bun.sleep(300)
    await server.stop()
    expect((await held).status).toBe(204)
    expect(Date.now() - t0).toBeLessThan(5000)
  } finally {
    await server.cleanup()
  }
})

import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { call, register, startServer, type TestServer } from './helpers'

let s: TestServer
beforeAll(async () => (s = await startServer()))
afterAll(() => s.cleanup())

const record = (body: unknown, headers: Record<string, string> = {}) => call(s.api, 'POST', '/api/llm/usage', body, headers)
const list = (query = '') => call(s.api, 'GET', `/api/llm/usage${query}`)
const summary = (query = '') => call(s.api, 'GET', `/api/llm/usage/summary${query}`)
const count = async () => (await list('?limit=100000')).body.length
const lastAudit = async () => (await call(s.api, 'GET', '/api/audit?action=llm.usage&limit=1')).body[0]

describe('recording usage', () => {
  test('defaults fill every optional field; audited as llm.usage', async () => {
    const r = await record({ provider: 'anthropic', model: 'claude' })
    expect(r.status).toBe(200)
    expect(r.body).toEqual({ id: expect.any(Number), recorded: true })
    const [row] = (await list('?limit=1')).body
    expect(row).toEqual({
      id: r.body.id,
      instance_id: '',
      project: '',
      provider: 'anthropic',
      model: 'claude',
      tokens_in: 0,
      tokens_out: 0,
      cost_usd: 0,
      request_type: 'completion',
      session_tag: '',
      task_id: null,
      created_at: expect.stringMatching(/^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/),
    })
    expect(await lastAudit()).toMatchObject({ action: 'llm.usage', resource: 'llm/usage', outcome: 'success' })
  })

  test('every field given is stored as given', async () => {
    const body = {
      provider: 'openai', model: 'embed-3', instance_id: 'i-9', project: 'p', tokens_in: 1200, tokens_out: 0,
      cost_usd: 0.00012, request_type: 'embedding', session_tag: 'run-1',
    }
    const r = await record(body)
    const [row] = (await list('?limit=1')).body
    expect(row).toMatchObject({ id: r.body.id, ...body })
  })

  test('instance_id defaults to the calling instance', async () => {
    const agent = await register(s, 'a7')
    await record({ provider: 'x', model: 'y' }, { 'x-instance-token': agent.token })
    expect((await list('?limit=1')).body[0].instance_id).toBe(agent.id)
    expect((await lastAudit()).actor).toBe(agent.id)
    await record({ provider: 'x', model: 'y', instance_id: 'explicit' }, { 'x-instance-token': agent.token })
    expect((await list('?limit=1')).body[0].instance_id).toBe('explicit')
  })

  test('missing or empty provider or model is 400, nothing stored, audited as an error', async () => {
    const before = await count()
    const cases: [unknown, string][] = [
      [{ model: 'm' }, 'provider is required'],
      [{ provider: 'p' }, 'model is required'],
      [{}, 'provider is required'],
      [{ provider: '', model: 'm' }, 'provider is required'],
      [{ provider: 'p', model: '  ' }, 'model is required'],
    ]
    for (const [body, error] of cases) {
      const r = await record(body)
      expect(r.status).toBe(400)
      expect(r.body).toEqual({ error, code: 400 })
    }
    expect(await lastAudit()).toMatchObject({ action: 'llm.usage', outcome: 'error' })
    for (const body of [
      { provider: 'p', model: 'm', tokens_in: -1 },
      { provider: 'p', model: 'm', tokens_out: 1.5 },
      { provider: 'p', model: 'm', cost_usd: 'free' },
      { provider: 'p', model: 'm', request_type: 'chat' },
    ]) {
      const r = await record(body)
      expect(r.status).toBe(400)
      expect(r.body.code).toBe(400)
      expect(r.body.error).toStartWith('invalid ')
    }
    const bad = await call(s.api, 'POST', '/api/llm/usage', '{"provider":', { 'content-type': 'application/json' })
    expect(bad.status).toBe(400)
    expect(await count()).toBe(before)
  })

  test('a JSON body over 10 MB without Content-Length is cut off with 413', async () => {
    const before = await count()
    const chunk = new Uint8Array(1024 * 1024).fill(32)
    const stream = new ReadableStream({
      start(c) {
        c.enqueue(new TextEncoder().encode('{"provider":"p","model":"m","project":"'))
        for (let i = 0; i < 11; i++) c.enqueue(chunk)
        c.enqueue(new TextEncoder().encode('"}'))
        c.close()
      },
    })
    const r = await fetch(`${s.api}/api/llm/usage`, { method: 'POST', body: stream, headers: { 'content-type': 'application/json' } })
    expect(r.status).toBe(413)
    expect(await r.json()).toEqual({ error: 'request body exceeds the 10 MB limit', code: 413 })
    expect(await count()).toBe(before)
  })
})

describe('listing and summaries', () => {
  // A fresh window of records, so earlier tests do not leak into the expected totals.
  let start: string
  let mid: string
  const first = [
    { instance_id: 'i1', project: 'alpha', provider: 'anthropic', model: 'opus', tokens_in: 1000, tokens_out: 200, cost_usd: 0.5, session_tag: 's1' },
    { instance_id: 'i1', project: 'alpha', provider: 'anthropic', model: 'haiku', tokens_in: 300, tokens_out: 50, cost_usd: 0.1, session_tag: 's1' },
    { instance_id: 'i2', project: 'beta', provider: 'openai', model: 'opus', tokens_in: 40, tokens_out: 60, cost_usd: 0.2, session_tag: 's2' },
  ]
  const second = [
    { instance_id: 'i2', project: 'alpha', provider: 'openai', model: 'gpt', tokens_in: 7, tokens_out: 3, cost_usd: 0.25, session_tag: 's2' },
    { instance_id: 'i3', project: '', provider: 'local', model: 'haiku', tokens_in: 100, tokens_out: 0, request_type: 'embedding', session_tag: '' },
  ]

  beforeAll(async () => {
    await Bun.sleep(2)
    start = new Date().toISOString()
    for (const r of first) expect((await record(r)).status).toBe(200)
    await Bun.sleep(2)
    mid = new Date().toISOString()
    await Bun.sleep(2)
    for (const r of second) expect((await record(r)).status).toBe(200)
  })

  const totals = (tokens_in: number, tokens_out: number, cost: number, n: number) => ({
    total_tokens_in: tokens_in,
    total_tokens_out: tokens_out,
    total_cost_usd: cost,
    request_count: n,
  })

  test('summary by project (the default) against hand-computed totals', async () => {
    const r = await summary(`?from=${start}`)
    expect(r.status).toBe(200)
    expect(r.body).toEqual({
      group_by: 'project',
      from: start,
      to: null,
      groups: {
        '': totals(100, 0, 0, 1),
        alpha: totals(1307, 253, 0.85, 3),
        beta: totals(40, 60, 0.2, 1),
      },
      total: totals(1447, 313, 1.05, 5),
      unpriced_models: {},
    })
  })

  test('summary by model, instance and session_tag', async () => {
    const by = async (g: string) => (await summary(`?group_by=${g}&from=${start}`)).body
    expect((await by('model')).groups).toEqual({
      gpt: totals(7, 3, 0.25, 1),
      haiku: totals(400, 50, 0.1, 2),
      opus: totals(1040, 260, 0.7, 2),
    })
    expect((await by('instance')).groups).toEqual({
      i1: totals(1300, 250, 0.6, 2),
      i2: totals(47, 63, 0.45, 2),
      i3: totals(100, 0, 0, 1),
    })
    const tags = await by('session_tag')
    expect(tags.group_by).toBe('session_tag')
    expect(tags.groups).toEqual({ '': totals(100, 0, 0, 1), s1: totals(1300, 250, 0.6, 2), s2: totals(47, 63, 0.45, 2) })
    expect(tags.total).toEqual(totals(1447, 313, 1.05, 5))
  })

  test('summary honours from and to', async () => {
    const early = await summary(`?group_by=model&from=${start}&to=${mid}`)
    expect(early.body.from).toBe(start)
    expect(early.body.to).toBe(mid)
    expect(early.body.groups).toEqual({ haiku: totals(300, 50, 0.1, 1), opus: totals(1040, 260, 0.7, 2) })
    expect(early.body.total).toEqual(totals(1340, 310, 0.8, 3))
    const late = await summary(`?from=${encodeURIComponent(new Date(Date.parse(mid)).toISOString().replace('Z', '+00:00'))}`)
    expect(late.body.from).toBe(mid) // any RFC 3339 form, normalised
    expect(late.body.total).toEqual(totals(107, 3, 0.25, 2))
    const none = await summary('?from=2000-01-01T00:00:00Z&to=2000-01-02T00:00:00Z')
    expect(none.body.groups).toEqual({})
    expect(none.body.total).toEqual(totals(0, 0, 0, 0))
  })

  test('invalid group_by, from or to is 400', async () => {
    const r = await summary('?group_by=provider')
    expect(r.status).toBe(400)
    expect(r.body).toEqual({ error: 'invalid group_by: expected one of instance, project, model, session_tag', code: 400 })
    const f = await summary('?from=yesterday')
    expect(f.status).toBe(400)
    expect(f.body).toEqual({ error: 'invalid from: expected an RFC 3339 timestamp', code: 400 })
    expect((await list('?to=soon')).status).toBe(400)
    const l = await list('?limit=0')
    expect(l.status).toBe(400)
    expect(l.body.code).toBe(400)
  })

  test('one filter only: instance, then project, then session_tag', async () => {
    const ids = async (q: string) => (await list(`${q}&from=${start}`)).body.map((r: any) => [r.instance_id, r.project, r.session_tag])
    // instance wins over project and session_tag
    expect(await ids('?instance=i2&project=alpha&session_tag=s1')).toEqual([
      ['i2', 'alpha', 's2'],
      ['i2', 'beta', 's2'],
    ])
    // project wins over session_tag
    expect(await ids('?project=alpha&session_tag=s2')).toEqual([
      ['i2', 'alpha', 's2'],
      ['i1', 'alpha', 's1'],
      ['i1', 'alpha', 's1'],
    ])
    expect(await ids('?session_tag=s1')).toEqual([
      ['i1', 'alpha', 's1'],
      ['i1', 'alpha', 's1'],
    ])
    // empty filters count as absent
    expect((await ids('?instance=&project=')).length).toBe(5)
    expect(await ids('?instance=nobody')).toEqual([])
  })

  test('newest first, from/to window, limit defaults to 50', async () => {
    const window = await list(`?from=${start}&to=${mid}`)
    expect(window.body.map((r: any) => r.model)).toEqual(['opus', 'haiku', 'opus'])
    const ids = window.body.map((r: any) => r.id)
    expect(ids).toEqual([...ids].sort((a: number, b: number) => b - a))
    expect((await list('?limit=2')).body.map((r: any) => r.model)).toEqual(['haiku', 'gpt'])
    for (let i = 0; i < 50; i++) await record({ provider: 'bulk', model: 'm' })
    expect((await list()).body.length).toBe(50)
    expect((await list('?limit=55')).body.length).toBe(55)
  })
})

describe('spend over time (buckets)', () => {
  test('totals per UTC day or hour and per instance, project or task; bad by, step or time is 400', async () => {
    const from = new Date().toISOString()
    const project = `buckets-${crypto.randomUUID()}`
    await record({ provider: 'p', model: 'm', instance_id: 'bk-1', project, task_id: 7, cost_usd: 0.5, tokens_in: 10, tokens_out: 1 })
    await record({ provider: 'p', model: 'm', instance_id: 'bk-1', project, cost_usd: 0.25, tokens_in: 5 })
    await record({ provider: 'p', model: 'm', instance_id: 'bk-2', project, task_id: 7, cost_usd: 1 })
    const day = from.slice(0, 10)
    const buckets = async (q: string) => (await call(s.api, 'GET', `/api/llm/usage/buckets?from=${from}&${q}`)).body
    expect(await buckets('by=instance')).toEqual([
      { bucket: day, key: 'bk-1', total_tokens_in: 15, total_tokens_out: 1, total_cost_usd: 0.75, request_count: 2 },
      { bucket: day, key: 'bk-2', total_tokens_in: 0, total_tokens_out: 0, total_cost_usd: 1, request_count: 1 },
    ])
    expect((await buckets('by=task')).map((b: any) => [b.key, b.total_cost_usd])).toEqual([['', 0.25], ['7', 1.5]])
    const hours = await buckets('step=hour')
    expect(hours.map((b: any) => [b.bucket.length, b.key, b.total_cost_usd])).toEqual([[13, project, 1.75]])
    for (const [q, message] of [
      ['by=model', 'invalid by: expected one of instance, project, task'],
      ['by=task&step=week', 'invalid step: expected hour or day'],
      ['by=task&from=yesterday', 'from'],
    ]) {
      const r = await call(s.api, 'GET', `/api/llm/usage/buckets?${q}`)
      expect([q, r.status]).toEqual([q, 400])
      expect(r.body.error).toContain(message)
    }
  })
})

// Agent telemetry over real HTTP (oversight.md "Agent telemetry"): the OTLP bodies Claude
// Code 2.1.332 sent (captured, test/fixtures/otlp) and Codex's (built from its source) become
// usage records attributed through hook sessions; a resent batch is recorded once.
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { call, startApp, type InProcessServer } from './helpers'
import { CODEX_CAPTURED_SESSION, CODEX_SESSION, RESPONSE, claudeJson, claudeProto, codexJson, pricesFile } from './otlp-fixtures'

const ADMIN = 'telemetry-admin-token'
const admin = { authorization: `Bearer ${ADMIN}` }
let s: InProcessServer
let agentToken: string
let viewerToken: string

beforeAll(async () => {
  s = await startApp(['--auth-token', ADMIN, '--llm-prices', pricesFile({ 'gpt-5-codex': { in_usd_per_mtok: 1.25, out_usd_per_mtok: 10 } })])
  agentToken = (await call(s.api, 'POST', '/api/tokens', { name: 'otel-agent', role: 'agent' }, admin)).body.token
  viewerToken = (await call(s.api, 'POST', '/api/tokens', { name: 'otel-viewer', role: 'viewer' }, admin)).body.token
})
afterAll(() => s.cleanup())

const JSON_TYPE = { 'content-type': 'application/json' }
const PROTO_TYPE = { 'content-type': 'application/x-protobuf' }
const send = (signal: 'logs' | 'metrics', body: string | Uint8Array, headers: Record<string, string> = JSON_TYPE, who: Record<string, string> = admin) =>
  call(s.api, 'POST', `/v1/${signal}`, body, { ...who, ...headers })
const usageOf = async (session: string) => (await call(s.api, 'GET', `/api/llm/usage?session_tag=${session}&limit=100`, undefined, admin)).body as any[]

let n = 0
/** A hook session of Claude Code (or Codex) opened by SessionStart: its id, instance, project and token. */
async function hookSession(agent: 'claude-code' | 'codex' = 'claude-code') {
  const id = crypto.randomUUID()
  const project = `telemetry-p${++n}`
  const r = await call(s.api, 'POST', `/api/hooks/${agent}`, { session_id: id, hook_event_name: 'SessionStart', cwd: `/tmp/${project}`, source: 'startup' }, {
    ...admin,
    'x-muster-agent': `otel-agent-${n}`,
    'x-muster-project': project,
  })
  expect(r.status).toBe(200)
  // who the session acts as comes in headers, never in the text the model reads
  const token = r.headers.get('x-muster-instance-token')!
  expect(r.text).not.toContain(token)
  const row = ((await call(s.api, 'GET', '/api/sessions', undefined, admin)).body as any[]).find((x) => x.session_id === id)
  return { id, project, instance: row.instance_id as string, name: row.name as string, token }
}

describe('POST /v1/logs', () => {
  test("Claude Code's api_request (JSON, as captured) is one usage record: tokens with cache, its cost, its session", async () => {
    const session = crypto.randomUUID()
    const r = await send('logs', claudeJson('logs', session))
    expect(r.status).toBe(200)
    expect(r.headers.get('content-type')).toContain('application/json')
    expect(r.body).toEqual({ partialSuccess: { rejectedLogRecords: 0 } })
    const rows = await usageOf(session)
    expect(rows).toEqual([
      {
        id: expect.any(Number),
        instance_id: '',
        project: '',
        provider: 'anthropic',
        model: 'claude-sonnet-4-5',
        tokens_in: 160,
        tokens_out: 7,
        cost_usd: 0.0005115,
        request_type: 'completion',
        session_tag: session,
        task_id: null,
        created_at: expect.stringMatching(/^2026-11-28T04:\d{2}:\d{2}\.\d{3}Z$/),
      },
    ])
  })

  test('protobuf and gzipped protobuf bodies decode the same; the answer is the protobuf OTLP response', async () => {
    for (const gzip of [false, true]) {
      const session = crypto.randomUUID()
      const r = await call(s.api, 'POST', '/v1/logs', claudeProto('logs', session, gzip), { ...admin, ...PROTO_TYPE, ...(gzip ? { 'content-encoding': 'gzip' } : {}) })
      expect(r.status).toBe(200)
      expect(r.headers.get('content-type')).toBe('application/x-protobuf')
      const rows = await usageOf(session)
      expect(rows.map((u) => [u.provider, u.model, u.tokens_in, u.tokens_out, u.cost_usd])).toEqual([['anthropic', 'claude-sonnet-4-5', 160, 7, 0.0005115]])
    }
  })

  test('gzipped JSON is accepted too', async () => {
    const session = crypto.randomUUID()
    const r = await send('logs', Bun.gzipSync(claudeJson('logs', session)), { ...JSON_TYPE, 'content-encoding': 'gzip' })
    expect(r.status).toBe(200)
    expect((await usageOf(session)).length).toBe(1)
  })

  test('the same batch sent again is recorded once (JSON and protobuf)', async () => {
    const session = crypto.randomUUID()
    for (let i = 0; i < 3; i++) expect((await send('logs', claudeJson('logs', session))).status).toBe(200)
    expect((await usageOf(session)).length).toBe(1)
    const other = crypto.randomUUID()
    const body = claudeProto('logs', other)
    for (let i = 0; i < 2; i++) expect((await send('logs', body, PROTO_TYPE)).status).toBe(200)
    expect((await usageOf(other)).length).toBe(1)
  })

  test("a hook session's events go to its instance, project and the one task it holds; the session's name counts for agent budgets", async () => {
    const h = await hookSession()
    expect((await send('logs', claudeJson('logs', h.id))).status).toBe(200)
    expect((await usageOf(h.id))[0]).toMatchObject({ instance_id: h.instance, project: h.project, task_id: null })
    const queue = `telemetry-q${n}`
    const task = (await call(s.api, 'POST', `/api/queues/${queue}/tasks`, { title: 'spend' }, admin)).body
    expect((await call(s.api, 'POST', `/api/queues/${queue}/claim`, {}, { ...admin, 'x-instance-token': h.token })).body.id).toBe(task.id)
    // another request of the session (the captured event, a second later)
    const later = claudeJson('logs', h.id).replaceAll('1795839', '1795840')
    expect((await send('logs', later)).status).toBe(200)
    const rows = await usageOf(h.id)
    expect(rows.length).toBe(2)
    expect(rows[0]).toMatchObject({ instance_id: h.instance, project: h.project, task_id: task.id })
  })

  test("Codex's response.completed costs from the price table; a model not in it costs 0 and counts as unpriced", async () => {
    const h = await hookSession('codex')
    expect((await send('logs', codexJson(h.id))).body).toEqual({ partialSuccess: { rejectedLogRecords: 0 } })
    const [row] = await usageOf(h.id)
    // 2,400 in at $1.25 and 600 out at $10 per million tokens
    expect(row).toMatchObject({ provider: 'openai', model: 'gpt-5-codex', tokens_in: 2400, tokens_out: 600, cost_usd: 0.009, instance_id: h.instance, project: h.project })
    // as captured from Codex 0.171.0: its log records carry no timeUnixNano, only the observed time
    expect(row.created_at.startsWith('2026-11-28T05:03:13')).toBe(true)
    // the body built from Codex's source, of a model the price table lacks
    const session = crypto.randomUUID()
    await send('logs', codexJson(session, 'gpt-unpriced-x', false))
    expect((await usageOf(session))[0]).toMatchObject({ provider: 'openai', model: 'gpt-unpriced-x', tokens_in: 2400, tokens_out: 600, cost_usd: 0 })
    const summary = (await call(s.api, 'GET', '/api/llm/usage/summary?group_by=model', undefined, admin)).body
    expect(summary.unpriced_models).toEqual({ 'gpt-unpriced-x': 1 })
  })

  test('a request event without a model or with bad token counts is rejected in partialSuccess; other events are ignored', async () => {
    const session = crypto.randomUUID()
    const body = JSON.parse(claudeJson('logs', session))
    const records = body.resourceLogs[0].scopeLogs[0].logRecords as any[]
    const request = records.find((r) => r.body.stringValue === 'claude_code.api_request')
    const noModel = { ...request, timeUnixNano: '1795839424999000000', attributes: request.attributes.filter((a: any) => a.key !== 'model') }
    const badTokens = { ...request, timeUnixNano: '1795839424998000000', attributes: request.attributes.map((a: any) => (a.key === 'input_tokens' ? { key: a.key, value: { intValue: -5 } } : a)) }
    records.push(noModel, badTokens)
    const r = await send('logs', JSON.stringify(body))
    expect(r.status).toBe(200)
    expect(r.body.partialSuccess.rejectedLogRecords).toBe(2)
    expect(r.body.partialSuccess.errorMessage).toContain('model')
    expect((await usageOf(session)).length).toBe(1)
    // a body with no request event records nothing
    const none = await send('logs', JSON.stringify({ resourceLogs: [{ scopeLogs: [{ logRecords: [{ body: { stringValue: 'claude_code.user_prompt' } }] }] }] }))
    expect(none.body).toEqual({ partialSuccess: { rejectedLogRecords: 0 } })
    expect((await send('logs', '{}')).status).toBe(200)
  })

  test('a body that does not decode is 400; another content type or encoding is 415; nothing is recorded', async () => {
    const before = (await call(s.api, 'GET', '/api/llm/usage/summary', undefined, admin)).body.total.request_count
    const bad: [string | Uint8Array, Record<string, string>, number][] = [
      ['not json', JSON_TYPE, 400],
      ['[1,2]', JSON_TYPE, 400],
      [new Uint8Array([0xff, 0xff, 0xff, 0x01, 0x02]), PROTO_TYPE, 400],
      [new Uint8Array([1, 2, 3]), { ...PROTO_TYPE, 'content-encoding': 'gzip' }, 400],
      [claudeJson('logs', crypto.randomUUID()), { 'content-type': 'text/plain' }, 415],
      [claudeJson('logs', crypto.randomUUID()), {}, 415],
      [claudeJson('logs', crypto.randomUUID()), { ...JSON_TYPE, 'content-encoding': 'br' }, 415],
    ]
    for (const [body, headers, status] of bad) {
      const r = await call(s.api, 'POST', '/v1/logs', body, { ...admin, ...headers })
      expect([r.status, r.body.code]).toEqual([status, status])
      expect(r.body.error).toEqual(expect.any(String))
    }
    expect((await call(s.api, 'GET', '/api/llm/usage/summary', undefined, admin)).body.total.request_count).toBe(before)
  })

  test('an agent token may send; a viewer is 403 and no token 401, before the body is read', async () => {
    const session = crypto.randomUUID()
    expect((await send('logs', claudeJson('logs', session), JSON_TYPE, { authorization: `Bearer ${agentToken}` })).status).toBe(200)
    for (const signal of ['logs', 'metrics'] as const) {
      const viewer = await send(signal, 'garbage', { 'content-type': 'text/plain' }, { authorization: `Bearer ${viewerToken}` })
      expect(viewer.status).toBe(403)
      expect(viewer.body).toEqual({ error: 'read-only token', code: 403 })
      expect((await send(signal, claudeJson(signal, session), JSON_TYPE, {})).status).toBe(401)
    }
    expect((await usageOf(session)).length).toBe(1)
    const [entry] = (await call(s.api, 'GET', '/api/audit?action=telemetry.logs&actor=token:otel-agent&limit=1', undefined, admin)).body
    expect(entry).toMatchObject({ action: 'telemetry.logs', outcome: 'success', detail: expect.stringContaining('1 usage records') })
  })
})

describe('POST /v1/metrics', () => {
  test("delta counters of a hook session's id add to its instance's agent metrics, under their names (JSON and protobuf)", async () => {
    const h = await hookSession()
    const r = await send('metrics', claudeJson('metrics', h.id))
    expect(r.status).toBe(200)
    expect(r.body).toEqual({ partialSuccess: { rejectedDataPoints: 0 } })
    const p = await s.fetch('/v1/metrics', { method: 'POST', body: claudeProto('metrics', h.id, true), headers: { ...admin, ...PROTO_TYPE, 'content-encoding': 'gzip' } })
    expect(p.status).toBe(200)
    const answer = RESPONSE.metrics.toObject(RESPONSE.metrics.decode(new Uint8Array(await p.arrayBuffer())), { longs: Number })
    expect(answer).toEqual({ partialSuccess: { rejectedDataPoints: 0 } })
    const totals = (await call(s.api, 'GET', '/api/metrics/agents', undefined, admin)).body
    const mine = JSON.stringify(totals)
    expect(mine).toContain(h.instance)
    expect(mine).toContain('claude_code.token.usage')
    expect(mine).toContain('claude_code.session.count')
  })

  test('counters of an unknown session are accepted and ignored; a bad body is 400, a bad type 415', async () => {
    expect((await send('metrics', claudeJson('metrics', crypto.randomUUID()))).status).toBe(200)
    expect((await send('metrics', 'nope')).status).toBe(400)
    expect((await send('metrics', new Uint8Array([0xff, 0xff, 0xff]), PROTO_TYPE)).status).toBe(400)
    expect((await send('metrics', '{}', { 'content-type': 'application/xml' })).status).toBe(415)
  })
})

test('the Codex fixtures carry their session id only where it is swapped', () => {
  expect(codexJson('x')).not.toContain(CODEX_CAPTURED_SESSION)
  expect(codexJson('x', 'gpt-5-codex', false)).not.toContain(CODEX_SESSION)
})

describe('--llm-prices', () => {
  test('a file that is not a price table stops the server with one line naming the flag and the model', async () => {
    const { ConfigError, loadConfig } = await import('../lib/config')
    const bad: [unknown, string][] = [
      [{ 'gpt-x': { in_usd_per_mtok: 1 } }, 'model gpt-x needs in_usd_per_mtok and out_usd_per_mtok'],
      [{ 'gpt-x': { in_usd_per_mtok: -1, out_usd_per_mtok: 2 } }, 'model gpt-x'],
      [[1, 2], 'expected {model: {in_usd_per_mtok, out_usd_per_mtok}}'],
    ]
    for (const [table, message] of bad) {
      const run = () => loadConfig(['--llm-prices', pricesFile(table as any)], {})
      expect(run).toThrow(ConfigError)
      expect(run).toThrow(message)
      expect(run).toThrow('--llm-prices / SERVICE_LLM_PRICES')
    }
    expect(() => loadConfig(['--llm-prices', '/nonexistent/prices.json'], {})).toThrow('cannot read /nonexistent/prices.json as JSON')
    const ok = loadConfig([], { SERVICE_LLM_PRICES: pricesFile({ m: { in_usd_per_mtok: 0, out_usd_per_mtok: 2.5 } }) })
    expect(ok.llmPrices).toEqual({ m: { in_usd_per_mtok: 0, out_usd_per_mtok: 2.5 } })
    expect(loadConfig([], {}).llmPrices).toEqual({})
  })
})

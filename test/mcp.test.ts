import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { Client } from '@modelcontextprotocol/sdk/client/index.js'
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js'
import pkg from '../package.json' with { type: 'json' }
import { call, eventually, register, startServer, type TestServer } from './helpers'

const TOKEN = 'mcp-test-token'
const AUTH = { Authorization: `Bearer ${TOKEN}` }
let s: TestServer
let client: Client
beforeAll(async () => {
  s = await startServer({ args: ['--auth-token', TOKEN] })
  client = await connect(AUTH)
})
afterAll(async () => {
  await client?.close()
  await s.cleanup()
})

async function connect(headers: Record<string, string>): Promise<Client> {
  const c = new Client({ name: 'muster-test', version: '1.0.0' })
  await c.connect(new StreamableHTTPClientTransport(new URL(`${s.api}/mcp`), { requestInit: { headers } }))
  return c
}
const api = (method: string, path: string, body?: unknown, headers: Record<string, string> = {}) =>
  call(s.api, method, path, body, { ...AUTH, ...headers })
const structured = (r: any) => {
  expect(r.isError).toBeFalsy()
  // The text content carries the same JSON as the structured content.
  expect(JSON.parse(r.content[0].text)).toEqual(r.structuredContent)
  return r.structuredContent as any
}

describe('MCP discovery endpoint', () => {
  test('lists exactly the five tools, each with an input schema and a short description', async () => {
    const { tools } = await client.listTools()
    expect(tools.map((t) => t.name).sort()).toEqual(['discover_instances', 'get_endpoints', 'propose_rule', 'register_instance', 'set_intent'])
    for (const t of tools) {
      expect(t.inputSchema.type).toBe('object')
      expect(t.description!.length).toBeLessThan(100)
    }
    const byName = Object.fromEntries(tools.map((t) => [t.name, t.inputSchema as any]))
    expect(byName.register_instance.required).toEqual(['name'])
    expect(byName.set_intent.required.sort()).toEqual(['instance_id', 'intent'])
    expect(byName.propose_rule.required.sort()).toEqual(['message', 'pattern', 'project', 'rule_id'])
    expect(byName.discover_instances.required ?? []).toEqual([])
  })

  test('every parameter has a description; enums where the API has them; annotations on every tool', async () => {
    const { tools } = await client.listTools()
    const undescribed = tools.flatMap((t) =>
      Object.entries((t.inputSchema.properties ?? {}) as Record<string, any>)
        .filter(([, prop]) => !(typeof prop.description === 'string' && prop.description.length > 5))
        .map(([name]) => `${t.name}.${name}`),
    )
    expect(undescribed).toEqual([])
    for (const t of tools) {
      expect(typeof t.annotations?.readOnlyHint).toBe('boolean')
      expect(typeof t.annotations?.destructiveHint).toBe('boolean')
      expect(typeof t.annotations?.idempotentHint).toBe('boolean')
    }
    const byName = Object.fromEntries(tools.map((t) => [t.name, t]))
    const propose = byName.propose_rule!.inputSchema.properties as Record<string, any>
    expect(propose.severity.enum).toEqual(['error', 'warning'])
    expect(propose.match_type.enum).toEqual(['regex', 'missing', 'custom'])
    expect(byName.discover_instances!.annotations).toMatchObject({ readOnlyHint: true })
    expect(byName.get_endpoints!.annotations).toMatchObject({ readOnlyHint: true })
    expect(byName.register_instance!.annotations).toMatchObject({ readOnlyHint: false, destructiveHint: false, idempotentHint: false })
    expect(byName.set_intent!.annotations).toMatchObject({ readOnlyHint: false, idempotentHint: true })
    // The enum is enforced: a severity the API does not know is a tool error, nothing proposed.
    const bad = await client.callTool({ name: 'propose_rule', arguments: { project: 'mcp-enum', rule_id: 'r', pattern: 'x', message: 'm', severity: 'fatal' } })
    expect(bad.isError).toBe(true)
    expect((await api('GET', '/api/rules?project=mcp-enum')).body).toEqual([])
  })

  test('initialize returns instructions: REST/CLI for data, register first, X-Instance-Token, get_endpoints', async () => {
    const text = client.getInstructions()!
    expect(text).toContain(s.api)
    for (const part of ['register_instance first', 'X-Instance-Token', 'get_endpoints', 'REST', 'CLI', '/openapi.json'])
      expect(text).toContain(part)
    // The coordination routes and the inbox are named, so an agent knows they exist.
    for (const route of ['PUT /api/locks/{name}', 'POST /api/reservations', 'POST /api/queues/{queue}/claim', 'GET /api/inbox', 'POST /api/messages', 'POST /api/hooks/{agent}'])
      expect(text).toContain(route)
    expect(client.getServerVersion()).toMatchObject({ name: 'muster', version: pkg.version })
  })

  test('advertises only what a stateless endpoint can do: tools, without list-change notifications', () => {
    expect(client.getServerCapabilities()).toEqual({ tools: { listChanged: false } })
  })

  test('register_instance returns id, token and REST endpoints; the instance exists over REST', async () => {
    const r = structured(await client.callTool({ name: 'register_instance', arguments: { name: 'mcp-agent', workspace: 'shop', stack: 'go', capabilities: ['review'] } }))
    expect(r.id).toBeString()
    expect(r.token).toMatch(/^[0-9a-f]{64}$/)
    expect(r.rest).toBe(s.api)
    expect(r.endpoints.state).toContain('/api/state/')
    expect(r.headers).toEqual({ 'X-Instance-Token': r.token })
    expect(r.heartbeat).toBe(`POST ${s.api}/api/instances/${r.id}/heartbeat`)
    const [verb, url] = r.heartbeat.split(' ')
    expect((await call(url, verb, '', undefined, { ...AUTH, ...r.headers })).body).toEqual({ id: r.id, status: 'ok' })
    const got = await api('GET', `/api/instances/${r.id}`)
    expect(got.body).toMatchObject({ name: 'mcp-agent', workspace: 'shop', stack: 'go', capabilities: ['review'], status: 'active' })
    // The token works as an identity.
    await api('PUT', '/api/state/mcp/probe', { x: 1 }, { 'X-Instance-Token': r.token })
    await eventually(async () => ((await api('GET', `/api/audit?actor=${r.id}`)).body.length ? true : null))
  })

  test('register_instance without a name is a tool error, nothing registered', async () => {
    const before = (await api('GET', '/api/instances')).body.length
    const r: any = await client.callTool({ name: 'register_instance', arguments: { name: '' } })
    expect(r.isError).toBe(true)
    expect(JSON.parse(r.content[0].text)).toEqual({ error: 'name is required', code: 400 })
    expect((await api('GET', '/api/instances')).body.length).toBe(before)
  })

  test('a NUL character in a tool argument is 400 as over REST (either backend), nothing registered', async () => {
    const before = (await api('GET', '/api/instances')).body.length
    const body = { jsonrpc: '2.0', id: 1, method: 'tools/call', params: { name: 'register_instance', arguments: { name: 'a\u0000b' } } }
    const r = await api('POST', '/mcp', body, { accept: 'application/json, text/event-stream' })
    expect(r.status).toBe(400)
    expect(r.body).toEqual({ error: 'text must not contain NUL bytes', code: 400 })
    expect((await api('GET', '/api/instances')).body.length).toBe(before)
  })

  test('arguments that break the input schema are a tool error, nothing registered', async () => {
    const before = (await api('GET', '/api/instances')).body.length
    const r: any = await client.callTool({ name: 'register_instance', arguments: { workspace: 'no-name' } })
    expect(r.isError).toBe(true)
    expect(r.content[0].text).toContain('name')
    expect((await api('GET', '/api/instances')).body.length).toBe(before)
  })

  test('discover_instances filters like GET /api/instances', async () => {
    await register(s, { name: 'finder', workspace: 'search', capabilities: ['index'] }, AUTH)
    const all = structured(await client.callTool({ name: 'discover_instances', arguments: {} }))
    expect(all.instances).toEqual((await api('GET', '/api/instances')).body)
    const some = structured(await client.callTool({ name: 'discover_instances', arguments: { capability: 'index' } }))
    expect(some.instances.map((i: any) => i.name)).toEqual(['finder'])
    expect(JSON.stringify(all)).not.toContain('token')
  })

  test('set_intent sets the intent and refreshes last_seen; unknown id is a tool error', async () => {
    const reg = await register(s, 'intender', AUTH)
    await Bun.sleep(5)
    const r = structured(await client.callTool({ name: 'set_intent', arguments: { instance_id: reg.id, intent: 'writing tests' } }))
    expect(r).toMatchObject({ id: reg.id, intent: 'writing tests' })
    const got = (await api('GET', `/api/instances/${reg.id}`)).body
    expect(got.intent).toBe('writing tests')
    expect(got.last_seen > reg.body.last_seen).toBe(true)
    const missing: any = await client.callTool({ name: 'set_intent', arguments: { instance_id: 'nope', intent: 'x' } })
    expect(missing.isError).toBe(true)
    expect(JSON.parse(missing.content[0].text)).toEqual({ error: 'instance not found', code: 404 })
  })

  test('get_endpoints returns REST and CLI endpoints', async () => {
    const r = structured(await client.callTool({ name: 'get_endpoints', arguments: {} }))
    expect(r.rest).toBe(s.api)
    expect(Object.keys(r.endpoints)).toEqual(expect.arrayContaining(['state', 'specs', 'events', 'instances', 'validate', 'rules', 'locks', 'reservations', 'check', 'tasks', 'inbox', 'messages', 'hooks']))
    expect(r.endpoints.tasks).toContain('POST /api/queues/{queue}/claim')
    expect(r.endpoints.tasks).toContain('POST /api/tasks/{id}/notes')
    for (const route of ['POST /api/messages', 'GET /api/inbox', 'wait=', 'POST /api/messages/{id}/ack']) expect(r.endpoints.inbox).toContain(route)
    for (const route of ['GET /api/messages?q=', 'GET /api/messages/{id}', 'GET /api/threads/{thread}']) expect(r.endpoints.messages).toContain(route)
    expect(r.endpoints.hooks).toContain('POST /api/hooks/{agent}')
    expect(r.endpoints.locks).toContain('PUT /api/locks/{name}')
    expect(r.endpoints.reservations).toContain('POST /api/reservations')
    expect(r.endpoints.state).toContain('?wait=')
    expect(r.endpoints.events).toContain('after_id=N&wait=')
    expect(r.cli.commands.join('\n')).toContain('muster check <project>')
    for (const cmd of ['muster send <name', 'muster inbox [--wait D]', 'muster ack <id>', 'muster thread <thread>']) expect(r.cli.commands.join('\n')).toContain(cmd)
    expect(r.cli.env).toBe(`SERVICE_SERVER=${s.api}`)
    expect(r.cli.commands.length).toBeGreaterThan(3)
  })

  test('propose_rule stores a proposed rule, as POST /api/rules/propose does', async () => {
    const r = structured(
      await client.callTool({
        name: 'propose_rule',
        arguments: { project: 'shop', rule_id: 'no-todo', pattern: 'TODO', message: 'no TODO left behind', proposed_by: 'mcp-agent' },
      }),
    )
    expect(r).toEqual({ project: 'shop', rule_id: 'no-todo', status: 'proposed' })
    const proposed = (await api('GET', '/api/rules?status=proposed')).body
    expect(proposed.find((x: any) => x.rule_id === 'no-todo')).toMatchObject({ project: 'shop', source: 'learned', status: 'proposed', message: 'no TODO left behind' })
    const again: any = await client.callTool({ name: 'propose_rule', arguments: { project: 'shop', rule_id: 'no-todo', pattern: 'TODO', message: 'x' } })
    expect(again.isError).toBe(true)
    expect(JSON.parse(again.content[0].text).code).toBe(409)
  })

  test('a tool call counts once, as mcp_calls, for the calling instance', async () => {
    const reg = await register(s, 'counted', AUTH)
    const agent = await connect({ ...AUTH, 'X-Instance-Token': reg.token })
    try {
      await agent.callTool({ name: 'discover_instances', arguments: {} })
    } finally {
      await agent.close()
    }
    const rows = await eventually(async () => {
      const m = (await api('GET', `/api/metrics/agents?instance_id=${reg.id}`)).body
      return JSON.stringify(m).includes('mcp_calls') ? m : null
    }, 8000)
    const text = JSON.stringify(rows)
    expect(text).not.toContain('rest_calls') // the in-process REST call behind the tool is not a second count
  })

  test('bearer auth covers /mcp', async () => {
    const r = await fetch(`${s.api}/mcp`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', accept: 'application/json, text/event-stream' },
      body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'tools/list' }),
    })
    expect(r.status).toBe(401)
    expect(await r.json()).toEqual({ error: 'invalid or missing bearer token', code: 401 })
    await expect(connect({})).rejects.toThrow()
  })

  test('GET /mcp is 405 with an {error, code} body', async () => {
    const r = await call(s.api, 'GET', '/mcp', undefined, AUTH)
    expect(r.status).toBe(405)
    expect(r.body).toEqual({ error: 'method GET not allowed', code: 405 })
  })
})

// CLI command groups over the service's resources (events, instances, webhooks,
// compliance, templates, metrics, llm, rules, contracts, backup/restore), against
// a live server.
import { afterAll, describe, expect, test } from 'bun:test'
import { readFileSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import type { Server, ServerWebSocket } from 'bun'
import { call, eventually, startServer } from './helpers'
import { identityOf, removeWorkdirs, runCli, spawnCli, workdir, type LiveCli } from './cli-run'

const TOKEN = 'cli-services-token'
const auth = { authorization: `Bearer ${TOKEN}` }
const s = await startServer({ args: ['--auth-token', TOKEN] })
const dir = workdir({ server: s.api, token: TOKEN })
const servers: Server<any>[] = []
afterAll(async () => {
  for (const srv of servers) srv.stop(true)
  await s.cleanup()
  removeWorkdirs()
})

const cli = (...args: string[]) => runCli(args, { cwd: dir })
const publish = (topic: string, data?: unknown) => call(s.api, 'POST', '/api/events/publish', { topic, data }, auth)
const settingsOf = (d: string) => JSON.parse(readFileSync(join(d, 'settings.json'), 'utf8'))

/** A local HTTP server the tests own (webhook receiver, contract target, proxies). */
function serve(options: Parameters<typeof Bun.serve>[0]): Server<any> {
  const srv = Bun.serve({ hostname: '127.0.0.1', port: 0, ...options } as any) as Server<any>
  servers.push(srv)
  return srv
}
const urlOf = (srv: Server<any>) => `http://127.0.0.1:${srv.port}`

async function waitForNote(live: LiveCli, text: string): Promise<void> {
  await eventually(() => live.stderr().includes(text) || live.proc.exitCode !== null, 10_000)
  expect(live.stderr()).toContain(text)
}

describe('events', () => {
  test('publish with and without --data; invalid --data is exit 2 and publishes nothing', async () => {
    const a = await cli('events', 'publish', 'cli.pub', '--data', '{"n":1}')
    expect(a.code).toBe(0)
    expect(a.json).toMatchObject({ topic: 'cli.pub', data: { n: 1 }, source: '' })
    expect(typeof a.json.id).toBe('number')
    const b = await cli('events', 'publish', 'cli.pub')
    expect(b.json.id).toBeGreaterThan(a.json.id)
    const bad = await cli('events', 'publish', 'cli.bad', '--data', '{nope')
    expect(bad.code).toBe(2)
    expect((await cli('events', 'history', '--topic', 'cli.bad')).json).toEqual([])
  })

  test('history --topic --last (newest first) and --after-id (oldest first)', async () => {
    const first = (await cli('events', 'publish', 'hist.a')).json
    const second = (await cli('events', 'publish', 'hist.b')).json
    const last = await cli('events', 'history', '--topic', 'hist.*', '--last', '1')
    expect(last.json.map((e: any) => e.id)).toEqual([second.id])
    const after = await cli('events', 'history', '--topic', 'hist.*', '--after-id', String(first.id - 1))
    expect(after.json.map((e: any) => e.id)).toEqual([first.id, second.id])
    expect((await cli('events', 'history', '--last', 'x')).code).toBe(2)
  })

  test('subscribe (WebSocket) prints matching events published after it started, then exits after --count', async () => {
    await publish('sub.before')
    const live = spawnCli(['events', 'subscribe', 'sub.*', '--count', '2'], { cwd: dir })
    await waitForNote(live, "subscribed to 'sub.*' (websocket)")
    const one = (await publish('sub.one', { n: 1 })).body
    await publish('other.topic')
    const two = (await publish('sub.two', { n: 2 })).body
    expect(await live.proc.exited).toBe(0)
    expect(live.lines().map((l) => JSON.parse(l))).toEqual([one, two])
  })

  test('subscribe ends with the 401 when its token is revoked, rather than reconnecting with it', async () => {
    const made = (await call(s.api, 'POST', '/api/tokens', { name: 'cli-subscriber', role: 'agent' }, auth)).body
    const live = spawnCli(['events', 'subscribe', 'rev.*'], { cwd: workdir({ server: s.api, token: made.token }) })
    await waitForNote(live, "subscribed to 'rev.*' (websocket)")
    expect((await call(s.api, 'DELETE', `/api/tokens/${made.id}`, undefined, auth)).status).toBe(200)
    expect(await live.proc.exited).toBe(1)
    expect(JSON.parse(live.stderr().split('\n').filter((l) => l.startsWith('{')).join(''))).toEqual({
      error: 'token revoked: the subscription ended; ask the admin for a new token',
      code: 401,
    })
  })

  test('subscribe --after-id replays stored events first, without duplicates', async () => {
    const start = (await publish('replay.start')).body.id
    const a = (await publish('replay.a')).body
    const b = (await publish('replay.b')).body
    const r = await runCli(['events', 'subscribe', 'replay.*', '--after-id', String(start), '--count', '2'], { cwd: dir })
    expect(r.code).toBe(0)
    expect(r.stdout.trim().split('\n').map((l) => JSON.parse(l))).toEqual([a, b])
  })

  test('subscribe --poll reads history every 2 s, honouring the pattern', async () => {
    const live = spawnCli(['events', 'subscribe', 'poll.*', '--poll', '--count', '2'], { cwd: dir })
    await waitForNote(live, "polling history every 2s for 'poll.*'")
    const a = (await publish('poll.a')).body
    await publish('nopoll.x')
    const b = (await publish('poll.b')).body
    expect(await live.proc.exited).toBe(0)
    expect(live.lines().map((l) => JSON.parse(l))).toEqual([a, b])
  })

  test('falls back to polling when the WebSocket cannot connect (proxy without upgrades)', async () => {
    const proxy = serve({
      fetch(req: Request) {
        if (req.headers.get('upgrade')) return new Response('no websockets here', { status: 400 })
        const url = new URL(req.url)
        return fetch(s.api + url.pathname + url.search, { method: req.method, headers: req.headers, body: req.body })
      },
    })
    const live = spawnCli(['events', 'subscribe', 'fb.*', '--count', '1'], { cwd: dir, env: { SERVICE_SERVER: urlOf(proxy) } })
    await waitForNote(live, "polling history every 2s for 'fb.*'")
    expect(live.stderr()).toContain('websocket unavailable')
    const e = (await publish('fb.x')).body
    expect(await live.proc.exited).toBe(0)
    expect(live.lines().map((l) => JSON.parse(l))).toEqual([e])
  })

  test('reconnects after the WebSocket drops and resumes with after_id: no gap, no duplicate', async () => {
    // A WebSocket relay in front of the server that the test can cut.
    const upstreams = new Set<WebSocket>()
    const clients = new Set<ServerWebSocket<{ upstream: WebSocket }>>()
    const relay = serve({
      fetch(req: Request, srv: Server<any>) {
        const url = new URL(req.url)
        if (!req.headers.get('upgrade')) return fetch(s.api + url.pathname + url.search, { method: req.method, headers: req.headers })
        const upstream = new WebSocket(s.api.replace('http', 'ws') + url.pathname + url.search, { headers: auth } as any)
        upstreams.add(upstream)
        if (srv.upgrade(req, { data: { upstream } } as any)) return
        return new Response('upgrade failed', { status: 400 })
      },
      websocket: {
        open(ws: ServerWebSocket<{ upstream: WebSocket }>) {
          clients.add(ws)
          ws.data.upstream.onmessage = (m) => ws.send(String(m.data))
        },
        message() {},
        close(ws: ServerWebSocket<{ upstream: WebSocket }>) {
          clients.delete(ws)
          ws.data.upstream.close()
        },
      },
    })
    const live = spawnCli(['events', 'subscribe', 'rc.*', '--count', '3'], { cwd: dir, env: { SERVICE_SERVER: urlOf(relay) } })
    await waitForNote(live, "subscribed to 'rc.*' (websocket)")
    await eventually(() => [...upstreams].some((u) => u.readyState === WebSocket.OPEN))
    const a = (await publish('rc.a')).body
    await eventually(() => live.lines().length === 1)
    for (const c of clients) c.close()
    const b = (await publish('rc.b')).body // published while the client is disconnected
    await eventually(() => live.stderr().split("subscribed to 'rc.*'").length === 3, 10_000)
    const c = (await publish('rc.c')).body
    expect(await live.proc.exited).toBe(0)
    expect(live.stderr()).toContain('reconnecting')
    expect(live.lines().map((l) => JSON.parse(l))).toEqual([a, b, c])
  })
})

describe('register and instances', () => {
  const agentDir = workdir({ server: s.api, token: TOKEN })
  const agent = (...args: string[]) => runCli(args, { cwd: agentDir })
  let id = ''

  test('register saves the instance id and token as the identity of the directory, not in ./settings.json', async () => {
    const r = await agent('register', 'cli-agent', '--workspace', 'shop', '--intent', 'build the api', '--stack', 'bun', '--capabilities', 'ts,sql')
    expect(r.code).toBe(0)
    expect(r.json).toMatchObject({ name: 'cli-agent', workspace: 'shop', intent: 'build the api', stack: 'bun', capabilities: ['ts', 'sql'] })
    expect(typeof r.json.token).toBe('string')
    id = r.json.id
    expect(identityOf(agentDir)).toMatchObject({ name: 'cli-agent', server: s.api, instance_id: id, instance_token: r.json.token })
    expect(settingsOf(agentDir)).toEqual({ server: s.api, token: TOKEN })
  })

  test('later commands send X-Instance-Token: the audit actor is the instance', async () => {
    expect((await agent('state', 'set', 'who/wrote', '--data', '1')).code).toBe(0)
    const entry = (await cli('audit', '--action', 'state.put', '--limit', '1')).json[0]
    expect(entry).toMatchObject({ resource: 'state/who/wrote', actor: id })
  })

  test('instances list (filters) and get never show the token', async () => {
    const list = await cli('instances', 'list', '--workspace', 'shop', '--capability', 'sql')
    expect(list.json.map((i: any) => i.id)).toContain(id)
    expect(list.stdout).not.toContain('"token"')
    expect((await cli('instances', 'list', '--name', 'nobody')).json).toEqual([])
    const one = await cli('instances', 'get', id)
    expect(one.json).toMatchObject({ id, name: 'cli-agent', status: 'active' })
    expect(one.json.token).toBeUndefined()
  })

  test('activate and heartbeat default to the registered instance; stale lists none', async () => {
    expect((await agent('activate')).json).toEqual({ id, status: 'active' })
    expect((await cli('activate', id)).json).toEqual({ id, status: 'active' })
    expect((await agent('heartbeat')).json).toEqual({ id, status: 'ok' })
    const stale = await cli('instances', 'stale')
    expect(stale.code).toBe(0)
    expect(stale.json.map((i: any) => i.id)).not.toContain(id)
  })

  test('errors: unknown instance is exit 1 with 404; missing name or id is exit 2', async () => {
    const g = await cli('instances', 'get', 'no-such-id')
    expect(g.code).toBe(1)
    expect(g.error).toEqual({ error: 'instance not found', code: 404 })
    expect((await cli('activate', 'no-such-id')).error.code).toBe(404)
    expect((await cli('register')).code).toBe(2)
    const noId = await runCli(['heartbeat'], { cwd: workdir({ server: s.api, token: TOKEN }) })
    expect(noId.code).toBe(2)
    expect(noId.stderr).toContain('run `register <name>` first')
  })

  test('instances delete deregisters and forgets the saved instance', async () => {
    expect((await agent('instances', 'delete', id)).json).toEqual({ deleted: id })
    expect(identityOf(agentDir)).toBeNull()
    expect(settingsOf(agentDir)).toEqual({ server: s.api, token: TOKEN })
    expect((await cli('instances', 'get', id)).code).toBe(1)
  })
})

describe('webhooks', () => {
  const received: { topic: string | null; body: any }[] = []
  const receiver = serve({
    async fetch(req: Request) {
      received.push({ topic: req.headers.get('x-service-event'), body: await req.json() })
      return new Response('ok')
    },
  })

  test('add, list (no secret), test delivers, delete', async () => {
    const add = await cli('webhooks', 'add', 'cli-hook', urlOf(receiver), '--pattern', 'cli.*', '--pattern', 'deploy.*', '--secret', 's3cret')
    expect(add.code).toBe(0)
    expect(add.json).toMatchObject({ id: 'cli-hook', url: urlOf(receiver), patterns: ['cli.*', 'deploy.*'], active: true, fail_count: 0 })
    expect(add.stdout).not.toContain('s3cret')
    const list = await cli('webhooks', 'list')
    expect(list.json.find((w: any) => w.id === 'cli-hook')).toMatchObject({ patterns: ['cli.*', 'deploy.*'] })
    expect(list.stdout).not.toContain('s3cret')
    expect((await cli('webhooks', 'test', 'cli-hook')).json).toEqual({ tested: 'cli-hook', status: 'ok' })
    await eventually(() => received.some((r) => r.body?.topic === 'webhook.test'))
    expect((await cli('webhooks', 'enable', 'cli-hook')).code).toBe(0)
    expect((await cli('webhooks', 'delete', 'cli-hook')).json).toEqual({ deleted: 'cli-hook' })
    expect((await cli('webhooks', 'list')).json.map((w: any) => w.id)).not.toContain('cli-hook')
  })

  test('errors: duplicate 409, unknown 404, failed test delivery 400 (all exit 1); missing url exit 2', async () => {
    await cli('webhooks', 'add', 'dup-hook', urlOf(receiver))
    const dup = await cli('webhooks', 'add', 'dup-hook', urlOf(receiver))
    expect(dup.code).toBe(1)
    expect(dup.error.code).toBe(409)
    const unknown = await cli('webhooks', 'test', 'nope')
    expect(unknown.code).toBe(1)
    expect(unknown.error.code).toBe(404)
    expect((await cli('webhooks', 'delete', 'nope')).error.code).toBe(404)
    await cli('webhooks', 'add', 'dead-hook', 'http://127.0.0.1:9/hook')
    const failed = await cli('webhooks', 'test', 'dead-hook')
    expect(failed.code).toBe(1)
    expect(failed.error.code).toBe(400)
    expect((await cli('webhooks', 'add', 'no-url')).code).toBe(2)
  })
})

describe('compliance', () => {
  test('run checks now; history lists runs with --instance-id and --limit', async () => {
    const run = await cli('compliance', 'run')
    expect(run.code).toBe(0)
    expect(run.json.checked).toBe(true)
    expect(run.json.count).toBe(run.json.runs.length)
    const h = await cli('compliance', 'history', '--limit', '1')
    expect(Array.isArray(h.json)).toBe(true)
    expect(h.json.length).toBeLessThanOrEqual(1)
    expect((await cli('compliance', 'history', '--instance-id', 'nobody')).json).toEqual([])
    expect((await cli('compliance', 'history', '--limit', 'many')).code).toBe(2)
  })
})

describe('templates', () => {
  const rules = [{ rule_id: 'no-todo', pattern: 'TODO', severity: 'warning' }]

  test('create, list (no data), get (data), apply, delete', async () => {
    const c = await cli('templates', 'create', 'cli-rules', '--name', 'CLI rules', '--kind', 'rules', '--tag', 'lint', '--description', 'basic', '--data', JSON.stringify(rules))
    expect(c.code).toBe(0)
    expect(c.json).toMatchObject({ id: 'cli-rules', name: 'CLI rules', kind: 'rules', tags: ['lint'], version: 1 })
    const list = await cli('templates', 'list', '--kind', 'rules', '--tag', 'lint')
    const listed = list.json.find((t: any) => t.id === 'cli-rules')
    expect(listed).toBeDefined()
    expect(listed.data).toBeUndefined()
    expect((await cli('templates', 'list', '--tag', 'no-such-tag')).json).toEqual([])
    expect((await cli('templates', 'get', 'cli-rules')).json.data).toEqual(rules)
    const applied = await cli('templates', 'apply', 'cli-rules', '--project', 'tpl-shop')
    expect(applied.code).toBe(0)
    expect(applied.json).toMatchObject({ project: 'tpl-shop', kind: 'rules' })
    expect((await cli('templates', 'delete', 'cli-rules')).json).toEqual({ deleted: 'cli-rules' })
    const gone = await cli('templates', 'get', 'cli-rules')
    expect(gone.code).toBe(1)
    expect(gone.error).toEqual({ error: 'template not found', code: 404 })
  })

  test('errors: duplicate id 409 (exit 1); bad --kind, missing --name, bad --data (exit 2)', async () => {
    await cli('templates', 'create', 'dup-tpl', '--name', 'x')
    const dup = await cli('templates', 'create', 'dup-tpl', '--name', 'x')
    expect(dup.code).toBe(1)
    expect(dup.error.code).toBe(409)
    expect((await cli('templates', 'create', 'k', '--name', 'x', '--kind', 'poem')).code).toBe(2)
    expect((await cli('templates', 'create', 'k')).code).toBe(2)
    expect((await cli('templates', 'create', 'k', '--name', 'x', '--data', '{')).code).toBe(2)
    expect((await cli('templates', 'get', 'k')).code).toBe(1)
  })
})

describe('metrics', () => {
  test('metrics and metrics agents', async () => {
    const m = await cli('metrics')
    expect(m.code).toBe(0)
    expect(m.json).toMatchObject({ api_bind: expect.any(String) })
    expect(typeof m.json.state_keys).toBe('number')
    const agents = await cli('metrics', 'agents')
    expect(Array.isArray(agents.json)).toBe(true)
    expect((await cli('metrics', 'agents', '--instance-id', 'nobody', '--period', '2000-01-01')).json).toEqual([])
  })

  test('status includes the service metrics', async () => {
    const st = await cli('status')
    expect(st.json).toMatchObject({ status: 'ok', metrics: { api_bind: expect.any(String) } })
  })
})

describe('llm', () => {
  test('record, usage with a filter, summary --by', async () => {
    const a = await cli('llm', 'record', '--provider', 'anthropic', '--model', 'm-large', '--tokens-in', '100', '--tokens-out', '20', '--cost', '0.5', '--project', 'llm-shop', '--session-tag', 's1')
    expect(a.code).toBe(0)
    expect(a.json).toMatchObject({ recorded: true })
    await cli('llm', 'record', '--provider', 'anthropic', '--model', 'm-small', '--tokens-in', '10', '--project', 'llm-shop')
    const usage = await cli('llm', 'usage', '--project', 'llm-shop')
    expect(usage.json).toHaveLength(2)
    expect(usage.json.find((u: any) => u.model === 'm-large')).toMatchObject({ provider: 'anthropic', tokens_in: 100, tokens_out: 20, cost_usd: 0.5, session_tag: 's1' })
    expect((await cli('llm', 'usage', '--session-tag', 's1', '--limit', '1')).json).toHaveLength(1)
    const sum = await cli('llm', 'summary', '--by', 'model')
    expect(sum.json.group_by).toBe('model')
    expect(sum.json.groups['m-large']).toMatchObject({ total_tokens_in: 100, total_tokens_out: 20, request_count: 1 })
    expect(sum.json.total.request_count).toBeGreaterThanOrEqual(2)
  })

  test('usage errors: bad --by, missing --model, negative --cost (exit 2, nothing recorded)', async () => {
    expect((await cli('llm', 'summary', '--by', 'colour')).code).toBe(2)
    expect((await cli('llm', 'record', '--provider', 'p')).code).toBe(2)
    expect((await cli('llm', 'record', '--provider', 'p', '--model', 'm', '--cost', '-1', '--project', 'llm-bad')).code).toBe(2)
    expect((await cli('llm', 'usage', '--project', 'llm-bad')).json).toEqual([])
  })
})

describe('rules', () => {
  const rules = [
    { project: 'rules-shop', rule_id: 'no-todo', pattern: 'TODO', severity: 'warning' },
    { project: 'rules-shop', rule_id: 'no-log', match_type: 'custom', pattern: 'no-console-log' },
  ]

  test('import --file, export --source, export --output', async () => {
    const file = join(dir, 'rules.json')
    writeFileSync(file, JSON.stringify(rules))
    const imp = await cli('rules', 'import', '--file', file)
    expect(imp.code).toBe(0)
    expect(imp.json).toEqual({ imported: 2 })
    const exp = await cli('rules', 'export', '--source', 'external')
    const mine = exp.json.filter((r: any) => r.project === 'rules-shop')
    expect(mine.map((r: any) => r.rule_id).sort()).toEqual(['no-log', 'no-todo'])
    for (const r of mine) expect(r).toMatchObject({ source: 'external', status: 'accepted' })
    expect((await cli('rules', 'export', '--source', 'local')).json.filter((r: any) => r.project === 'rules-shop')).toEqual([])
    const out = join(dir, 'exported.json')
    const written = await cli('rules', 'export', '--source', 'external', '--output', out)
    expect(written.json).toEqual({ output: out, count: exp.json.length })
    expect(JSON.parse(readFileSync(out, 'utf8'))).toEqual(exp.json)
  })

  test('errors: empty array is the server 400 (exit 1); a file that is not JSON or missing is exit 2', async () => {
    const empty = join(dir, 'empty.json')
    writeFileSync(empty, '[]')
    const r = await cli('rules', 'import', '--file', empty)
    expect(r.code).toBe(1)
    expect(r.error.code).toBe(400)
    const bad = join(dir, 'bad-rules.json')
    writeFileSync(bad, '[{')
    expect((await cli('rules', 'import', '--file', bad)).code).toBe(2)
    expect((await cli('rules', 'import', '--file', join(dir, 'nope.json'))).code).toBe(2)
    expect((await cli('rules', 'import')).code).toBe(2)
  })

  test('validate checks content against the imported rules; errors found are exit 3 (--fail-on error, the default)', async () => {
    const r = await cli('validate', 'rules-shop', '--data', 'ok\n// TODO later\nconsole.log(1)\n')
    expect(r.code).toBe(3)
    expect(r.json.count).toBe(2)
    expect(r.json.violations.map((v: any) => v.rule_id).sort()).toEqual(['no-log', 'no-todo'])
    expect(r.stderr).toBe('muster: 1 violation(s) at or above error\n')
    // no-todo is a warning: it fails only from --fail-on warning down.
    const warning = await cli('validate', 'rules-shop', '--data', '// TODO\n')
    expect([warning.code, warning.json.count]).toEqual([0, 1])
    const strict = await cli('validate', 'rules-shop', '--data', '// TODO\n', '--fail-on', 'warning')
    expect([strict.code, strict.json.count, strict.stderr]).toEqual([3, 1, 'muster: 1 violation(s) at or above warning\n'])
    expect((await cli('validate', 'rules-shop', '--data', 'console.log(1)\n', '--fail-on', 'none')).code).toBe(0)
    expect((await cli('validate', 'rules-shop', '--data', 'x', '--fail-on', 'info')).code).toBe(2)
  })
})

describe('contract', () => {
  const target = serve({
    async fetch(req: Request) {
      if (req.method === 'POST' && new URL(req.url).pathname === '/users') return Response.json({ id: 1, ...((await req.json()) as object) }, { status: 201 })
      return new Response('not here', { status: 404 })
    },
  })
  const contract = () => ({
    kind: 'contract',
    version: 1,
    base_url: urlOf(target),
    endpoints: {
      'POST /users': {
        request: { type: 'object', required: ['name'], properties: { name: { type: 'string' } } },
        response: { type: 'object', required: ['id', 'name'], properties: { id: { type: 'integer' }, name: { type: 'string' } } },
        response_status: 201,
      },
    },
  })

  test('set, get, validate (valid and invalid payload), test against the live endpoint', async () => {
    const set = await cli('contract', 'set', 'c-shop/users', '--data', JSON.stringify(contract()))
    expect(set.code).toBe(0)
    const get = await cli('contract', 'get', 'c-shop/users')
    expect(get.code).toBe(0)
    expect(JSON.stringify(get.json)).toContain('POST /users')
    const ok = await cli('contract', 'validate', 'c-shop/users', '--endpoint', 'POST /users', '--data', '{"name":"ada"}')
    expect(ok.json).toEqual({ valid: true, violations: [] })
    const bad = await cli('contract', 'validate', 'c-shop/users', '--endpoint', 'POST /users', '--direction', 'request', '--data', '{"name":7}')
    expect(bad.code).toBe(3)
    expect(bad.json.valid).toBe(false)
    expect(bad.json.violations.length).toBeGreaterThan(0)
    const live = await cli('contract', 'test', 'c-shop/users', '--endpoint', 'POST /users', '--test-data', '{"name":"ada"}')
    expect(live.code).toBe(0)
    expect(typeof live.json).toBe('object')
  })

  test('errors: malformed contract 400 and unknown contract 404 (exit 1); bad direction exit 2', async () => {
    const malformed = await cli('contract', 'set', 'c-shop/broken', '--data', '{"endpoints":"nope"}')
    expect(malformed.code).toBe(1)
    expect(malformed.error.code).toBe(400)
    const missing = await cli('contract', 'get', 'c-shop/none')
    expect(missing.code).toBe(1)
    expect(missing.error.code).toBe(404)
    expect((await cli('contract', 'validate', 'c-shop/users', '--endpoint', 'POST /users', '--direction', 'sideways', '--data', '{}')).code).toBe(2)
    expect((await cli('contract', 'test', 'c-shop/users')).code).toBe(2)
  })
})

// Last: restore replaces the whole database under every group above.
describe('backup and restore', () => {
  test('backup --output writes the database; restore --file brings it back', async () => {
    await cli('state', 'set', 'bk/k', '--data', '"v1"')
    const out = join(dir, 'muster.backup')
    const b = await cli('backup', '--output', out)
    expect(b.code).toBe(0)
    expect(b.json.output).toBe(out)
    const bytes = readFileSync(out)
    expect(b.json.bytes).toBe(bytes.length)
    expect(bytes.subarray(0, 15).toString()).toBe('SQLite format 3')
    await cli('state', 'set', 'bk/k', '--data', '"v2"')
    const r = await cli('restore', '--file', out)
    expect(r.code).toBe(0)
    expect((await cli('state', 'get', 'bk/k')).stdout).toBe('"v1"')
  })

  test('a bad file is the server 400 and the live data stays; missing flags or files are exit 2', async () => {
    const junk = join(dir, 'junk.backup')
    writeFileSync(junk, 'this is not a database')
    const r = await cli('restore', '--file', junk)
    expect(r.code).toBe(1)
    expect(r.error.code).toBe(400)
    expect((await cli('state', 'get', 'bk/k')).stdout).toBe('"v1"')
    expect((await cli('restore', '--file', join(dir, 'nope.backup'))).code).toBe(2)
    expect((await cli('restore')).code).toBe(2)
    expect((await cli('backup')).code).toBe(2)
  })
})

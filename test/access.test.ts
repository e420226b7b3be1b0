// Tokens with roles (access.md), over real HTTP, WebSocket and MCP, on both backends.
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { call, eventually, register, startServer, tempDir, type Agent, type TestServer } from './helpers'
import { PG_BASE, databaseFor } from './pg'
import { NAMED_ROUTES } from '../http/access'

const ADMIN_TOKEN = 'adm1n-secret'
const admin = { authorization: `Bearer ${ADMIN_TOKEN}` }
const bearer = (token: string) => ({ authorization: `Bearer ${token}` })

let s: TestServer
beforeAll(async () => (s = await startServer({ args: ['--auth-token', ADMIN_TOKEN] })))
afterAll(() => s.cleanup())

let names = 0
async function makeToken(role: 'agent' | 'viewer', extra: Record<string, unknown> = {}) {
  const r = await call(s.api, 'POST', '/api/tokens', { name: `${role}-${++names}`, role, ...extra }, admin)
  expect(r.status).toBe(201)
  return r.body as { id: string; name: string; role: string; token: string; created_at: string; expires_at: string | null }
}

describe('tokens', () => {
  test('create shows the secret once; list never does; name unique among live tokens', async () => {
    const made = await makeToken('agent')
    expect(Object.keys(made).sort()).toEqual(['created_at', 'expires_at', 'id', 'name', 'role', 'token'])
    expect(typeof made.id).toBe('string')
    expect(made.expires_at).toBeNull()
    const list = await call(s.api, 'GET', '/api/tokens', undefined, admin)
    const row = list.body.find((t: { id: string }) => t.id === made.id)
    expect(Object.keys(row).sort()).toEqual(['created_at', 'expires_at', 'id', 'last_used_at', 'name', 'role'])
    expect(list.text).not.toContain(made.token)
    const again = await call(s.api, 'POST', '/api/tokens', { name: made.name, role: 'viewer' }, admin)
    expect(again.status).toBe(409)
    expect(again.body.code).toBe(409)
  })

  test('bad input is 400 and makes nothing', async () => {
    const before = (await call(s.api, 'GET', '/api/tokens', undefined, admin)).body.length
    for (const body of [{}, { name: '', role: 'agent' }, { name: 'x'.repeat(101), role: 'agent' }, { name: 'ok', role: 'admin' }, { name: 'ok', role: 'agent', ttl_ms: 999 }, { name: 'ok', role: 'agent', ttl_ms: 604_800_001 }]) {
      const r = await call(s.api, 'POST', '/api/tokens', body, admin)
      expect(r.status).toBe(400)
      expect(r.body.code).toBe(400)
    }
    expect((await call(s.api, 'GET', '/api/tokens', undefined, admin)).body.length).toBe(before)
  })

  test('revoke: refused from the next request, gone from the list, 404 the second time', async () => {
    const t = await makeToken('agent')
    expect((await call(s.api, 'GET', '/api/state', undefined, bearer(t.token))).status).toBe(200)
    const r = await call(s.api, 'DELETE', `/api/tokens/${t.id}`, undefined, admin)
    expect(r.status).toBe(200)
    expect(r.body).toEqual({ id: t.id, revoked: true })
    expect((await call(s.api, 'GET', '/api/state', undefined, bearer(t.token))).status).toBe(401)
    expect((await call(s.api, 'GET', '/api/tokens', undefined, admin)).body.some((x: { id: string }) => x.id === t.id)).toBe(false)
    expect((await call(s.api, 'DELETE', `/api/tokens/${t.id}`, undefined, admin)).status).toBe(404)
    expect((await call(s.api, 'DELETE', '/api/tokens/nope', undefined, admin)).status).toBe(404)
    // Its name is free again.
    expect((await call(s.api, 'POST', '/api/tokens', { name: t.name, role: 'viewer' }, admin)).status).toBe(201)
  })

  test('an expired token is refused (401) and gives its name up', async () => {
    const t = await makeToken('viewer', { ttl_ms: 1000 })
    expect(Date.parse(t.expires_at!) - Date.parse(t.created_at)).toBe(1000)
    expect((await call(s.api, 'GET', '/api/state', undefined, bearer(t.token))).status).toBe(200)
    await Bun.sleep(1100)
    expect((await call(s.api, 'GET', '/api/state', undefined, bearer(t.token))).status).toBe(401)
    expect((await call(s.api, 'POST', '/api/tokens', { name: t.name, role: 'viewer' }, admin)).status).toBe(201)
  })

  test('last_used_at: null before the first use, within 5 s of a use', async () => {
    const t = await makeToken('viewer')
    const row = async () => (await call(s.api, 'GET', '/api/tokens', undefined, admin)).body.find((x: { id: string }) => x.id === t.id)
    expect((await row()).last_used_at).toBeNull()
    const used = Date.now()
    await call(s.api, 'GET', '/api/state', undefined, bearer(t.token))
    const seen = await eventually(async () => (await row()).last_used_at, 5000, 100)
    expect(Math.abs(Date.parse(seen) - used)).toBeLessThan(5000)
  })

  test('events token.created/token.revoked and audit entries; the secret appears nowhere', async () => {
    const t = await makeToken('agent')
    await call(s.api, 'DELETE', `/api/tokens/${t.id}`, undefined, admin)
    const events = await call(s.api, 'GET', '/api/events/history?topic=token.*&limit=1000', undefined, admin)
    const mine = events.body.filter((e: { data: { id: string } }) => e.data.id === t.id)
    expect(mine.map((e: { topic: string }) => e.topic).sort()).toEqual(['token.created', 'token.revoked'])
    expect(mine.find((e: { topic: string }) => e.topic === 'token.created').data).toEqual({ id: t.id, name: t.name, role: 'agent' })
    const audit = await call(s.api, 'GET', '/api/audit?limit=1000', undefined, admin)
    const actions = audit.body.filter((a: { detail: string }) => a.detail.includes(t.id)).map((a: { action: string; actor: string }) => `${a.actor} ${a.action}`)
    expect(actions.sort()).toEqual(['admin token.create', 'admin token.revoke'])
    for (const text of [events.text, audit.text, s.output()]) expect(text).not.toContain(t.token)
  })

  test('agent and viewer tokens may not manage tokens; whoami tells each its role', async () => {
    const agent = await makeToken('agent')
    const viewer = await makeToken('viewer')
    for (const t of [agent, viewer]) {
      expect((await call(s.api, 'GET', '/api/tokens', undefined, bearer(t.token))).status).toBe(403)
      expect((await call(s.api, 'POST', '/api/tokens', { name: 'x', role: 'agent' }, bearer(t.token))).status).toBe(403)
      expect((await call(s.api, 'DELETE', `/api/tokens/${t.id}`, undefined, bearer(t.token))).status).toBe(403)
      const me = await call(s.api, 'GET', '/api/whoami', undefined, bearer(t.token))
      expect(me.body).toEqual({ role: t.role, auth: true, token: { id: t.id, name: t.name }, instance: null })
    }
    expect((await call(s.api, 'GET', '/api/whoami', undefined, admin)).body).toEqual({ role: 'admin', auth: true, token: null, instance: null })
  })

  test('a trailing slash or another spelling skips no role check: no token minted or revoked, no webhook, no backup', async () => {
    const agent = await makeToken('agent')
    const viewer = await makeToken('viewer')
    const victim = await makeToken('agent')
    const hook = (await call(s.api, 'POST', '/api/webhooks', { id: 'slash-hook', url: 'http://127.0.0.1:9/h', patterns: ['nothing.*'] }, admin)).body
    const tokensBefore = (await call(s.api, 'GET', '/api/tokens', undefined, admin)).body.length
    const attempts: [string, string, unknown, { token: string }][] = [
      ['POST', '/api/tokens/', { name: 'minted', role: 'agent' }, agent],
      ['POST', '/api//tokens', { name: 'minted', role: 'agent' }, agent],
      ['POST', '/%61pi/tokens', { name: 'minted', role: 'agent' }, agent],
      ['DELETE', `/api/tokens/${victim.id}/`, undefined, agent],
      ['POST', '/api/webhooks/', { id: 'evil', url: 'http://127.0.0.1:9/evil', patterns: ['*'] }, agent],
      ['PATCH', `/api/webhooks/${hook.id}/`, { url: 'http://127.0.0.1:9/evil' }, agent],
      ['GET', '/api/backup/', undefined, viewer],
      ['GET', '/api/tokens/', undefined, viewer],
      ['HEAD', '/api/backup', undefined, viewer],
    ]
    for (const [method, path, body, who] of attempts) {
      const r = await call(s.api, method, path, body, bearer(who.token))
      expect([method, path, r.status]).toEqual([method, path, method === 'HEAD' ? 403 : 404])
      expect(r.text).not.toContain('SQLite')
    }
    // The admin is told the one spelling each route has.
    const slashed = await call(s.api, 'GET', '/api/tokens/', undefined, admin)
    expect(slashed.body).toEqual({ error: expect.stringContaining('call /api/tokens'), code: 404 })
    expect((await call(s.api, 'GET', '/api/tokens', undefined, admin)).body.length).toBe(tokensBefore)
    expect((await call(s.api, 'GET', '/api/state', undefined, bearer(victim.token))).status).toBe(200)
    expect((await call(s.api, 'GET', `/api/webhooks/${hook.id}`, undefined, admin)).body.url).toBe('http://127.0.0.1:9/h')
    expect((await call(s.api, 'GET', '/api/webhooks/evil', undefined, admin)).status).toBe(404)
    expect((await call(s.api, 'DELETE', `/api/webhooks/${hook.id}`, undefined, admin)).status).toBe(200)
  })
})

test('every route the access policy names is served', async () => {
  const spec = (await call(s.api, 'GET', '/openapi.json', undefined, admin)).body
  const served = new Set(Object.entries<Record<string, unknown>>(spec.paths).flatMap(([path, ops]) => Object.keys(ops).map((m) => `${m.toUpperCase()} ${path.replace(/\{([^}]+)\}/g, ':$1')}`)))
  expect(NAMED_ROUTES.filter((r) => !served.has(r))).toEqual([])
})

describe('viewer', () => {
  let v: string
  beforeAll(async () => (v = (await makeToken('viewer')).token))

  test('reads everything but tokens and backup', async () => {
    await call(s.api, 'PUT', '/api/state/viewer-key', { a: 1 }, admin)
    for (const path of ['/api/state', '/api/state/viewer-key', '/api/instances', '/api/locks', '/api/queues', '/api/audit', '/metrics', '/openapi.json', '/api/events/history'])
      expect([path, (await call(s.api, 'GET', path, undefined, bearer(v))).status]).toEqual([path, 200])
    for (const path of ['/api/tokens', '/api/backup']) {
      const r = await call(s.api, 'GET', path, undefined, bearer(v))
      expect(r.status).toBe(403)
      expect(r.body).toEqual({ error: 'read-only token', code: 403 })
    }
  })

  test('a write is 403 read-only token before its body is looked at, and changes nothing', async () => {
    const put = await call(s.api, 'PUT', '/api/state/viewer-new', { a: 1 }, bearer(v))
    expect(put.status).toBe(403)
    expect(put.body).toEqual({ error: 'read-only token', code: 403 })
    // A body that would be 400 for a writer is still 403.
    expect((await call(s.api, 'POST', '/api/instances/register', {}, bearer(v))).status).toBe(403)
    expect((await call(s.api, 'PUT', '/api/locks/x', '{not json', bearer(v))).status).toBe(403)
    expect((await call(s.api, 'GET', '/api/state/viewer-new', undefined, admin)).status).toBe(404)
  })

  test('may compute: reservation check, validation', async () => {
    const check = await call(s.api, 'POST', '/api/reservations/check', { project: 'p', paths: ['a.ts'] }, bearer(v))
    expect(check.status).toBe(200)
    const validate = await call(s.api, 'POST', '/api/validate/p', { content: 'x', file_path: 'a.ts' }, bearer(v))
    expect(validate.status).toBe(200)
  })

  test('may subscribe to events over the WebSocket', async () => {
    const url = `${s.api.replace('http', 'ws')}/api/events/subscribe?token=${encodeURIComponent(v)}`
    const ws = new WebSocket(url)
    const opened = await new Promise<boolean>((resolve) => {
      ws.onopen = () => resolve(true)
      ws.onerror = () => resolve(false)
      ws.onclose = () => resolve(false)
    })
    expect(opened).toBe(true)
    ws.close()
  })

  test('on /mcp: tools that change nothing, not register_instance', async () => {
    const rpc = (id: number, name: string, args: Record<string, unknown>) =>
      call(s.api, 'POST', '/mcp', { jsonrpc: '2.0', id, method: 'tools/call', params: { name, arguments: args } }, { ...bearer(v), accept: 'application/json, text/event-stream' })
    const listed = await rpc(1, 'discover_instances', {})
    expect(listed.status).toBe(200)
    expect(listed.body.result.isError).toBeFalsy()
    const reg = await rpc(2, 'register_instance', { name: 'sneaky' })
    expect(reg.body.result.isError).toBe(true)
    expect(JSON.parse(reg.body.result.content[0].text)).toEqual({ error: 'read-only token', code: 403 })
    expect((await call(s.api, 'GET', '/api/instances?name=sneaky', undefined, admin)).body).toEqual([])
  })
})

describe('agent', () => {
  let a: { token: string; name: string; id: string }
  let b: { token: string; name: string; id: string }
  let ada: Agent
  let bob: Agent
  beforeAll(async () => {
    a = await makeToken('agent')
    b = await makeToken('agent')
    ada = await register(s, 'ada', bearer(a.token))
    bob = await register(s, 'bob', bearer(b.token))
  })

  test('may not call the admin routes (403, nothing changes)', async () => {
    const calls: [string, string, unknown?][] = [
      ['POST', '/api/restore', 'x'],
      ['GET', '/api/backup'],
      ['POST', '/api/webhooks', { url: 'http://127.0.0.1:1/h', patterns: ['*'] }],
      ['DELETE', '/api/webhooks/1'],
      ['POST', '/api/webhooks/1/test'],
      ['POST', '/api/rules/p/r/accept'],
      ['POST', '/api/rules/p/r/reject'],
      ['PUT', '/api/rules/p/r', { pattern: 'x', message: 'm' }],
      ['DELETE', '/api/rules/p/r'],
      ['PUT', '/api/validate/p/rules', []],
      ['POST', '/api/rules/import', [{ project: 'p', rule_id: 'r', pattern: 'x', message: 'm' }]],
      ['POST', '/api/templates', { name: 't', content: {} }],
      ['PUT', '/api/templates/1', { name: 't', content: {} }],
      ['DELETE', '/api/templates/1'],
      ['DELETE', '/api/contracts/p/c'],
      ['DELETE', '/api/specs/p/s'],
      ['POST', '/api/compliance/run'],
      ['POST', '/api/approvals/x/decision', { behavior: 'allow' }],
      ['POST', '/api/approvals/decision', { ids: ['x'], behavior: 'allow' }],
      ['POST', '/api/approval-rules', { decision: 'allow' }],
      ['DELETE', '/api/approval-rules/x'],
    ]
    for (const [method, path, body] of calls) {
      const r = await call(s.api, method, path, body, bearer(a.token))
      expect([method, path, r.status, r.body?.code]).toEqual([method, path, 403, 403])
    }
    expect((await call(s.api, 'GET', '/api/webhooks', undefined, admin)).body).toEqual([])
    expect((await call(s.api, 'GET', '/api/templates', undefined, admin)).body).toEqual([])
    expect((await call(s.api, 'GET', '/api/approval-rules', undefined, admin)).body).toEqual([])
  })

  test('force is the admin token’s alone', async () => {
    expect((await call(s.api, 'PUT', '/api/locks/shared', {}, { ...bearer(a.token), ...ada.h })).status).toBe(200)
    for (const t of [a, b]) expect((await call(s.api, 'DELETE', '/api/locks/shared?force=1', undefined, bearer(t.token))).status).toBe(403)
    const res = await call(s.api, 'POST', '/api/reservations', { project: 'p', paths: ['src/**'] }, { ...bearer(a.token), ...ada.h })
    expect(res.status).toBe(201)
    expect((await call(s.api, 'DELETE', `/api/reservations/${res.body.id}?force=1`, undefined, bearer(b.token))).status).toBe(403)
    expect((await call(s.api, 'GET', '/api/locks/shared', undefined, admin)).body.holders?.length ?? 1).toBeGreaterThan(0)
    expect((await call(s.api, 'DELETE', '/api/locks/shared?force=1', undefined, admin)).status).toBe(200)
    expect((await call(s.api, 'DELETE', `/api/reservations/${res.body.id}?force=1`, undefined, admin)).status).toBe(200)
  })

  test("may not act as another token's instance; the admin token may act as any", async () => {
    const r = await call(s.api, 'PUT', '/api/locks/as-bob', {}, { ...bearer(a.token), ...bob.h })
    expect(r.status).toBe(403)
    expect(r.body.error).toContain('registered with another token')
    expect((await call(s.api, 'GET', '/api/locks/as-bob', undefined, admin)).status).toBe(404)
    expect((await call(s.api, 'PUT', '/api/locks/as-bob', {}, { ...admin, ...bob.h })).status).toBe(200)
    // An instance the admin token registered is the admin token's alone.
    const adm = await register(s, 'adm', admin)
    expect((await call(s.api, 'PUT', '/api/locks/as-adm', {}, { ...bearer(a.token), ...adm.h })).status).toBe(403)
  })

  test("changes only its own instances: intent, capabilities, heartbeat, activation, deregistration", async () => {
    const changes: [string, string, unknown?][] = [
      ['PUT', 'intent', { intent: 'hijack' }],
      ['POST', 'capabilities', { capabilities: ['x'] }],
      ['POST', 'heartbeat'],
      ['POST', 'activate'],
      ['DELETE', ''],
    ]
    for (const [method, what, body] of changes) {
      const path = `/api/instances/${bob.id}${what ? `/${what}` : ''}`
      expect([path, (await call(s.api, method, path, body, bearer(a.token))).status]).toEqual([path, 403])
    }
    const still = (await call(s.api, 'GET', `/api/instances/${bob.id}`, undefined, admin)).body
    expect(still.intent).toBe('')
    expect(still.capabilities).toEqual([])
    // Its own: allowed.
    expect((await call(s.api, 'PUT', `/api/instances/${ada.id}/intent`, { intent: 'mine' }, bearer(a.token))).status).toBe(200)
    expect((await call(s.api, 'POST', `/api/instances/${ada.id}/heartbeat`, undefined, bearer(a.token))).status).toBe(200)
  })

  test("MCP set_intent of another token's instance is refused", async () => {
    const r = await call(
      s.api,
      'POST',
      '/mcp',
      { jsonrpc: '2.0', id: 1, method: 'tools/call', params: { name: 'set_intent', arguments: { instance_id: bob.id, intent: 'hijack' } } },
      { ...bearer(a.token), accept: 'application/json, text/event-stream' },
    )
    expect(r.body.result.isError).toBe(true)
    expect(JSON.parse(r.body.result.content[0].text).code).toBe(403)
    expect((await call(s.api, 'GET', `/api/instances/${bob.id}`, undefined, admin)).body.intent).toBe('')
  })

  test('hook events of a session another token started are refused', async () => {
    const event = { session_id: 'sess-access-1', hook_event_name: 'SessionStart', cwd: '/repo' }
    expect((await call(s.api, 'POST', '/api/hooks/claude-code', event, { ...bearer(b.token), 'x-muster-agent': 'bob-hook' })).status).toBe(200)
    const other = await call(s.api, 'POST', '/api/hooks/claude-code', { ...event, hook_event_name: 'PostToolUse', tool_name: 'Read' }, bearer(a.token))
    expect(other.status).toBe(403)
    expect(other.body.error).toContain('another token')
    expect((await call(s.api, 'POST', '/api/hooks/claude-code', { ...event, hook_event_name: 'PostToolUse', tool_name: 'Read' }, bearer(b.token))).status).toBe(200)
  })

  test("may not cancel or retry a task another token's instance has claimed", async () => {
    const task = (await call(s.api, 'POST', '/api/queues/access-q/tasks', { title: 'fix', payload: { n: 1 } }, bearer(a.token))).body
    const claim = await call(s.api, 'POST', '/api/queues/access-q/claim', {}, { ...bearer(b.token), ...bob.h })
    expect(claim.body.id).toBe(task.id)
    const cancel = await call(s.api, 'DELETE', `/api/tasks/${task.id}`, undefined, bearer(a.token))
    expect(cancel.status).toBe(403)
    expect(cancel.body.error).toContain('another token')
    expect((await call(s.api, 'GET', `/api/tasks/${task.id}`, undefined, admin)).body.status).toBe('claimed')
    expect((await call(s.api, 'DELETE', `/api/tasks/${task.id}`, undefined, bearer(b.token))).status).toBe(200)
    expect((await call(s.api, 'POST', `/api/tasks/${task.id}/retry`, undefined, bearer(a.token))).status).toBe(403)
    expect((await call(s.api, 'POST', `/api/tasks/${task.id}/retry`, undefined, admin)).status).toBe(200)
  })

  test('audit names the credential: the instance, else token:<name>', async () => {
    await call(s.api, 'PUT', '/api/state/by-token', { a: 1 }, bearer(a.token))
    await call(s.api, 'PUT', '/api/state/by-instance', { a: 1 }, { ...bearer(a.token), ...ada.h })
    const audit = (await call(s.api, 'GET', '/api/audit?action=state.put&limit=1000', undefined, admin)).body
    expect(audit.find((e: { resource: string }) => e.resource === 'state/by-token').actor).toBe(`token:${a.name}`)
    expect(audit.find((e: { resource: string }) => e.resource === 'state/by-instance').actor).toBe(ada.id)
  })

  test('register again with the instance token, or the same agent token alone, resumes it; new: true makes another, with a warning', async () => {
    const again = await call(s.api, 'POST', '/api/instances/register', { name: 'ada', intent: 'back' }, { ...bearer(a.token), ...ada.h })
    expect(again.status).toBe(200)
    expect(again.body).toMatchObject({ id: ada.id, token: ada.token, resumed: true, intent: 'back', status: 'active' })
    const byName = await call(s.api, 'POST', '/api/instances/register', { name: 'ada' }, bearer(a.token))
    expect(byName.body).toMatchObject({ id: ada.id, token: ada.token, resumed: true })
    const fresh = await call(s.api, 'POST', '/api/instances/register', { name: 'ada', new: true }, bearer(a.token))
    expect(fresh.body.id).not.toBe(ada.id)
    expect(fresh.body.resumed).toBeUndefined()
    expect(fresh.body.warning).toContain('"ada"')
    const topics = (await call(s.api, 'GET', '/api/events/history?topic=instance.resumed&limit=100', undefined, admin)).body
    expect(topics.some((e: { data: { id: string } }) => e.data.id === ada.id)).toBe(true)
  })
})

describe('without --auth-token', () => {
  test('everyone may do everything, audited as anonymous', async () => {
    const open = await startServer()
    try {
      expect((await call(open.api, 'GET', '/api/whoami')).body).toEqual({ role: 'admin', auth: false, token: null, instance: null })
      expect((await call(open.api, 'POST', '/api/tokens', { name: 'x', role: 'agent' })).status).toBe(201)
      expect((await call(open.api, 'PUT', '/api/state/k', { a: 1 }, { authorization: 'Bearer whatever' })).status).toBe(200)
      const audit = (await call(open.api, 'GET', '/api/audit?action=state.put')).body
      expect(audit[0].actor).toBe('anonymous')
    } finally {
      await open.cleanup()
    }
  })
})

describe.skipIf(!PG_BASE)('two replicas', () => {
  test('a token revoked on one replica is refused by the other within a second', async () => {
    const url = await databaseFor(tempDir('muster-access-replicas-'))
    const args = ['--database', url, '--auth-token', ADMIN_TOKEN]
    const [one, two] = await Promise.all([startServer({ args }), startServer({ args })])
    try {
      const made = (await call(one.api, 'POST', '/api/tokens', { name: 'roamer', role: 'agent' }, admin)).body
      // Known (and cached) on the second replica before the revocation.
      expect((await call(two.api, 'GET', '/api/state', undefined, bearer(made.token))).status).toBe(200)
      expect((await call(one.api, 'DELETE', `/api/tokens/${made.id}`, undefined, admin)).status).toBe(200)
      const revokedAt = Date.now()
      await eventually(async () => (await call(two.api, 'GET', '/api/state', undefined, bearer(made.token))).status === 401, 1000, 10)
      expect(Date.now() - revokedAt).toBeLessThan(1000)
    } finally {
      await Promise.all([one.cleanup(), two.cleanup()])
    }
  })
})

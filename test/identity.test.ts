// One agent, one identity (agents.md): an agent token has one live instance per name,
// whether it registers over REST, MCP or a hook session; `new: true` makes a second; the
// admin token and auth off make a new one as before. A session's token reaches its
// `muster hook` in headers, never a model's text; messages sent as an instance carry its
// name; SessionEnd by /clear or resume keeps the instance for the next SessionStart.
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { call, eventually, startServer, tempDir, type TestServer } from './helpers'
import { PG_BASE, databaseFor } from './pg'
import claude from './fixtures/hooks/claude-code.json'

const ADMIN_TOKEN = 'identity-admin-token'
const admin = { authorization: `Bearer ${ADMIN_TOKEN}` }
let s: TestServer
let open: TestServer
beforeAll(async () => {
  ;[s, open] = await Promise.all([startServer({ args: ['--auth-token', ADMIN_TOKEN] }), startServer()])
}, 30_000)
afterAll(async () => {
  await Promise.all([s.cleanup(), open.cleanup()])
})

let n = 0
/** A fresh agent token's Authorization header. */
async function agentToken(): Promise<Record<string, string>> {
  const r = await call(s.api, 'POST', '/api/tokens', { name: `agent-${++n}-${crypto.randomUUID().slice(0, 8)}`, role: 'agent' }, admin)
  expect(r.status).toBe(201)
  return { authorization: `Bearer ${r.body.token}` }
}
const uniq = (base: string) => `${base}${++n}`
const registerAs = (h: Record<string, string>, body: Record<string, unknown>, server = s) => call(server.api, 'POST', '/api/instances/register', body, h)
const named = async (name: string) => (await call(s.api, 'GET', `/api/instances?name=${name}`, undefined, admin)).body as any[]
const reservationsOf = async (id: string) => (await call(s.api, 'GET', `/api/reservations?instance_id=${id}`, undefined, admin)).body as any[]
const mcp = (h: Record<string, string>, name: string, args: Record<string, unknown>) =>
  call(s.api, 'POST', '/mcp', { jsonrpc: '2.0', id: ++n, method: 'tools/call', params: { name, arguments: args } }, { ...h, accept: 'application/json, text/event-stream' })

/** A Claude Code session on `server` at `root`, its events sent with `h` (and X-Muster-Agent when `name`). */
function session(h: Record<string, string>, root: string, name?: string, server = s) {
  const id = crypto.randomUUID()
  const headers = { ...h, 'x-muster-root': root, ...(name ? { 'x-muster-agent': name } : {}) }
  const send = async (event: keyof typeof claude, extra: Record<string, unknown> = {}) => {
    const body = { ...JSON.parse(JSON.stringify(claude[event]).replaceAll('/work/repo', root)), session_id: id, ...extra }
    const r = await call(server.api, 'POST', '/api/hooks/claude-code', body, headers)
    expect(r.status).toBe(200)
    return r
  }
  /** SessionStart, then a reservation of `paths` in project "repo" made with the token its headers carry. */
  const startHolding = async (paths: string[]) => {
    const start = await send('SessionStart')
    const id = start.headers.get('x-muster-instance-id')!
    const me = { ...h, 'x-instance-token': start.headers.get('x-muster-instance-token')! }
    const held = await call(server.api, 'POST', '/api/reservations', { project: 'repo', paths }, me)
    expect(held.status).toBe(201)
    return { id, me, held: held.body }
  }
  return { id, send, startHolding }
}

describe('one name, one live instance per agent token', () => {
  test('REST: the same name and agent token resumes (same id and token, grants kept); new: true makes another', async () => {
    const h = await agentToken()
    const name = uniq('ada')
    const first = await registerAs(h, { name, workspace: 'shop' })
    expect(first.status).toBe(200)
    expect(first.body.resumed).toBeUndefined()
    const me = { ...h, 'x-instance-token': first.body.token }
    const held = await call(s.api, 'POST', '/api/reservations', { project: 'shop', paths: ['src/billing/**'] }, me)
    expect(held.status).toBe(201)
    expect((await call(s.api, 'PUT', `/api/locks/${name}-lock`, { ttl_ms: 60_000 }, me)).status).toBe(200)

    const again = await registerAs(h, { name, intent: 'billing' })
    expect(again.body).toMatchObject({ id: first.body.id, token: first.body.token, resumed: true, intent: 'billing', workspace: 'shop' })
    expect(again.body.warning).toBeUndefined()
    expect((await named(name)).map((i) => i.id)).toEqual([first.body.id])
    expect((await reservationsOf(first.body.id)).map((r) => r.id)).toEqual([held.body.id])
    const lock = (await call(s.api, 'GET', `/api/locks/${name}-lock`, undefined, admin)).body
    expect(lock.holders.map((x: any) => x.instance_id)).toEqual([first.body.id])
    const resumedEvent = (await call(s.api, 'GET', '/api/events/history?topic=instance.resumed&after_id=0&last=500', undefined, admin)).body as any[]
    expect(resumedEvent.some((e) => e.data.id === first.body.id)).toBe(true)

    const fresh = await registerAs(h, { name, new: true })
    expect(fresh.body.id).not.toBe(first.body.id)
    expect(fresh.body.token).not.toBe(first.body.token)
    expect(fresh.body.resumed).toBeUndefined()
    expect(fresh.body.warning).toContain(`named "${name}"`)
    // Two live now: the newest is the one a later registration takes up.
    expect((await registerAs(h, { name })).body).toMatchObject({ id: fresh.body.id, token: fresh.body.token, resumed: true })
  })

  test('another agent token, the admin token and auth off make a new instance; the instance token itself still resumes', async () => {
    const [a, b] = [await agentToken(), await agentToken()]
    const name = uniq('bo')
    const first = (await registerAs(a, { name })).body
    const other = (await registerAs(b, { name })).body
    expect(other.id).not.toBe(first.id)
    expect(other.resumed).toBeUndefined()
    const byAdmin = (await registerAs(admin, { name })).body
    expect([first.id, other.id]).not.toContain(byAdmin.id)
    expect(byAdmin.resumed).toBeUndefined()
    expect((await registerAs(admin, { name })).body.id).not.toBe(byAdmin.id)
    const off1 = (await registerAs({}, { name }, open)).body
    const off2 = (await registerAs({}, { name }, open)).body
    expect(off2.id).not.toBe(off1.id)
    // With the instance's own X-Instance-Token, the admin token resumes as before.
    expect((await registerAs({ ...admin, 'x-instance-token': byAdmin.token }, { name })).body).toMatchObject({ id: byAdmin.id, resumed: true })
    // A bad body changes nothing, and is not taken for a resume.
    expect((await registerAs(a, { name, new: 'yes' })).status).toBe(400)
    expect((await named(name)).length).toBe(4)
  })

  test('a deregistered instance is not resumed: the name makes a new one', async () => {
    const h = await agentToken()
    const name = uniq('cy')
    const first = (await registerAs(h, { name })).body
    expect((await call(s.api, 'DELETE', `/api/instances/${first.id}`, undefined, h)).status).toBe(200)
    const again = (await registerAs(h, { name })).body
    expect(again.id).not.toBe(first.id)
    expect(again.resumed).toBeUndefined()
  })
})

describe('hook sessions, MCP and messages act as the one instance', () => {
  test("a hook session's instance is resumed by REST and MCP register of its name; its token only in the hook's headers", async () => {
    const h = await agentToken()
    const name = uniq('dee')
    const c = session(h, `/tmp/identity-${n}/repo`, name)
    const start = await c.send('SessionStart')
    const token = start.headers.get('x-muster-instance-token')!
    const id = start.headers.get('x-muster-instance-id')!
    expect(token).toMatch(/^[0-9a-f]{64}$/)
    expect(start.text).not.toContain(token)
    expect(start.body.hookSpecificOutput.additionalContext).toContain('CLI in your shell already acts as this session')

    const rest = await registerAs(h, { name })
    expect(rest.body).toMatchObject({ id, token, resumed: true })

    const viaMcp = await mcp(h, 'register_instance', { name })
    expect(viaMcp.status).toBe(200)
    expect(viaMcp.text).not.toContain(token)
    const result = viaMcp.body.result.structuredContent
    expect(result).toMatchObject({ id, resumed: true })
    expect(result.token).toBeUndefined()
    expect((await named(name)).map((i) => i.id)).toEqual([id])
    // new: true over MCP makes a second, and hands its token to the caller, as the spec says.
    const fresh = (await mcp(h, 'register_instance', { name, new: true })).body.result.structuredContent
    expect(fresh.id).not.toBe(id)
    expect(fresh.token).toMatch(/^[0-9a-f]{64}$/)
  })

  test('MCP instructions and get_endpoints say a hooked session is registered already', async () => {
    const h = await agentToken()
    const init = await call(
      s.api,
      'POST',
      '/mcp',
      { jsonrpc: '2.0', id: 1, method: 'initialize', params: { protocolVersion: '2025-03-26', capabilities: {}, clientInfo: { name: 't', version: '1' } } },
      { ...h, accept: 'application/json, text/event-stream' },
    )
    expect(init.body.result.instructions).toContain('you are registered already')
    const endpoints = (await mcp(h, 'get_endpoints', {})).body.result.structuredContent
    expect(endpoints.hooked_session).toContain('registered already')
  })

  test('a message sent with an instance token is from its name; without one, from human', async () => {
    const h = await agentToken()
    const name = uniq('eve')
    const c = session(h, `/tmp/identity-${n}/repo`, name)
    const token = (await c.send('SessionStart')).headers.get('x-muster-instance-token')!
    const sent = await call(s.api, 'POST', '/api/messages', { to: ['someone'], subject: 'hello' }, { ...h, 'x-instance-token': token })
    expect(sent.status).toBe(201)
    expect(sent.body.from).toBe(name)
    const person = await call(s.api, 'POST', '/api/messages', { to: ['someone'], subject: 'hi' }, h)
    expect(person.body.from).toBe('human')
  })
})

describe('SessionEnd by /clear or resume keeps the instance for the next SessionStart', () => {
  for (const reason of ['clear', 'resume']) {
    test(`reason ${reason}: the next session of that name and root takes it over, reservations and claims kept`, async () => {
      const h = await agentToken()
      const name = uniq('fay')
      const root = `/tmp/identity-${n}/repo`
      const first = session(h, root, name)
      const { id, me, held } = await first.startHolding(['src/**'])
      const queue = uniq('q')
      expect((await call(s.api, 'POST', `/api/queues/${queue}/tasks`, { title: 'port the lexer' }, h)).status).toBe(201)
      const task = (await call(s.api, 'POST', `/api/queues/${queue}/claim`, {}, me)).body

      const end = await first.send('SessionEnd', { reason })
      expect(end.headers.get('x-muster-held')).toBe('true')
      expect((await call(s.api, 'GET', `/api/instances/${id}`, undefined, admin)).status).toBe(200)

      const next = session(h, root, name)
      const again = await next.send('SessionStart', { source: reason === 'clear' ? 'clear' : 'resume' })
      expect(again.headers.get('x-muster-instance-id')).toBe(id)
      expect(again.headers.get('x-muster-instance-token')).toBe(me['x-instance-token'])
      const brief = again.body.hookSpecificOutput.additionalContext as string
      expect(brief).toContain(`"${name}" (instance ${id})`)
      expect(brief).toContain(`- task ${task.id} in queue ${queue}: port the lexer`)
      expect((await reservationsOf(id)).map((r) => r.id)).toEqual([held.id])
      const sessions = (await call(s.api, 'GET', '/api/sessions', undefined, admin)).body as any[]
      expect(sessions.find((x) => x.session_id === next.id)).toMatchObject({ instance_id: id, ended_at: null })
      expect(sessions.find((x) => x.session_id === first.id).ended_at).not.toBeNull()

      // The session that took over ends for good: the instance goes, and what it held with it.
      const last = await next.send('SessionEnd', { reason: 'logout' })
      expect(last.headers.get('x-muster-held')).toBe('false')
      expect((await call(s.api, 'GET', `/api/instances/${id}`, undefined, admin)).status).toBe(404)
      expect(await reservationsOf(id)).toEqual([])
    })
  }

  test('other reasons deregister; a held instance is not taken by another name, root or agent token', async () => {
    const h = await agentToken()
    const name = uniq('gus')
    const root = `/tmp/identity-${n}/repo`
    const gone = session(h, root, name)
    const id0 = (await gone.send('SessionStart')).headers.get('x-muster-instance-id')!
    await gone.send('SessionEnd', { reason: 'prompt_input_exit' })
    expect((await call(s.api, 'GET', `/api/instances/${id0}`, undefined, admin)).status).toBe(404)

    const first = session(h, root, name)
    const id = (await first.send('SessionStart')).headers.get('x-muster-instance-id')!
    await first.send('SessionEnd', { reason: 'clear' })
    for (const other of [session(h, root, uniq('hal')), session(h, `${root}-elsewhere`, name), session(await agentToken(), root, name)])
      expect((await other.send('SessionStart', { source: 'clear' })).headers.get('x-muster-instance-id')).not.toBe(id)
    // ... and the right one still takes it over.
    expect((await session(h, root, name).send('SessionStart', { source: 'clear' })).headers.get('x-muster-instance-id')).toBe(id)
  })
})

/** A Claude Code session on `server` (auth off) at `root` named `name`. */
const sessionOn = (server: TestServer, root: string, name: string) => session({}, root, name, server)

describe('a hold nobody takes over', () => {
  let quick: TestServer
  beforeAll(async () => (quick = await startServer({ args: ['--session-hold', '1s'] })), 30_000)
  afterAll(() => quick.cleanup())

  test('deregisters once the hold runs out, releasing what it held; a later SessionStart registers anew', async () => {
    const root = `/tmp/identity-hold-${++n}/repo`
    const c = sessionOn(quick, root, 'ivy')
    const { id } = await c.startHolding(['a/**'])
    await c.send('SessionEnd', { reason: 'clear' })
    expect((await call(quick.api, 'GET', `/api/instances/${id}`)).status).toBe(200)
    await eventually(async () => (await call(quick.api, 'GET', `/api/instances/${id}`)).status === 404, 10_000)
    expect((await call(quick.api, 'GET', `/api/reservations?instance_id=${id}`)).body).toEqual([])
    const later = await sessionOn(quick, root, 'ivy').send('SessionStart', { source: 'clear' })
    expect(later.headers.get('x-muster-instance-id')).not.toBe(id)
  })
})

describe.skipIf(!PG_BASE)('holds on two replicas of one PostgreSQL database', () => {
  let a: TestServer
  let b: TestServer
  beforeAll(async () => {
    const url = await databaseFor(tempDir('muster-identity-replicas-'))
    a = await startServer({ args: ['--database', url, '--session-hold', '2s'] })
    b = await startServer({ args: ['--database', url, '--session-hold', '2s'] })
  }, 30_000)
  afterAll(async () => {
    await a?.cleanup()
    await b?.cleanup()
  })

  test('SessionEnd by /clear on one replica, SessionStart on the other takes over; a leftover goes whichever ended it', async () => {
    const root = `/tmp/identity-replicas-${++n}/repo`
    const first = sessionOn(a, root, 'jo')
    const { id, held } = await first.startHolding(['b/**'])
    await first.send('SessionEnd', { reason: 'clear' })
    const next = sessionOn(b, root, 'jo')
    const again = await next.send('SessionStart', { source: 'clear' })
    expect(again.headers.get('x-muster-instance-id')).toBe(id)
    expect((await call(b.api, 'GET', `/api/reservations?instance_id=${id}`)).body.map((r: any) => r.id)).toEqual([held.id])

    // Ended by /clear on B with nobody to take over: the leader's job deregisters it.
    await next.send('SessionEnd', { reason: 'clear' })
    await Bun.sleep(2_500)
    await eventually(async () => (await call(a.api, 'GET', `/api/instances/${id}`)).status === 404, 10_000)
    expect((await call(b.api, 'GET', `/api/reservations?instance_id=${id}`)).body).toEqual([])
  })
})

// Agent hooks over real HTTP with the documented payloads (test/fixtures/hooks): a
// session is an instance, edits are checked against reservations (and reserved in
// edit-reserve mode), new messages reach the model once per session, SessionEnd
// deregisters. Never an `allow`.
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { call, eventually, register, startServer, type Agent, type TestServer } from './helpers'
import { rawQuery } from './pg'
import claude from './fixtures/hooks/claude-code.json'
import codex from './fixtures/hooks/codex.json'

let s: TestServer
beforeAll(async () => (s = await startServer()))
afterAll(() => s.cleanup())

let n = 0
/** A fresh session: its own id and root (/tmp/hooks-N/<project>), so tests keep apart. */
function session(agent: 'claude-code' | 'codex' = 'claude-code', headers: Record<string, string> = {}) {
  const id = `${agent === 'codex' ? '019a' : '0089'}${++n}-${crypto.randomUUID()}`
  const project = `proj${n}${Math.random().toString(36).slice(2, 6)}`
  const root = `/tmp/hooks-${n}/${project}`
  const fixtures: Record<string, any> = agent === 'codex' ? codex : claude
  const event = (name: string, extra: Record<string, unknown> = {}) => {
    const e = JSON.parse(JSON.stringify(fixtures[name]).replaceAll('/work/repo', root))
    return { ...e, session_id: id, ...extra }
  }
  let last: Headers | null = null
  let started: Headers | null = null
  const send = async (name: string, extra: Record<string, unknown> = {}, h: Record<string, string> = {}) => {
    const r = await call(s.api, 'POST', `/api/hooks/${agent}`, event(name, extra), { ...headers, ...h })
    expect(r.status).toBe(200)
    expect(r.text).not.toContain('"allow"')
    last = r.headers
    if (r.headers.has('x-muster-instance-token')) started = r.headers
    return r.body
  }
  /** The instance token the last SessionStart answered in its headers (for `muster hook`, never in the body). */
  const token = () => {
    const t = started?.get('x-muster-instance-token')
    expect(t).toMatch(/^[0-9a-f]{64}$/)
    return t!
  }
  return { id, project, root, event, send, token, headers: () => last! }
}

const events = async (topic: string) => (await call(s.api, 'GET', `/api/events/history?topic=${topic}&after_id=0&last=500`)).body as any[]
const audit = async (action: string, actor: string) => (await call(s.api, 'GET', `/api/audit?action=${action}&actor=${actor}`)).body as any[]
const sessionRow = async (id: string) => ((await call(s.api, 'GET', '/api/sessions')).body as any[]).find((x) => x.session_id === id)
const reservationsOf = async (instanceId: string) => (await call(s.api, 'GET', `/api/reservations?instance_id=${instanceId}`)).body as any[]
const reserve = async (a: Pick<Agent, 'h'>, project: string, paths: string[], extra: Record<string, unknown> = {}) => {
  const r = await call(s.api, 'POST', '/api/reservations', { project, paths, ...extra }, a.h)
  expect(r.status).toBe(201)
  return r.body
}
const contextOf = (answer: any) => answer.hookSpecificOutput.additionalContext as string
const deny = (answer: any) => answer.hookSpecificOutput as { hookEventName: string; permissionDecision: string; permissionDecisionReason: string }

describe('endpoint', () => {
  test('unknown agent 404; body not a JSON object or without session_id / hook_event_name 400, registering nothing', async () => {
    const before = (await call(s.api, 'GET', '/api/sessions')).body.length
    expect((await call(s.api, 'POST', '/api/hooks/no-such-agent', claude.SessionStart)).status).toBe(404)
    for (const body of ['[1]', '"x"', 'not json', '{"hook_event_name":"Stop"}', '{"session_id":"a"}', '{"session_id":"","hook_event_name":"Stop"}', '{"session_id":1,"hook_event_name":"Stop"}']) {
      const r = await call(s.api, 'POST', '/api/hooks/claude-code', body, { 'content-type': 'application/json' })
      expect(r.status).toBe(400)
      expect(r.body).toMatchObject({ error: expect.any(String), code: 400 })
    }
    const bad = await call(s.api, 'POST', '/api/hooks/codex', codex.Stop, { 'x-muster-reserve': 'soon' })
    expect(bad.status).toBe(400)
    expect(bad.body.error).toContain('X-Muster-Reserve')
    expect((await call(s.api, 'GET', '/api/sessions')).body.length).toBe(before)
    // the event as JSON without a JSON content type is still the event
    const plain = await call(s.api, 'POST', '/api/hooks/claude-code', JSON.stringify({ ...claude.Notification, session_id: crypto.randomUUID() }), { 'content-type': 'text/plain' })
    expect([plain.status, plain.body]).toEqual([200, {}])
  })

  test('the fast way in (a JSON body to a plain path, as agents send it) answers as the full route does', async () => {
    // A query string takes the full route (Elysia's pipeline); the same requests without one take Bun's router.
    const answers: unknown[] = []
    for (const query of ['', '?via=full']) {
      const c = session()
      let instance = '<none yet>'
      const post = async (body: unknown, headers: Record<string, string> = {}) => {
        const r = await call(s.api, 'POST', `/api/hooks/claude-code${query}`, typeof body === 'string' ? body : JSON.stringify(body), { 'content-type': 'application/json', ...headers })
        instance = r.headers.get('x-muster-instance-id') ?? instance
        // Each way's own session: its ids and names stand for themselves.
        const text = r.text.replaceAll(instance, '<instance>').replaceAll(c.id, '<id>').replaceAll(`claude-code-${c.id.slice(0, 8)}`, '<name>').replaceAll(c.root, '<root>').replaceAll(c.project, '<project>')
        const named = [...r.headers.keys()].filter((k) => k.startsWith('x-muster-')).sort()
        return [r.status, r.headers.get('content-type'), named, JSON.parse(text)]
      }
      answers.push([
        await post('not json'),
        await post('[1]'),
        await post({ session_id: c.id }),
        await post(c.event('SessionStart')),
        await post(c.event('PreToolUse.Edit'), { 'x-muster-reserve': '1m' }),
        await post(c.event('PostToolUse')),
        await post(c.event('Stop'), { 'x-muster-reserve': 'soon' }),
        await post(c.event('SessionEnd')),
      ])
    }
    expect(answers[0]).toEqual(answers[1])
    const [parse, array, missing, start, edit, after, badHeader, end] = answers[0] as unknown[][]
    expect([parse[0], array[0], missing[0], badHeader[0]]).toEqual([400, 400, 400, 400])
    expect(start[2]).toEqual(['x-muster-instance-id', 'x-muster-instance-name', 'x-muster-instance-token', 'x-muster-session'])
    expect([edit[3], after[3]]).toEqual([{}, {}])
    expect(end[2]).toContain('x-muster-held')
  })

  test('an event this contract does not handle: {} and the session is registered', async () => {
    const c = session()
    expect(await c.send('Notification')).toEqual({})
    const row = await sessionRow(c.id)
    expect(row).toEqual({
      session_id: c.id,
      agent: 'claude-code',
      instance_id: expect.any(String),
      name: `claude-code-${c.id.slice(0, 8)}`,
      root: c.root,
      project: c.project,
      started_at: expect.any(String),
      ended_at: null,
    })
    expect(JSON.stringify((await call(s.api, 'GET', '/api/sessions')).body)).not.toContain('token')
  })
})

describe('sessions', () => {
  test('SessionStart registers from the headers and briefs: name, instance id; a working token in the headers only; hook.session audited', async () => {
    const c = session('claude-code', { 'x-muster-agent': 'ada', 'x-muster-project': 'shared-proj', 'x-muster-capabilities': 'ts, review' })
    const answer = await c.send('SessionStart')
    expect(answer.hookSpecificOutput.hookEventName).toBe('SessionStart')
    const row = await sessionRow(c.id)
    expect(row).toMatchObject({ name: 'ada', project: 'shared-proj', root: c.root })
    const instance = (await call(s.api, 'GET', `/api/instances/${row.instance_id}`)).body
    expect(instance).toMatchObject({ name: 'ada', workspace: c.root, capabilities: ['ts', 'review'], status: 'active' })
    const text = contextOf(answer)
    expect(text).toContain('"ada"')
    expect(text).toContain(row.instance_id)
    const token = c.token()
    expect(text).not.toContain(token)
    expect(text).toContain('CLI in your shell already acts as this session')
    expect(c.headers().get('x-muster-instance-id')).toBe(row.instance_id)
    expect(c.headers().get('x-muster-instance-name')).toBe('ada')
    const r = await call(s.api, 'POST', '/api/reservations', { project: 'shared-proj', paths: ['x/**'] }, { 'x-instance-token': token })
    expect(r.body.instance_id).toBe(row.instance_id)
    expect((await audit('hook.session', row.instance_id))[0]).toMatchObject({ outcome: 'success', resource: `sessions/${c.id}` })
  })

  test('SessionStart of a known session resumes it: same instance, holdings kept, token in the headers again; every event a heartbeat', async () => {
    const c = session('codex')
    const first = contextOf(await c.send('SessionStart'))
    const row = await sessionRow(c.id)
    const registered = (await call(s.api, 'GET', `/api/instances/${row.instance_id}`)).body.last_seen
    // an event answered without a unit counts as a sign of life too (the throttled heartbeat of any token call)
    await Bun.sleep(5)
    expect(await c.send('PreToolUse.Bash')).toEqual({})
    await eventually(async () => (await call(s.api, 'GET', `/api/instances/${row.instance_id}`)).body.last_seen > registered)
    const token = c.token()
    expect(first).not.toContain(token)
    const held = await reserve({ h: { 'x-instance-token': token } }, c.project, ['lib/**'])
    const q = `hookq${n}`
    expect((await call(s.api, 'POST', `/api/queues/${q}/tasks`, { title: 'port the lexer' })).status).toBe(201)
    const task = (await call(s.api, 'POST', `/api/queues/${q}/claim`, {}, { 'x-instance-token': token })).body
    const seen = (await call(s.api, 'GET', `/api/instances/${row.instance_id}`)).body.last_seen
    await Bun.sleep(5)
    const again = contextOf(await c.send('SessionStart', { source: 'resume' }))
    expect(again).not.toContain(token)
    expect(c.token()).toBe(token)
    expect(again).toContain(`Tasks you have claimed (1):\n- task ${task.id} in queue ${q}: port the lexer`)
    expect((await sessionRow(c.id)).instance_id).toBe(row.instance_id)
    expect((await reservationsOf(row.instance_id)).map((r) => r.id)).toEqual([held.id])
    expect((await call(s.api, 'GET', `/api/instances/${row.instance_id}`)).body.last_seen > seen).toBe(true)
    expect((await audit('hook.session', row.instance_id)).length).toBe(2)
  })

  test('SessionEnd deregisters (holder_deregistered releases); the next event registers a new instance under the same name', async () => {
    const c = session('claude-code', { 'x-muster-reserve': '10m' })
    await c.send('SessionStart')
    await c.send('PreToolUse.Write')
    const row = await sessionRow(c.id)
    const [r] = await reservationsOf(row.instance_id)
    expect(await c.send('SessionEnd')).toEqual({})
    expect((await call(s.api, 'GET', `/api/instances/${row.instance_id}`)).status).toBe(404)
    expect((await events('reservation.released')).find((e) => e.data.id === r.id)?.data.reason).toBe('holder_deregistered')
    expect((await sessionRow(c.id)).ended_at).toEqual(expect.any(String))
    await c.send('UserPromptSubmit')
    const next = await sessionRow(c.id)
    expect(next.instance_id).not.toBe(row.instance_id)
    expect(next).toMatchObject({ name: row.name, ended_at: null })
  })

  test('an instance deregistered under a live session (by hand, or gone stale and dropped): the next event registers a new one, never acts as the gone one', async () => {
    const c = session('claude-code', { 'x-muster-reserve': '10m' })
    await c.send('SessionStart')
    // Events answered without a unit, read twice: the session as it was is known to the server.
    expect(await c.send('PostToolUse')).toEqual({})
    expect(await c.send('PostToolUse')).toEqual({})
    const row = await sessionRow(c.id)
    expect((await call(s.api, 'DELETE', `/api/instances/${row.instance_id}`)).status).toBe(200)
    expect(await c.send('PostToolUse')).toEqual({})
    const next = await sessionRow(c.id)
    expect(next.instance_id).not.toBe(row.instance_id)
    expect((await call(s.api, 'GET', `/api/instances/${next.instance_id}`)).body).toMatchObject({ name: row.name, status: 'active' })
    // Its edits are reserved for the new instance.
    await c.send('PreToolUse.Write')
    expect((await reservationsOf(next.instance_id)).length).toBe(1)
    expect((await reservationsOf(row.instance_id)).length).toBe(0)
  })

  test('a stale instance under a live session turns active in the unit of its next edit, before it is granted the file', async () => {
    const c = session('claude-code', { 'x-muster-reserve': '10m' })
    await c.send('SessionStart')
    const row = await sessionRow(c.id)
    // Stale behind the server's back: only the edit's own unit can see it (the throttled beat of
    // a live session writes at most every few seconds, and SessionStart just wrote one).
    await rawQuery(s.dataDir, "UPDATE instances SET status = 'stale' WHERE id = ?", row.instance_id)
    expect((await call(s.api, 'GET', `/api/instances/${row.instance_id}`)).body.status).toBe('stale')
    expect(await c.send('PreToolUse.Write')).toEqual({})
    expect((await call(s.api, 'GET', `/api/instances/${row.instance_id}`)).body.status).toBe('active')
    expect((await reservationsOf(row.instance_id)).length).toBe(1)
    expect((await sessionRow(c.id)).instance_id).toBe(row.instance_id)
  })

  test('a session ended by /clear (its instance held for the next one) is not live: its next event starts it over', async () => {
    const c = session()
    await c.send('SessionStart')
    expect(await c.send('PostToolUse')).toEqual({})
    expect(await c.send('PostToolUse')).toEqual({})
    const row = await sessionRow(c.id)
    expect(await c.send('SessionEnd', { reason: 'clear' })).toEqual({})
    expect((await sessionRow(c.id)).ended_at).toEqual(expect.any(String))
    expect((await call(s.api, 'GET', `/api/instances/${row.instance_id}`)).status).toBe(200)
    await c.send('PostToolUse')
    const next = await sessionRow(c.id)
    expect(next.ended_at).toBeNull()
    expect(next.instance_id).not.toBe(row.instance_id)
  })

  test('the briefing lists others, their reservations in the project and own claims, and stays within 8,000 characters', async () => {
    const c = session()
    const bob = await register(s, { name: 'bob', intent: 'fixing the parser' })
    await reserve(bob, c.project, ['src/parser/**'], { reason: 'parser rewrite', ttl_ms: 600_000 })
    const many = Array.from({ length: 120 }, (_, i) => `generated/very/long/path/number/${i}/of/a/reservation/that/fills/the/briefing/**`)
    await reserve(bob, c.project, many.slice(0, 100))
    await reserve(bob, c.project, many.slice(100))
    const text = contextOf(await c.send('SessionStart'))
    expect(text.length).toBeLessThanOrEqual(8000)
    expect(text).toContain('src/parser/**: bob (active), exclusive, expires')
    expect(text).toContain('parser rewrite')
    expect(text).toMatch(/\(\d+ items? left out/)
  })

  test('the briefing names the agents that matter (holders here, correspondents) and only counts a fleet elsewhere', async () => {
    const c = session()
    const first = contextOf(await c.send('SessionStart'))
    const me = { 'x-instance-token': c.token() }
    const holder = await register(s, { name: `holder-${c.project}`, intent: 'porting the lexer' })
    await reserve(holder, c.project, ['src/lexer/**'])
    const asked = await register(s, `asked-${c.project}`)
    const asker = await register(s, `asker-${c.project}`)
    expect((await call(s.api, 'POST', '/api/messages', { to: [asked.name], subject: 'schema?', body: 'which version' }, me)).status).toBe(201)
    expect((await call(s.api, 'POST', '/api/messages', { to: [(await sessionRow(c.id)).name], subject: 'hi', body: 'ping' }, asker.h)).status).toBe(201)
    expect(contextOf(await c.send('SessionStart'))).toContain('Messages for you (1)')
    // Resumed again, the message already shown: what changes below is only the fleet.
    const before = contextOf(await c.send('SessionStart'))
    expect(before).toContain(`- ${holder.name} (active): porting the lexer [holds files in ${c.project}]`)
    expect(before).toContain(`- ${asked.name} (active) [you messaged them]`)
    expect(before).toContain(`- ${asker.name} (active) [they messaged you]`)
    expect(before).toMatch(/\d+ more agents? registered, not listed here: `muster instances list` shows them/)
    expect(first).not.toContain(holder.name)

    // 500 more agents, each holding a file in a project of its own: the briefing does not grow.
    const fleet = `fleet${n}x`
    for (let k = 0; k < 500; k += 50)
      await Promise.all(
        Array.from({ length: 50 }, async (_, j) => reserve(await register(s, { name: `${fleet}-${k + j}`, intent: 'elsewhere' }), `${fleet}-p${k + j}`, ['a.ts'])),
      )
    const after = contextOf(await c.send('SessionStart'))
    expect(after).not.toContain(fleet)
    const count = (t: string) => Number(/(\d+) more agents? registered/.exec(t)?.[1])
    expect(count(after)).toBe(count(before) + 500)
    // The same text but for the count (and an expiry's clock): the same length within a few digits.
    expect(Math.abs(after.length - before.length)).toBeLessThanOrEqual(3)
  })
})

describe('PreToolUse', () => {
  test('Write, Edit, MultiEdit, NotebookEdit of a file another instance holds exclusively: deny naming path, pattern, holder, reason, expiry, how to ask', async () => {
    const c = session()
    await c.send('SessionStart')
    const holder = await register(s, 'grace')
    await reserve(holder, c.project, ['src/**', 'notebooks/*.ipynb'], { reason: 'refactor', ttl_ms: 600_000 })
    for (const tool of ['Write', 'Edit', 'MultiEdit', 'NotebookEdit']) {
      const answer = deny(await c.send(`PreToolUse.${tool}`))
      expect(answer.hookEventName).toBe('PreToolUse')
      expect(answer.permissionDecision).toBe('deny')
      const file = tool === 'NotebookEdit' ? 'notebooks/eda.ipynb' : 'src/app.ts'
      const pattern = tool === 'NotebookEdit' ? 'notebooks/*.ipynb' : 'src/**'
      expect(answer.permissionDecisionReason).toContain(`${file}: reserved as "${pattern}" by grace (active), reason "refactor", until 20`)
      expect(answer.permissionDecisionReason).toContain('muster send grace --subject')
    }
    const row = await sessionRow(c.id)
    const blocked = (await events('edit.blocked')).filter((e) => e.data.session_id === c.id)
    expect(blocked.length).toBe(4)
    expect(blocked[0].data).toMatchObject({
      session_id: c.id,
      instance_id: row.instance_id,
      paths: ['src/app.ts'],
      conflicts: [{ path: 'src/app.ts', held_path: 'src/**', instance_id: holder.id, instance_name: 'grace', instance_status: 'active', exclusive: true, reason: 'refactor', reservation_id: expect.any(String), expires_at: expect.any(String) }],
    })
    expect((await audit('hook.deny', row.instance_id)).length).toBe(4)
  })

  test('the same check again sees every change of the project reservations: grant, release, expiry, renewal, deregistration, case rule', async () => {
    const c = session()
    await c.send('SessionStart')
    const edit = () => c.send('PreToolUse.Edit')
    const denied = async () => deny(await edit()).permissionDecision === 'deny'
    expect(await edit()).toEqual({})
    expect(await edit()).toEqual({})
    const other = await register(s, `kept${n}`)
    // A reservation the check never reads (another file, another tree) leaves its answer; one it reads changes it.
    await reserve(other, c.project, ['src/other.ts', 'docs/**'])
    expect(await edit()).toEqual({})
    const held = await reserve(other, c.project, ['src/app.ts'])
    expect(await denied()).toBe(true)
    expect((await call(s.api, 'DELETE', `/api/reservations/${held.id}`, undefined, other.h)).status).toBe(200)
    expect(await edit()).toEqual({})
    const anywhere = await reserve(other, c.project, ['**/app.ts'])
    expect(await denied()).toBe(true)
    expect((await call(s.api, 'DELETE', `/api/reservations/${anywhere.id}`, undefined, other.h)).status).toBe(200)
    expect(await edit()).toEqual({})
    // A short reservation: denied while it lasts, free once the expiry job removed it.
    await reserve(other, c.project, ['src/*.ts'], { ttl_ms: 1000 })
    expect(await denied()).toBe(true)
    await eventually(async () => (await edit()).hookSpecificOutput === undefined, 5000)
    const again = await reserve(other, c.project, ['src/**'], { ttl_ms: 1000 })
    expect(await denied()).toBe(true)
    expect((await call(s.api, 'POST', `/api/reservations/${again.id}/renew`, { ttl_ms: 600_000 }, other.h)).status).toBe(200)
    await Bun.sleep(1500)
    expect(await denied()).toBe(true)
    expect((await call(s.api, 'DELETE', `/api/instances/${other.id}`, undefined, other.h)).status).toBeLessThan(300)
    expect(await edit()).toEqual({})
    // The project's case rule: SRC/APP.TS is another file until the project compares without case.
    const upper = await register(s, `upper${n}`)
    await reserve(upper, c.project, ['SRC/APP.TS'])
    expect(await edit()).toEqual({})
    expect((await call(s.api, 'PUT', `/api/projects/${c.project}`, { case_insensitive: true })).status).toBe(200)
    expect(await denied()).toBe(true)
  })

  test('no opinion: shared reservations of others, own reservations, files outside the root, Bash and Read', async () => {
    const c = session()
    await c.send('SessionStart')
    const other = await register(s, 'linus')
    await reserve(other, c.project, ['src/**'], { exclusive: false })
    expect(await c.send('PreToolUse.Write')).toEqual({})
    await reserve(other, c.project, ['notebooks/**'])
    expect(await c.send('PreToolUse.Bash')).toEqual({})
    expect(await c.send('PreToolUse.Read', { tool_input: { file_path: `${c.root}/notebooks/eda.ipynb` } })).toEqual({})
    expect(await c.send('PreToolUse.Write', { tool_input: { file_path: '/etc/hosts', content: '' } })).toEqual({})
    expect(await c.send('PreToolUse.Write', { tool_input: { file_path: `${c.root}/../elsewhere/notebooks/x`, content: '' } })).toEqual({})
    expect(deny(await c.send('PreToolUse.NotebookEdit')).permissionDecision).toBe('deny')
  })

  test('Codex apply_patch: every Add/Update/Delete/Move-to file is checked; Codex Write and a relative Edit as Claude Code\'s', async () => {
    const c = session('codex')
    await c.send('SessionStart')
    const other = await register(s, 'ken')
    await reserve(other, c.project, ['src/renamed.ts', 'docs/**'], { reason: 'docs sweep' })
    const reason = deny(await c.send('PreToolUse.apply_patch')).permissionDecisionReason
    expect(reason).toContain('src/renamed.ts: reserved as "src/renamed.ts" by ken')
    expect(reason).toContain('docs/hello.md: reserved as "docs/**" by ken')
    expect(reason).not.toContain('src/app.ts')
    // Codex itself never sends Write/Edit (its fixtures are recorded); the contract reads them as Claude Code's.
    const write = { tool_name: 'Write', tool_input: { file_path: `${c.root}/src/app.ts`, content: 'export const app = 3\n' } }
    const edit = { tool_name: 'Edit', tool_input: { file_path: 'src/app.ts', old_string: '= 3', new_string: '= 4' } }
    expect(await c.send('PreToolUse.apply_patch', write)).toEqual({})
    await reserve(other, c.project, ['src/app.ts'])
    expect(deny(await c.send('PreToolUse.apply_patch', write)).permissionDecisionReason).toContain('src/app.ts')
    expect(deny(await c.send('PreToolUse.apply_patch', edit)).permissionDecisionReason).toContain('src/app.ts')
    // the patch in another string field of tool_input
    const patch = codex['PreToolUse.apply_patch'].tool_input.command
    expect(deny(await c.send('PreToolUse.apply_patch', { tool_input: { input: patch } })).permissionDecision).toBe('deny')
  })

  test('edit-reserve mode: exactly that file, literal; renewed, not doubled; other own reservations left alone; a shared one of another: nothing', async () => {
    const c = session('claude-code', { 'x-muster-reserve': '4s' })
    await c.send('SessionStart')
    const row = await sessionRow(c.id)
    const odd = `${c.root}/app/[id]/page.tsx`
    expect(await c.send('PreToolUse.Write', { tool_input: { file_path: odd, content: '' } })).toEqual({})
    const [r] = await reservationsOf(row.instance_id)
    expect(r).toMatchObject({ project: c.project, paths: ['app/\\[id\\]/page.tsx'], exclusive: true, reason: 'edit' })
    expect(Date.parse(r.expires_at) - Date.parse(r.created_at)).toBeGreaterThan(3_900)
    const other = await register(s, 'barbara')
    const check = await call(s.api, 'POST', '/api/reservations/check', { project: c.project, paths: ['app/x/page.tsx'] }, other.h)
    expect(check.status).toBe(200)
    const literal = await call(s.api, 'POST', '/api/reservations/check', { project: c.project, paths: ['app/\\[id\\]/page.tsx'] }, other.h)
    expect(literal.status).toBe(409)
    // Until half its TTL has run down (here 2 s) nothing is written; then that reservation is renewed.
    await c.send('PreToolUse.Edit', { tool_input: { file_path: odd, old_string: 'a', new_string: 'b' } })
    await Bun.sleep(1000)
    await c.send('PreToolUse.Edit', { tool_input: { file_path: odd, old_string: 'a', new_string: 'b' } })
    expect(await reservationsOf(row.instance_id)).toEqual([r])
    await Bun.sleep(1100)
    await c.send('PreToolUse.Edit', { tool_input: { file_path: odd, old_string: 'a', new_string: 'b' } })
    const renewed = await reservationsOf(row.instance_id)
    expect(renewed.map((x) => x.id)).toEqual([r.id])
    expect(renewed[0].expires_at > r.expires_at).toBe(true)
    // The next edits see the new expiry: nothing more is written.
    for (let i = 0; i < 2; i++) {
      await Bun.sleep(20)
      await c.send('PreToolUse.Edit', { tool_input: { file_path: odd, old_string: 'a', new_string: 'b' } })
    }
    expect(await reservationsOf(row.instance_id)).toEqual(renewed)
    // a reservation of this instance made by hand covers src/**: left as it is
    await c.send('SessionStart')
    const token = c.token()
    const own = await reserve({ h: { 'x-instance-token': token } }, c.project, ['src/**'], { reason: 'task 7' })
    await c.send('PreToolUse.Write')
    expect((await reservationsOf(row.instance_id)).map((x) => x.id).sort()).toEqual([r.id, own.id].sort())
    // another instance's shared reservation overlapping: not denied, nothing reserved
    await reserve(other, c.project, ['notebooks/**'], { exclusive: false })
    expect(await c.send('PreToolUse.NotebookEdit')).toEqual({})
    expect((await reservationsOf(row.instance_id)).length).toBe(2)
    // denied: nothing reserved either
    await reserve(other, c.project, ['lib/**'])
    expect(deny(await c.send('PreToolUse.Write', { tool_input: { file_path: `${c.root}/lib/a.ts` } })).permissionDecision).toBe('deny')
    expect((await reservationsOf(row.instance_id)).length).toBe(2)
  })
})

describe('messages', () => {
  const send = (to: string, subject: string, extra: Record<string, unknown> = {}) =>
    call(s.api, 'POST', '/api/messages', { to: [to], subject, body: `about ${subject}`, ...extra }).then((r) => {
      expect(r.status).toBe(201)
      return r.body
    })

  test('UserPromptSubmit and PostToolUse add new messages once; Stop adds them once unless stop_hook_active; SessionStart shows them', async () => {
    const name = `mia${n}`
    const c = session('claude-code', { 'x-muster-agent': name })
    const m1 = await send(name, 'first', { ack_required: true })
    const brief = contextOf(await c.send('SessionStart'))
    expect(brief).toContain(`Message ${m1.id} from human`)
    expect(brief).toContain('ack asked')
    expect(await c.send('UserPromptSubmit')).toEqual({})

    const m2 = await send(name, 'second')
    const a = await c.send('UserPromptSubmit')
    expect(a.hookSpecificOutput.hookEventName).toBe('UserPromptSubmit')
    expect(contextOf(a)).toContain(`Message ${m2.id} from human: second`)
    expect(contextOf(a)).toContain('about second')
    expect(await c.send('PostToolUse')).toEqual({})

    const m3 = await send('*', 'to everyone')
    const p = await c.send('PostToolUse')
    expect(p.hookSpecificOutput.hookEventName).toBe('PostToolUse')
    expect(contextOf(p)).toContain(`Message ${m3.id}`)

    const m4 = await send(name, 'before stopping')
    expect(await c.send('Stop', { stop_hook_active: true })).toEqual({})
    const stop = await c.send('Stop')
    expect(stop).toEqual({ hookSpecificOutput: { hookEventName: 'Stop', additionalContext: expect.stringContaining(`Message ${m4.id}`) } })
    expect(await c.send('Stop')).toEqual({})

    // Acked messages stay away; a new session under the same name shows the unacked ones again.
    const row = await sessionRow(c.id)
    const token = c.token()
    expect((await call(s.api, 'POST', `/api/messages/${m2.id}/ack`, undefined, { 'x-instance-token': token })).status).toBe(200)
    const d = session('codex', { 'x-muster-agent': name })
    const again = contextOf(await d.send('SessionStart'))
    expect(again).toContain(`Message ${m1.id}`)
    expect(again).not.toContain(`Message ${m2.id}`)
    expect(again).toContain(`Message ${m4.id}`)
    expect(row.name).toBe(name)
  })

  test('a message that did not fit waits for the next answer though later ones were shown; none comes twice', async () => {
    const name = `noor${n}`
    const c = session('claude-code', { 'x-muster-agent': name })
    await c.send('SessionStart')
    expect(await c.send('UserPromptSubmit')).toEqual({})
    // Four of about 2,000 characters each: the fourth does not fit after three; the short fifth does.
    const long = (i: number) => send(name, `long ${i}`, { body: `${i}`.repeat(1990) })
    const [m1, m2, m3, m4] = [await long(1), await long(2), await long(3), await long(4)]
    const m5 = await send(name, 'short')
    const first = contextOf(await c.send('UserPromptSubmit'))
    for (const m of [m1, m2, m3, m5]) expect(first).toContain(`Message ${m.id} from`)
    expect(first).not.toContain(`Message ${m4.id} from`)
    expect(first).toContain('(1 more waiting')
    const second = contextOf(await c.send('PostToolUse'))
    expect(second).toContain(`Message ${m4.id} from`)
    expect(second).toMatch(/^Muster: 1 new message for/)
    const m6 = await send(name, 'later')
    const third = contextOf(await c.send('PostToolUse'))
    expect(third).toMatch(/^Muster: 1 new message for/)
    expect(third).toContain(`Message ${m6.id} from`)
    expect(await c.send('PostToolUse')).toEqual({})
  })
})

describe('PreToolUse of a shell tool', () => {
  const bash = (command: string) => ({ tool_input: { command } })

  test('a write another instance holds is denied as an edit is: the same reason, edit.blocked, hook.deny (Claude Code Bash, Codex Bash)', async () => {
    for (const agent of ['claude-code', 'codex'] as const) {
      const c = session(agent)
      await c.send('SessionStart')
      const holder = await register(s, `hopper${n}`)
      await reserve(holder, c.project, ['src/auth/**'], { reason: 'auth rework', ttl_ms: 600_000 })
      const edit = deny(await c.send('PreToolUse.Bash', { tool_name: 'Write', tool_input: { file_path: `${c.root}/src/auth/login.ts`, content: '' } }))
      const shell = deny(await c.send('PreToolUse.Bash', bash("printf 'export const x = 1\\n' >> src/auth/login.ts")))
      expect(shell).toEqual(edit)
      expect(shell.permissionDecisionReason).toContain(`src/auth/login.ts: reserved as "src/auth/**" by ${holder.name} (active), reason "auth rework"`)
      // every form of the contract, through cd prefixes and operators
      for (const command of [
        'cd src && sed -i "s/a/b/" auth/login.ts',
        'echo ok; cat notes.txt | tee -a src/auth/login.ts > /dev/null',
        'cd src/auth && cp /tmp/login.ts login.ts',
        'git checkout -- src/auth/login.ts',
        'rm -rf src',
        "bash -lc 'touch src/auth/new.ts'",
      ]) {
        const answer = deny(await c.send('PreToolUse.Bash', bash(command)))
        expect(answer.permissionDecision).toBe('deny')
        expect(answer.permissionDecisionReason).toContain(`by ${holder.name} (active), reason "auth rework"`)
      }
      const row = await sessionRow(c.id)
      const blocked = (await events('edit.blocked')).filter((e) => e.data.session_id === c.id)
      expect(blocked.length).toBe(8)
      expect(blocked[1].data).toMatchObject({ session_id: c.id, instance_id: row.instance_id, paths: ['src/auth/login.ts'], conflicts: [{ path: 'src/auth/login.ts', held_path: 'src/auth/**', instance_name: holder.name }] })
      expect(blocked[6].data.paths).toEqual(['src'])
      expect((await audit('hook.deny', row.instance_id)).length).toBe(8)
    }
  })

  test('commands that write nothing held, or nothing that can be read, are left alone', async () => {
    const c = session('codex')
    await c.send('SessionStart')
    const holder = await register(s, 'lovelace')
    await reserve(holder, c.project, ['src/**'])
    for (const command of [
      'cat src/a.ts | grep x',
      'echo > /dev/null',
      'git diff > /tmp/x',
      'ls > ../outside.txt',
      'echo "> src/a.ts"',
      'echo x > "$TARGET"',
      'npm test',
      'git restore --staged src/a.ts',
      'echo x > docs/free.md',
    ])
      expect(await c.send('PreToolUse.Bash', bash(command))).toEqual({})
    // Codex's older tool names and its argv form
    expect(deny(await c.send('PreToolUse.Bash', { tool_name: 'shell', tool_input: { command: ['bash', '-lc', 'touch src/a.ts'] } })).permissionDecision).toBe('deny')
    expect(deny(await c.send('PreToolUse.Bash', { tool_name: 'exec_command', tool_input: { cmd: 'touch src/a.ts' } })).permissionDecision).toBe('deny')
    expect((await events('edit.blocked')).filter((e) => e.data.session_id === c.id).length).toBe(2)
  })

  test('a command writing more paths than a reservation may hold, or one past the limits: no opinion, edit.unchecked', async () => {
    const c = session('claude-code', { 'x-muster-reserve': '10m' })
    await c.send('SessionStart')
    const holder = await register(s, 'knuth')
    await reserve(holder, c.project, ['src/**'])
    const many = Array.from({ length: 101 }, (_, i) => `src/f${i}.ts`).join(' ')
    expect(await c.send('PreToolUse.Bash', bash(`touch ${many}`))).toEqual({})
    expect(await c.send('PreToolUse.Bash', bash(`echo x > src/${'a/'.repeat(600)}a.ts`))).toEqual({})
    const seen = (await events('edit.unchecked')).filter((e) => e.data.session_id === c.id).map((e) => [e.data.tool, e.data.files, e.data.problem])
    expect(seen).toEqual([
      ['Bash', 101, 'the command writes more than 100 paths; at most 100 are checked, as a reservation holds'],
      ['Bash', 1, 'a pattern is at most 1024 characters'],
    ])
    expect(await reservationsOf((await sessionRow(c.id)).instance_id)).toEqual([])
  })

  test('Codex: apply_patch run through the shell is read as apply_patch (its files, from the directory of a cd before it)', async () => {
    const c = session('codex', { 'x-muster-reserve': '10m' })
    await c.send('SessionStart')
    const holder = await register(s, 'turing')
    await reserve(holder, c.project, ['pkg/src/held.ts'], { reason: 'held' })
    const patch = (file: string) => `*** Begin Patch\n*** Update File: ${file}\n@@\n-a\n+b\n*** End Patch`
    const refused = deny(await c.send('PreToolUse.Bash', bash(`cd pkg && apply_patch <<'EOF'\n${patch('src/held.ts')}\nEOF\n`)))
    expect(refused.permissionDecisionReason).toContain('pkg/src/held.ts: reserved as "pkg/src/held.ts" by turing')
    expect(await c.send('PreToolUse.Bash', { tool_input: { command: ['apply_patch', patch('pkg/src/free.ts')] } })).toEqual({})
    const row = await sessionRow(c.id)
    expect((await reservationsOf(row.instance_id)).map((r) => r.paths[0])).toEqual(['pkg/src/free.ts'])
  })

  test('edit-reserve mode: the files it plainly writes are reserved, not a tree it removes nor a maybe', async () => {
    const c = session('claude-code', { 'x-muster-reserve': '10m' })
    await c.send('SessionStart')
    const row = await sessionRow(c.id)
    expect(await c.send('PreToolUse.Bash', bash('cd src && echo x > a.ts && cp b.ts c.ts && rm -r old && echo x > $X.ts'))).toEqual({})
    const mine = await reservationsOf(row.instance_id)
    expect(mine.map((r) => r.paths[0]).sort()).toEqual(['src/a.ts', 'src/c.ts'])
    expect(mine.every((r) => r.reason === 'edit' && r.exclusive)).toBe(true)
    // the next agent's shell write to it is refused
    const d = session('codex')
    const other = deny(await d.send('PreToolUse.Bash', { ...bash('sed -i s/x/y/ src/a.ts'), cwd: c.root, session_id: d.id }, { 'x-muster-project': c.project, 'x-muster-root': c.root }))
    expect(other.permissionDecisionReason).toContain(`src/a.ts: reserved as "src/a.ts" by ${row.name} (active), reason "edit"`)
  })
})

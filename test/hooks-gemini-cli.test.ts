// POST /api/hooks/gemini-cli over real HTTP with Gemini CLI's own payloads, recorded from
// the real CLI 0.61.0 (test/fixtures/hooks/gemini-cli.json, see its README): the adapter
// reads each event (tool names, dir_path, stop_hook_active) and answers in the shapes
// Gemini CLI acts on ({decision: "deny", reason}, hookSpecificOutput.additionalContext).
// The scenarios with the real CLI are in test/agents/gemini-cli.test.ts.
import { afterAll, beforeAll, expect, test } from 'bun:test'
import { call, register, startServer, type TestServer } from './helpers'
import gemini from './fixtures/hooks/gemini-cli.json'

let s: TestServer
beforeAll(async () => (s = await startServer()))
afterAll(() => s.cleanup())

const fixtures = gemini as Record<string, any>
let n = 0

/** A fresh Gemini CLI session with its own id and root (/tmp/gemini-hooks-N/<project>). */
function session(headers: Record<string, string> = {}) {
  const id = `gem-${++n}-${crypto.randomUUID()}`
  const project = `gproj${n}${Math.random().toString(36).slice(2, 6)}`
  const root = `/tmp/gemini-hooks-${n}/${project}`
  const send = async (key: string, extra: Record<string, unknown> = {}, h: Record<string, string> = {}) => {
    const event = { ...JSON.parse(JSON.stringify(fixtures[key]).replaceAll('/work/repo', root)), session_id: id, ...extra }
    const r = await call(s.api, 'POST', '/api/hooks/gemini-cli', event, { 'x-muster-root': root, ...headers, ...h })
    expect(r.status, r.text).toBe(200)
    expect(r.text).not.toContain('"allow"')
    return r
  }
  return { id, project, root, send }
}

const sessionRow = async (id: string) => ((await call(s.api, 'GET', '/api/sessions')).body as any[]).find((x) => x.session_id === id)
const contextOf = (answer: any) => answer.hookSpecificOutput?.additionalContext as string

test('an event without session_id, hook_event_name, or a tool event without tool_name: 400 naming it, nothing registered', async () => {
  const before = (await call(s.api, 'GET', '/api/sessions')).body.length
  const bad: [Record<string, unknown>, string][] = [
    [{ ...fixtures.SessionStart, session_id: undefined }, 'session_id'],
    [{ ...fixtures.SessionStart, hook_event_name: '' }, 'hook_event_name'],
    [{ ...fixtures['BeforeTool:write_file'], session_id: 'gem-bad', tool_name: undefined }, 'tool_name'],
  ]
  for (const [body, field] of bad) {
    const r = await call(s.api, 'POST', '/api/hooks/gemini-cli', body)
    expect(r.status).toBe(400)
    expect(r.body).toMatchObject({ error: expect.stringContaining(field), code: 400 })
  }
  expect((await call(s.api, 'GET', '/api/sessions')).body.length).toBe(before)
})

test('SessionStart registers the session as a gemini-cli instance and briefs it in additionalContext', async () => {
  const g = session({ 'x-muster-agent': 'gstart' })
  const r = await g.send('SessionStart')
  expect(r.body.hookSpecificOutput.hookEventName).toBe('SessionStart')
  expect(contextOf(r.body)).toContain('Muster coordination: you are "gstart"')
  expect(r.headers.get('x-muster-instance-token')).toMatch(/^[0-9a-f]{64}$/)
  expect(r.text).not.toContain(r.headers.get('x-muster-instance-token')!)
  expect(await sessionRow(g.id)).toMatchObject({ agent: 'gemini-cli', name: 'gstart', root: g.root, project: g.project, ended_at: null })
})

test('BeforeTool: write_file, replace and a shell write (in dir_path) of a held file are denied; other files and tools pass', async () => {
  const g = session({ 'x-muster-agent': 'gwriter' })
  await g.send('SessionStart')
  const holder = await register(s, 'gholder')
  expect((await call(s.api, 'POST', '/api/reservations', { project: g.project, paths: ['src/a.ts', 'src/b.txt'], reason: 'refactor' }, holder.h)).status).toBe(201)
  for (const key of ['BeforeTool:write_file', 'BeforeTool:replace', 'BeforeTool:run_shell_command']) {
    const r = await g.send(key)
    expect(r.body.decision, key).toBe('deny')
    expect(r.body.reason).toContain('gholder')
    expect(r.body.reason).toContain(key.endsWith('shell_command') ? 'src/b.txt' : 'src/a.ts')
  }
  // The same command run from the root writes ./b.txt, which nobody holds.
  const root = await g.send('BeforeTool:run_shell_command', { tool_input: { command: 'echo hi > b.txt' } })
  expect(root.body).toEqual({})
  const other = await g.send('BeforeTool:write_file', { tool_input: { file_path: 'src/free.ts', content: 'x' } })
  expect(other.body).toEqual({})
  const read = await g.send('BeforeTool:write_file', { tool_name: 'read_file', tool_input: { file_path: 'src/a.ts' } })
  expect(read.body).toEqual({})
})

test('messages reach the model after a prompt (BeforeAgent) and after a tool (AfterTool), once each', async () => {
  const g = session({ 'x-muster-agent': 'greader' })
  await g.send('SessionStart')
  await call(s.api, 'POST', '/api/messages', { to: ['greader'], subject: 'api frozen', body: 'no changes to /v1 today' })
  const prompt = await g.send('BeforeAgent')
  expect(prompt.body.hookSpecificOutput.hookEventName).toBe('BeforeAgent')
  expect(contextOf(prompt.body)).toContain('api frozen')
  expect((await g.send('AfterTool:write_file')).body).toEqual({}) // shown already
  await call(s.api, 'POST', '/api/messages', { to: ['greader'], subject: 'schema v2 merged' })
  const after = await g.send('AfterTool:replace')
  expect(after.body.hookSpecificOutput.hookEventName).toBe('AfterTool')
  expect(contextOf(after.body)).toContain('schema v2 merged')
})

test('AfterAgent: a new message keeps the model going as a Muster notice, never twice in a row', async () => {
  const g = session({ 'x-muster-agent': 'gstopper' })
  await g.send('SessionStart')
  expect((await g.send('AfterAgent')).body).toEqual({})
  await call(s.api, 'POST', '/api/messages', { to: ['gstopper'], subject: 'deploy at noon' })
  expect((await g.send('AfterAgent', { stop_hook_active: true })).body).toEqual({})
  const r = await g.send('AfterAgent')
  expect(r.body.decision).toBe('deny')
  expect(r.body.reason).toContain('not from the user')
  expect(r.body.reason).toContain('deploy at noon')
})

test('Notification (ToolPermission) is answered {} and waits for the person as "needs input" until the next event; SessionEnd ends the session and releases its edit reservations', async () => {
  const g = session({ 'x-muster-agent': 'gender', 'x-muster-reserve': '30m' })
  await g.send('SessionStart')
  expect((await g.send('BeforeTool:write_file')).body).toEqual({})
  const { instance_id } = await sessionRow(g.id)
  expect((await call(s.api, 'GET', `/api/reservations?instance_id=${instance_id}`)).body).toMatchObject([{ paths: ['src/a.ts'], reason: 'edit' }])
  expect((await g.send('Notification')).body).toEqual({})
  const inputs = async () => ((await call(s.api, 'GET', '/api/approvals?status=pending')).body as any[]).filter((a) => a.session_id === g.id)
  expect(await inputs()).toMatchObject([{ kind: 'input', agent: 'gemini-cli', name: 'gender', summary: fixtures.Notification.message }])
  // Another notice (not a permission) asks nothing.
  expect((await g.send('Notification', { notification_type: 'Other', message: 'done' })).body).toEqual({})
  expect(await inputs()).toEqual([])
  const end = await g.send('SessionEnd')
  expect(end.body).toEqual({})
  expect(end.headers.get('x-muster-held')).toBe('false')
  expect((await sessionRow(g.id)).ended_at).not.toBeNull()
  expect((await call(s.api, 'GET', `/api/reservations?instance_id=${instance_id}`)).body).toEqual([])
})

test("/clear: SessionEnd (clear) holds the instance, and the new session's SessionStart (clear) takes it over with what it held", async () => {
  // Gemini CLI's /clear ends the session with reason "clear", then starts one with a new id and source "clear".
  const first = session({ 'x-muster-agent': 'gclear', 'x-muster-reserve': '30m' })
  const id = (await first.send('SessionStart')).headers.get('x-muster-instance-id')!
  await first.send('BeforeTool:write_file')
  const end = await first.send('SessionEnd', { reason: 'clear' })
  expect(end.headers.get('x-muster-held')).toBe('true')
  expect((await call(s.api, 'GET', `/api/reservations?instance_id=${id}`)).body).toMatchObject([{ paths: ['src/a.ts'] }])
  const id2 = `gem-clear-${crypto.randomUUID()}`
  const next = await call(s.api, 'POST', '/api/hooks/gemini-cli', { ...fixtures.SessionStart, cwd: first.root, session_id: id2, source: 'clear' }, { 'x-muster-root': first.root, 'x-muster-agent': 'gclear' })
  expect(next.status).toBe(200)
  expect(next.headers.get('x-muster-instance-id')).toBe(id)
  expect(await sessionRow(id2)).toMatchObject({ agent: 'gemini-cli', instance_id: id, name: 'gclear', ended_at: null })
  expect((await call(s.api, 'GET', `/api/reservations?instance_id=${id}`)).body).toMatchObject([{ paths: ['src/a.ts'] }])
})

test("a shell command's dir_path outside the project is not taken as the event's cwd: a new session still registers", async () => {
  const g = session({ 'x-muster-agent': 'gout' })
  // The first event of the session, as when the hooks were added mid-session.
  const r = await g.send('BeforeTool:run_shell_command', { tool_input: { command: 'echo hi > b.txt', dir_path: '/var/tmp' } })
  expect(r.body).toEqual({})
  expect(await sessionRow(g.id)).toMatchObject({ agent: 'gemini-cli', name: 'gout', root: g.root })
})

// Cline's adapter over real HTTP (POST /api/hooks/cline) with the events of Cline's own
// source (test/fixtures/hooks/cline.ts names the file and version of each): the CLI's
// (agent_start, tool_call, tool_result, agent_end …) and the VS Code extension's
// (TaskStart, PreToolUse …). The answer is Cline's {cancel, errorMessage, contextModification}.
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { call, register, startServer, type TestServer } from './helpers'
import { cli, vscode } from './fixtures/hooks/cline'

let s: TestServer
beforeAll(async () => (s = await startServer()))
afterAll(() => s.cleanup())

let n = 0
/** A fresh task: its own taskId and root (/tmp/cline-N/<project>). */
function task(headers: Record<string, string> = {}) {
  const id = `conv_${++n}_${crypto.randomUUID()}`
  const project = `cl${n}${Math.random().toString(36).slice(2, 6)}`
  const root = `/tmp/cline-${n}/${project}`
  const send = async (fixture: Record<string, unknown>, h: Record<string, string> = {}) => {
    const body = { ...JSON.parse(JSON.stringify(fixture).replaceAll('/work/repo', root)), taskId: id }
    // The CLI's events name its session too: the same one here.
    if (body.sessionContext) body.sessionContext = { rootSessionId: id }
    const r = await call(s.api, 'POST', '/api/hooks/cline', body, { ...headers, ...h })
    expect(r.status).toBe(200)
    return r
  }
  return { id, project, root, send }
}

const sessionRow = async (id: string) => ((await call(s.api, 'GET', '/api/sessions')).body as any[]).find((x) => x.session_id === id)
const reservationsOf = async (instanceId: string) => (await call(s.api, 'GET', `/api/reservations?instance_id=${instanceId}`)).body as any[]
const hold = async (name: string, project: string, paths: string[], reason: string) => {
  const holder = await register(s, name)
  const r = await call(s.api, 'POST', '/api/reservations', { project, paths, reason }, holder.h)
  expect(r.status).toBe(201)
  return holder
}

describe('endpoint', () => {
  test('an event without taskId or hookName: 400 naming it, registering nothing', async () => {
    const before = (await call(s.api, 'GET', '/api/sessions')).body.length
    const { taskId: _t, ...noTask } = cli.tool_call_editor
    const { hookName: _h, ...noName } = cli.tool_call_editor
    const a = await call(s.api, 'POST', '/api/hooks/cline', noTask)
    expect(a.status).toBe(400)
    expect(a.body.error).toContain('taskId is required')
    const b = await call(s.api, 'POST', '/api/hooks/cline', noName)
    expect(b.status).toBe(400)
    expect(b.body.error).toContain('hookName is required')
    expect((await call(s.api, 'POST', '/api/hooks/cline', { ...cli.tool_call_editor, taskId: 7 })).status).toBe(400)
    expect((await call(s.api, 'GET', '/api/sessions')).body.length).toBe(before)
  })
})

describe('the Cline CLI (3.0.65)', () => {
  test('agent_start registers the task as a session and briefs it; the instance token only in the headers', async () => {
    const t = task({ 'x-muster-agent': 'cleo' })
    const r = await t.send(cli.agent_start)
    const row = await sessionRow(t.id)
    expect(row).toMatchObject({ agent: 'cline', name: 'cleo', root: t.root, project: t.project, ended_at: null })
    expect(r.body.cancel).toBe(false)
    expect(r.body.contextModification).toContain('Muster coordination: you are "cleo"')
    const token = r.headers.get('x-muster-instance-token')
    expect(token).toMatch(/^[0-9a-f]{64}$/)
    expect(r.text).not.toContain(token!)
    expect(r.headers.get('x-muster-instance-id')).toBe(row.instance_id)
  })

  test('tool_call of editor, run_commands or apply_patch writing a held file: cancel with the reason; a read: no opinion', async () => {
    const t = task({ 'x-muster-agent': 'bob' })
    await hold('ada', t.project, ['src/**'], 'answer refactor')
    for (const fixture of [cli.tool_call_editor, cli.tool_call_shell, cli.tool_call_patch]) {
      const { body } = await t.send(fixture)
      expect(Object.keys(body).sort()).toEqual(['cancel', 'errorMessage'])
      expect(body.cancel).toBe(true)
      expect(body.errorMessage).toContain('src/app.ts: reserved as "src/**" by ada (active), reason "answer refactor"')
      expect(body.errorMessage).toContain('muster send ada --subject')
    }
    expect((await t.send(cli.tool_call_read)).body).toEqual({})
    // The session was registered by its first event (Cline runs no start hook before a plugin's tool call).
    expect(await sessionRow(t.id)).toMatchObject({ agent: 'cline', name: 'bob' })
  })

  test('a relative path is taken from workspaceRoots; a file outside the session root is not checked', async () => {
    const t = task()
    await t.send(cli.agent_start) // the session's root: /work/repo
    await hold('ada2', t.project, ['src/app.ts'], 'mine')
    const inSrc = { ...cli.tool_call_editor, workspaceRoots: ['/work/repo/src'], tool_call: { ...cli.tool_call_editor.tool_call, input: { path: 'app.ts', new_text: 'x' } } }
    expect((await t.send(inSrc)).body.cancel).toBe(true)
    const outside = { ...cli.tool_call_editor, tool_call: { ...cli.tool_call_editor.tool_call, input: { path: '/etc/app.ts', new_text: 'x' } } }
    expect((await t.send(outside)).body).toEqual({})
  })

  test('edit-reserve mode: an editor call reserves its file for the task', async () => {
    const t = task({ 'x-muster-reserve': '10m' })
    expect((await t.send(cli.tool_call_editor)).body).toEqual({})
    const row = await sessionRow(t.id)
    expect(await reservationsOf(row.instance_id)).toMatchObject([{ paths: ['src/app.ts'], exclusive: true, reason: 'edit' }])
  })

  test('tool_result shows new messages once, as contextModification', async () => {
    const name = `mia${n}`
    const t = task({ 'x-muster-agent': name })
    await t.send(cli.agent_start)
    expect((await t.send(cli.tool_result)).body).toEqual({})
    const sent = await call(s.api, 'POST', '/api/messages', { to: [name], subject: 'schema moved', body: 'pull first' })
    expect(sent.status).toBe(201)
    const { body } = await t.send(cli.tool_result)
    expect(body.cancel).toBe(false)
    expect(body.contextModification).toContain(`Message ${sent.body.id} from human: schema moved`)
    expect(body.contextModification).toContain('pull first')
    expect((await t.send(cli.tool_result)).body).toEqual({})
  })

  test("a sub-agent's events are its session's: its tool calls checked as the session's, its start and end not the session's", async () => {
    const t = task({ 'x-muster-reserve': '10m', 'x-muster-agent': 'lead' })
    await t.send(cli.agent_start)
    await t.send(cli.tool_call_editor)
    const row = await sessionRow(t.id)
    // A sub-agent: a taskId and agent_id of its own, the lead's CLI session (sdk/packages/core/src/extensions/tools/team/delegated-agent.ts: the lead's hooks and extensions).
    const sub = (fixture: Record<string, unknown>) => ({ ...fixture, taskId: `conv_sub_${t.id}`, sessionContext: { rootSessionId: t.id }, agent_id: 'agent_sub', parent_agent_id: cli.agent_start.agent_id })
    await call(s.api, 'POST', '/api/hooks/cline', { ...sub(cli.agent_start), workspaceRoots: [t.root] })
    const own = await call(s.api, 'POST', '/api/hooks/cline', { ...sub(cli.tool_call_editor), workspaceRoots: [t.root] })
    expect(own.body).toEqual({}) // the lead's own reservation: no conflict
    expect((await call(s.api, 'POST', '/api/hooks/cline', { ...sub(cli.agent_end), workspaceRoots: [t.root] })).body).toEqual({})
    expect(await sessionRow(t.id)).toMatchObject({ instance_id: row.instance_id, ended_at: null })
    expect((await reservationsOf(row.instance_id)).map((r) => r.paths)).toEqual([['src/app.ts']])
    expect(((await call(s.api, 'GET', '/api/sessions')).body as any[]).filter((x) => x.session_id.includes(t.id)).length).toBe(1)
  })

  for (const end of ['agent_end', 'agent_abort', 'agent_error', 'session_shutdown'] as const) {
    test(`${end} ends the session: its instance deregistered, what it held released`, async () => {
      const t = task({ 'x-muster-reserve': '10m' })
      await t.send(cli.agent_start)
      await t.send(cli.tool_call_editor)
      const row = await sessionRow(t.id)
      expect((await reservationsOf(row.instance_id)).length).toBe(1)
      expect((await t.send(cli[end])).body).toEqual({})
      expect((await sessionRow(t.id)).ended_at).toEqual(expect.any(String))
      expect((await call(s.api, 'GET', `/api/instances/${row.instance_id}`)).status).toBe(404)
      expect(await reservationsOf(row.instance_id)).toEqual([])
    })
  }
})

describe('the VS Code extension (4.1.13)', () => {
  test('PreToolUse of editor, write_to_file, replace_in_file, execute_command, run_commands (string parameters) writing a held file: cancel', async () => {
    const t = task({ 'x-muster-agent': 'vic' })
    await t.send(vscode.TaskStart)
    await hold('grace', t.project, ['src/app.ts'], 'typing')
    for (const fixture of [vscode.PreToolUse_editor, vscode.PreToolUse_write_to_file, vscode.PreToolUse_replace_in_file, vscode.PreToolUse_execute_command, vscode.PreToolUse_run_commands]) {
      const { body } = await t.send(fixture)
      expect(body.cancel).toBe(true)
      expect(body.errorMessage).toContain('src/app.ts: reserved as "src/app.ts" by grace (active), reason "typing"')
    }
    expect((await t.send(vscode.PostToolUse)).body).toEqual({})
  })

  test('TaskComplete and TaskCancel end the session', async () => {
    for (const end of [vscode.TaskComplete, vscode.TaskCancel]) {
      const t = task()
      await t.send(vscode.TaskStart)
      const row = await sessionRow(t.id)
      expect((await t.send(end)).body).toEqual({})
      expect((await sessionRow(t.id)).ended_at).toEqual(expect.any(String))
      expect((await call(s.api, 'GET', `/api/instances/${row.instance_id}`)).status).toBe(404)
    }
  })
})

// Cursor's hook events over real HTTP, payloads written from Cursor's hooks reference
// (cursor.com/docs/agent/hooks) and its third-party hooks page
// (cursor.com/docs/reference/third-party-hooks): test/fixtures/hooks/cursor.json, README
// there. The conversation is the session: sessionStart registers, a Write, Delete or Shell of
// a held file is denied as {permission: "deny", …}, messages reach the model as
// additional_context (postToolUse) or a followup_message (stop), sessionEnd releases. Cursor
// also runs the Claude Code hooks `muster init claude-code` wrote (its third-party hooks):
// those events, posted to /api/hooks/claude-code with Cursor's payload, are the same
// conversation's: one session, one instance, never two.
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { existsSync, mkdirSync, readFileSync, realpathSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { call, register, startServer, type TestServer } from './helpers'
import { removeWorkdirs, runCli, workdir } from './cli-run'
import fixtures from './fixtures/hooks/cursor.json'

let s: TestServer
beforeAll(async () => (s = await startServer()))
afterAll(async () => {
  await s.cleanup()
  removeWorkdirs()
})

const CONVERSATION = 'c0a1b2c3-d4e5-4f60-8a9b-0c1d2e3f4a5b'
type Key = keyof typeof fixtures

let n = 0
/** A fresh Cursor conversation: its own id and workspace root (/tmp/cursor-N/<project>). */
function conversation(headers: Record<string, string> = {}) {
  const id = crypto.randomUUID()
  const project = `cur${++n}${Math.random().toString(36).slice(2, 6)}`
  const root = `/tmp/cursor-${n}/${project}`
  const event = (key: Key, extra: Record<string, unknown> = {}) => ({ ...JSON.parse(JSON.stringify(fixtures[key]).replaceAll('/work/repo', root).replaceAll(CONVERSATION, id)), ...extra })
  /** Posts the event to `agent`'s endpoint: Cursor's own hooks post to cursor, the Claude Code hooks it also runs to claude-code. */
  const send = async (key: Key, extra: Record<string, unknown> = {}, agent = 'cursor', h: Record<string, string> = {}) => {
    const r = await call(s.api, 'POST', `/api/hooks/${agent}`, event(key, extra), { ...headers, ...h })
    expect(r.status).toBe(200)
    expect(r.text).not.toContain('"allow"')
    return r
  }
  return { id, project, root, event, send }
}

const sessionRow = async (id: string) => ((await call(s.api, 'GET', '/api/sessions')).body as any[]).find((x) => x.session_id === id)
const instancesNamed = async (name: string) => ((await call(s.api, 'GET', '/api/instances')).body as any[]).filter((i) => i.name === name)
const hold = async (project: string, paths: string[]) => {
  const bob = await register(s, { name: `bob-${project}` })
  const r = await call(s.api, 'POST', '/api/reservations', { project, paths, reason: 'refactoring the app', ttl_ms: 600_000 }, bob.h)
  expect(r.status).toBe(201)
  return bob
}
const message = async (to: string, subject: string) => expect((await call(s.api, 'POST', '/api/messages', { to: [to], subject, body: `about ${subject}` })).status).toBe(201)

describe('Cursor', () => {
  test('sessionStart registers the conversation as an instance, briefed as additional_context; its root is the workspace root', async () => {
    const c = conversation()
    const r = await c.send('sessionStart')
    expect(Object.keys(r.body)).toEqual(['additional_context'])
    expect(r.body.additional_context).toContain(`cursor-${c.id.slice(0, 8)}`)
    expect(r.text).not.toContain(r.headers.get('x-muster-instance-token')!)
    const row = await sessionRow(c.id)
    expect(row).toMatchObject({ agent: 'cursor', name: `cursor-${c.id.slice(0, 8)}`, root: c.root, project: c.project, ended_at: null })
  })

  test('a Write, a Delete, a Shell write (preToolUse) and a shell command (beforeShellExecution) of a held file are denied in Cursor shape', async () => {
    const c = conversation()
    await c.send('sessionStart')
    const bob = await hold(c.project, ['src/app.ts'])
    for (const key of ['preToolUse.Write', 'preToolUse.Delete', 'preToolUse.Shell', 'beforeShellExecution'] as const) {
      const r = await c.send(key)
      expect(Object.keys(r.body).sort()).toEqual(['agent_message', 'permission', 'user_message'])
      expect(r.body.permission).toBe('deny')
      expect(r.body.agent_message).toContain(bob.name)
      expect(r.body.agent_message).toContain('refactoring the app')
      expect(r.body.agent_message).toContain(`muster send ${bob.name}`)
    }
    for (const key of ['preToolUse.Read', 'beforeReadFile', 'beforeMCPExecution', 'afterFileEdit', 'beforeSubmitPrompt'] as const) expect((await c.send(key)).body).toEqual({})
  })

  test('messages: postToolUse as additional_context, stop as a followup_message, once; beforeSubmitPrompt (no context there) keeps them', async () => {
    const c = conversation()
    await c.send('sessionStart')
    const name = (await sessionRow(c.id)).name
    await message(name, 'first')
    // Cursor's beforeSubmitPrompt cannot add context: a message shown there would never reach the model
    expect((await c.send('beforeSubmitPrompt')).body).toEqual({})
    const post = (await c.send('postToolUse')).body
    expect(Object.keys(post)).toEqual(['additional_context'])
    expect(post.additional_context).toContain('first')
    expect((await c.send('postToolUse')).body).toEqual({})
    await message(name, 'second')
    const stop = (await c.send('stop')).body
    expect(Object.keys(stop)).toEqual(['followup_message'])
    expect(stop.followup_message).toContain('second')
    expect(stop.followup_message).toContain('not from the user')
    await message(name, 'third')
    // the stop Cursor runs after our follow-up (loop_count 1): never follow up twice in a row
    expect((await c.send('stop', { loop_count: 1 })).body).toEqual({})
    expect((await c.send('postToolUse')).body.additional_context).toContain('third')
  })

  test('sessionEnd deregisters the instance and releases what it held', async () => {
    const c = conversation({ 'x-muster-reserve': '10m' })
    await c.send('sessionStart')
    expect((await c.send('preToolUse.Write')).body).toEqual({})
    const row = await sessionRow(c.id)
    expect(((await call(s.api, 'GET', `/api/reservations?instance_id=${row.instance_id}`)).body as any[]).length).toBe(1)
    expect((await c.send('sessionEnd')).body).toEqual({})
    expect((await call(s.api, 'GET', `/api/instances/${row.instance_id}`)).status).toBe(404)
    expect((await call(s.api, 'GET', `/api/reservations?instance_id=${row.instance_id}`)).body).toEqual([])
  })

  test('an event without hook_event_name or a conversation id is a 400 naming it, registering nothing', async () => {
    const c = conversation()
    const before = (await call(s.api, 'GET', '/api/sessions')).body.length
    const { hook_event_name, ...unnamed } = c.event('preToolUse.Write')
    void hook_event_name
    const { conversation_id, ...anonymous } = c.event('preToolUse.Write')
    void conversation_id
    for (const [body, field] of [
      [unnamed, 'hook_event_name'],
      [anonymous, 'conversation_id'],
    ] as const) {
      const r = await call(s.api, 'POST', '/api/hooks/cursor', body)
      expect(r.status).toBe(400)
      expect(r.body.error).toContain(field)
    }
    expect((await call(s.api, 'GET', '/api/sessions')).body.length).toBe(before)
  })
})

describe("Cursor running Claude Code's hooks (third-party hooks)", () => {
  // What `muster init claude-code` wrote: http hooks to /api/hooks/claude-code with these headers (the
  // variables empty in Cursor's environment), SessionStart and SessionEnd as `muster hook claude-code`.
  const claudeHeaders = { 'x-muster-project': '' }

  test("with Cursor's own hooks wired too: one session and one instance per conversation, whichever hook comes first", async () => {
    const c = conversation()
    // the Claude Code hook of the same event may run before Cursor's own
    const first = await c.send('claude.SessionStart', {}, 'claude-code', claudeHeaders)
    expect(first.body.additional_context).toContain(`cursor-${c.id.slice(0, 8)}`)
    await c.send('sessionStart')
    const row = await sessionRow(c.id)
    expect(row).toMatchObject({ agent: 'cursor', name: `cursor-${c.id.slice(0, 8)}`, root: c.root })
    expect((await instancesNamed(row.name)).length).toBe(1)
    // a write of a held file: denied by both, in Cursor's fields (and Claude's, for a hook that reads those)
    const bob = await hold(c.project, ['src/app.ts'])
    const own = (await c.send('preToolUse.Write')).body
    const viaClaude = (await c.send('claude.PreToolUse.Write', {}, 'claude-code', claudeHeaders)).body
    expect(own.permission).toBe('deny')
    expect(viaClaude).toMatchObject({ permission: 'deny', hookSpecificOutput: { hookEventName: 'PreToolUse', permissionDecision: 'deny' } })
    expect(viaClaude.agent_message).toContain(bob.name)
    // a message is shown once in the conversation, by whichever hook asks first
    await message(row.name, 'hello')
    expect((await c.send('postToolUse')).body.additional_context).toContain('hello')
    expect((await c.send('postToolUse', { hook_event_name: 'PostToolUse' }, 'claude-code', claudeHeaders)).body).toEqual({})
    expect((await sessionRow(c.id)).instance_id).toBe(row.instance_id)
    expect((await instancesNamed(row.name)).length).toBe(1)
    // both session ends: the instance is gone, and the second end registers nothing again
    expect((await c.send('sessionEnd')).body).toEqual({})
    expect((await c.send('claude.SessionEnd', {}, 'claude-code', claudeHeaders)).body).toEqual({})
    expect(await instancesNamed(row.name)).toEqual([])
    expect((await sessionRow(c.id)).ended_at).toEqual(expect.any(String))
    // registered once (the first hook), resumed by the other's sessionStart, never registered again
    const audit = ((await call(s.api, 'GET', `/api/audit?action=hook.session`)).body as any[]).filter((a) => JSON.stringify(a).includes(c.id))
    expect(audit.filter((a) => JSON.stringify(a).includes('registered')).length).toBe(1)
    expect(audit.length).toBe(2)
  })

  test('with only the Claude Code hooks: the conversation is a Cursor session, parsed from Cursor payload', async () => {
    const c = conversation()
    await c.send('claude.SessionStart', {}, 'claude-code', claudeHeaders)
    const row = await sessionRow(c.id)
    expect(row).toMatchObject({ agent: 'cursor', root: c.root })
    const bob = await hold(c.project, ['src/app.ts'])
    const denied = (await c.send('claude.PreToolUse.Write', {}, 'claude-code', claudeHeaders)).body
    expect(denied.hookSpecificOutput.permissionDecisionReason).toContain(bob.name)
    // through the Codex hooks too (a repository wired for Codex that Cursor opens)
    expect((await c.send('claude.PreToolUse.Write', {}, 'codex', claudeHeaders)).body.permission).toBe('deny')
    expect((await instancesNamed(row.name)).length).toBe(1)
    await c.send('claude.SessionEnd', {}, 'claude-code', claudeHeaders)
    expect(await instancesNamed(row.name)).toEqual([])
  })

  test('headers the hook sent unexpanded ($MUSTER_AGENT) name nothing: the conversation keeps its default name and project', async () => {
    const c = conversation()
    await c.send('claude.SessionStart', {}, 'claude-code', { 'x-muster-agent': '$MUSTER_AGENT', 'x-muster-project': '${MUSTER_PROJECT}' })
    expect(await sessionRow(c.id)).toMatchObject({ name: `cursor-${c.id.slice(0, 8)}`, project: c.project })
  })

  test("Claude Code's own events on the same endpoint are still Claude Code's", async () => {
    const id = crypto.randomUUID()
    const r = await call(s.api, 'POST', '/api/hooks/claude-code', { session_id: id, hook_event_name: 'SessionStart', cwd: '/tmp/claude-own/x', source: 'startup', transcript_path: '/tmp/t.jsonl' })
    expect(r.status).toBe(200)
    expect(r.body.hookSpecificOutput.hookEventName).toBe('SessionStart')
    expect((await sessionRow(id)).agent).toBe('claude-code')
  })
})

describe('muster hook cursor and muster init cursor', () => {
  /** A scratch git repository (its real path: the git root as git prints it). */
  function repo(): string {
    const dir = realpathSync(workdir())
    expect(Bun.spawnSync(['git', 'init', '-q', dir]).exitCode).toBe(0)
    return dir
  }

  test("muster hook cursor: a sessionStart without cwd takes the git root of its workspace root; the shell's identity is handed over", async () => {
    const root = repo()
    const id = crypto.randomUUID()
    const stdin = JSON.stringify({ ...JSON.parse(JSON.stringify(fixtures.sessionStart).replaceAll('/work/repo', root)), conversation_id: id, session_id: id })
    const r = await runCli(['hook', 'cursor'], { cwd: '/', env: { SERVICE_SERVER: s.api, MUSTER_AGENT: 'carla' }, stdin })
    expect(r.code).toBe(0)
    expect(r.json.additional_context).toContain('"carla"')
    expect(await sessionRow(id)).toMatchObject({ agent: 'cursor', name: 'carla', root })
    // the CLI in the agent's shell acts as the session, from the identity file at the git root
    expect(JSON.parse(readFileSync(join(root, '.muster/agents/carla.json'), 'utf8')).instance_id).toBe((await sessionRow(id)).instance_id)
  })

  test('muster init cursor: hooks, MCP entry and rule merged into what is there, no token written, a second run changes nothing', async () => {
    const dir = repo()
    mkdirSync(join(dir, '.cursor'))
    writeFileSync(join(dir, '.cursor/hooks.json'), JSON.stringify({ version: 1, hooks: { afterFileEdit: [{ command: './format.sh' }], stop: [{ command: './notify.sh' }] } }))
    writeFileSync(join(dir, '.cursor/mcp.json'), JSON.stringify({ mcpServers: { other: { command: 'other-mcp' } } }))
    const env = { SERVICE_SERVER: s.api, SERVICE_TOKEN: 'secret-token-never-written' }
    const first = await runCli(['init', 'cursor', '--reserve', '30m'], { cwd: dir, env })
    expect(first.code).toBe(0)
    expect(first.json.files.map((f: any) => [f.path, f.action])).toEqual([
      ['.cursor/hooks.json', 'updated'],
      ['.cursor/mcp.json', 'updated'],
      ['.cursor/rules/muster.mdc', 'created'],
    ])
    const hooks = JSON.parse(readFileSync(join(dir, '.cursor/hooks.json'), 'utf8'))
    const ours = { command: `muster hook cursor --server ${s.api} --reserve 30m` }
    expect(hooks).toEqual({
      version: 1,
      hooks: { afterFileEdit: [{ command: './format.sh' }], stop: [{ command: './notify.sh' }, ours], sessionStart: [ours], preToolUse: [ours], postToolUse: [ours], sessionEnd: [ours] },
    })
    const mcp = JSON.parse(readFileSync(join(dir, '.cursor/mcp.json'), 'utf8'))
    expect(mcp.mcpServers).toEqual({ other: { command: 'other-mcp' }, muster: { url: `${s.api}/mcp`, headers: { Authorization: 'Bearer ${env:SERVICE_TOKEN}' } } })
    const rule = readFileSync(join(dir, '.cursor/rules/muster.mdc'), 'utf8')
    expect(rule).toStartWith('---\ndescription: ')
    expect(rule).toContain('alwaysApply: true')
    expect(rule).toContain('muster send <name>')
    for (const f of ['.cursor/hooks.json', '.cursor/mcp.json', '.cursor/rules/muster.mdc']) expect(readFileSync(join(dir, f), 'utf8')).not.toContain(env.SERVICE_TOKEN)
    const second = await runCli(['init', 'cursor', '--reserve', '30m'], { cwd: dir, env })
    expect(second.json.files.map((f: any) => f.action)).toEqual(['unchanged', 'unchanged', 'unchanged'])
    // another server or mode replaces our hooks, never adds a second set
    await runCli(['init', 'cursor'], { cwd: dir, env: { ...env, SERVICE_SERVER: 'http://other.test:1' } })
    const again = JSON.parse(readFileSync(join(dir, '.cursor/hooks.json'), 'utf8'))
    expect(again.hooks.stop).toEqual([{ command: './notify.sh' }, { command: 'muster hook cursor --server http://other.test:1' }])
    expect(existsSync(join(dir, '.cursor/rules/muster.mdc'))).toBe(true)
  })

  test('muster doctor checks the Cursor hooks: every event wired, pointing at the CLI server', async () => {
    const dir = repo()
    const env = { SERVICE_SERVER: s.api }
    await runCli(['init', 'cursor'], { cwd: dir, env })
    const line = async () => (await runCli(['doctor'], { cwd: dir, env })).stdout.split('\n').filter((l) => l.slice(5).startsWith('hooks cursor:'))
    expect(await line()).toEqual(['ok   hooks cursor: .cursor/hooks.json: sessionStart, preToolUse, postToolUse, stop, sessionEnd'])
    const config = JSON.parse(readFileSync(join(dir, '.cursor/hooks.json'), 'utf8'))
    delete config.hooks.preToolUse
    config.hooks.stop[0].command = 'muster hook cursor --server http://other.test:1'
    writeFileSync(join(dir, '.cursor/hooks.json'), JSON.stringify(config))
    expect(await line()).toEqual([
      'FAIL hooks cursor: .cursor/hooks.json lacks preToolUse -- fix: `muster init cursor` (merges, keeps your other hooks)',
      `warn hooks cursor: its hooks point at http://other.test:1 but the CLI at ${s.api} -- fix: \`muster init cursor\` with the server you mean (--server URL)`,
    ])
  })
})

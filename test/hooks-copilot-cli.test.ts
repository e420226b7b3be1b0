// GitHub Copilot CLI's hook events over real HTTP, payloads recorded from the real Copilot CLI
// 1.0.102 (test/fixtures/hooks/copilot-cli.json, README there): its own events name no event,
// so each carries the `hookName` that `muster hook copilot-cli <event>` adds. A session
// registers, a write (create, edit, bash) of a file another agent holds is denied in
// Copilot's shape, messages reach the model as additionalContext (agentStop: a block whose
// reason is the next prompt), sessionEnd releases; its Claude-shaped events (what it sends to
// the hooks of .claude/settings.json) act as the same session.
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { mkdirSync, readFileSync, realpathSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { call, register, startServer, type TestServer } from './helpers'
import { removeWorkdirs, runCli, workdir } from './cli-run'
import fixtures from './fixtures/hooks/copilot-cli.json'

let s: TestServer
beforeAll(async () => (s = await startServer()))
afterAll(async () => {
  await s.cleanup()
  removeWorkdirs()
})

let n = 0
/** A fresh Copilot session: its own id and root (/tmp/copilot-N/<project>). */
function session(headers: Record<string, string> = {}) {
  const id = crypto.randomUUID()
  const project = `cop${++n}${Math.random().toString(36).slice(2, 6)}`
  const root = `/tmp/copilot-${n}/${project}`
  const send = async (key: keyof typeof fixtures, extra: Record<string, unknown> = {}) => {
    const e = JSON.parse(JSON.stringify(fixtures[key]).replaceAll('/work/repo', root).replaceAll('f1d4ac38-0ab5-42ef-a3ea-1c65e32297f6', id))
    // What `muster hook copilot-cli <event>` adds: the event's name, from the hook's command line.
    const event = key.includes('claude-format') || 'hookName' in e ? e : { hookName: key.split('.')[0], ...e }
    const r = await call(s.api, 'POST', '/api/hooks/copilot-cli', { ...event, ...extra }, headers)
    expect(r.status).toBe(200)
    // never an allow on Muster's own: only a person's (or their rule's) decision on a permission request
    if (key !== 'permissionRequest') expect(r.text).not.toContain('"allow"')
    return r
  }
  return { id, project, root, send }
}

const sessionRow = async (id: string) => ((await call(s.api, 'GET', '/api/sessions')).body as any[]).find((x) => x.session_id === id)
const hold = async (project: string, paths: string[]) => {
  const bob = await register(s, { name: `bob-${project}` })
  const r = await call(s.api, 'POST', '/api/reservations', { project, paths, reason: 'refactoring the app', ttl_ms: 600_000 }, bob.h)
  expect(r.status).toBe(201)
  return bob
}

describe('Copilot CLI', () => {
  test('sessionStart registers the session as an instance and answers the briefing as additionalContext', async () => {
    const c = session()
    const r = await c.send('sessionStart')
    expect(Object.keys(r.body)).toEqual(['additionalContext'])
    expect(r.body.additionalContext).toContain(`copilot-cli-${c.id.slice(0, 8)}`)
    expect(r.headers.get('x-muster-instance-token')).toMatch(/^[0-9a-f]{64}$/)
    expect(r.text).not.toContain(r.headers.get('x-muster-instance-token')!)
    const row = await sessionRow(c.id)
    expect(row).toMatchObject({ agent: 'copilot-cli', name: `copilot-cli-${c.id.slice(0, 8)}`, root: c.root, project: c.project, ended_at: null })
    expect((await call(s.api, 'GET', `/api/instances/${row.instance_id}`)).body.status).toBe('active')
  })

  test('a create, an edit or a bash write of a held file is denied in Copilot shape, naming holder and reason; a read is not', async () => {
    const c = session()
    await c.send('sessionStart')
    const bob = await hold(c.project, ['src/app.ts', 'out.txt'])
    for (const key of ['preToolUse.create', 'preToolUse.edit', 'preToolUse.bash', 'preToolUse.bash-string-args'] as const) {
      const r = await c.send(key)
      expect(Object.keys(r.body).sort()).toEqual(['permissionDecision', 'permissionDecisionReason'])
      expect(r.body.permissionDecision).toBe('deny')
      expect(r.body.permissionDecisionReason).toContain(bob.name)
      expect(r.body.permissionDecisionReason).toContain('refactoring the app')
      expect(r.body.permissionDecisionReason).toContain(`muster send ${bob.name}`)
    }
    expect((await c.send('preToolUse.view')).body).toEqual({})
    // a file nobody holds: no opinion (never allow)
    expect((await c.send('preToolUse.edit', { toolArgs: { path: `${c.root}/README.md`, old_str: 'a', new_str: 'b' } })).body).toEqual({})
  })

  test('messages reach the model once: userPromptSubmitted and postToolUse as additionalContext, agentStop as a block', async () => {
    const c = session()
    await c.send('sessionStart')
    const name = (await sessionRow(c.id)).name
    const send = async (subject: string) => expect((await call(s.api, 'POST', '/api/messages', { to: [name], subject, body: `about ${subject}` })).status).toBe(201)
    await send('first')
    const prompt = (await c.send('userPromptSubmitted')).body
    expect(Object.keys(prompt)).toEqual(['additionalContext'])
    expect(prompt.additionalContext).toContain('first')
    expect((await c.send('userPromptSubmitted')).body).toEqual({})
    await send('second')
    expect((await c.send('postToolUse')).body.additionalContext).toContain('second')
    await send('third')
    const stop = (await c.send('agentStop')).body
    expect(stop.decision).toBe('block')
    expect(stop.reason).toContain('third')
    expect(stop.reason).toContain('not from the user')
    expect((await c.send('agentStop')).body).toEqual({})
    await send('fourth')
    // already continuing because of a stop answer: never block twice
    expect((await c.send('agentStop', { stop_hook_active: true })).body).toEqual({})
  })

  test('sessionEnd deregisters the instance and releases what it held', async () => {
    const c = session({ 'x-muster-reserve': '10m' })
    await c.send('sessionStart')
    expect((await c.send('preToolUse.edit')).body).toEqual({})
    const row = await sessionRow(c.id)
    const held = (await call(s.api, 'GET', `/api/reservations?instance_id=${row.instance_id}`)).body as any[]
    expect(held.map((r) => r.paths ?? r.pattern).flat()).toContain('src/app.ts')
    expect((await c.send('sessionEnd')).body).toEqual({})
    expect((await call(s.api, 'GET', `/api/instances/${row.instance_id}`)).status).toBe(404)
    expect((await call(s.api, 'GET', `/api/reservations?instance_id=${row.instance_id}`)).body).toEqual([])
    expect((await sessionRow(c.id)).ended_at).toEqual(expect.any(String))
  })

  test("its Claude-shaped events (.claude/settings.json hooks) act as the same session, answered in Claude's shape", async () => {
    const c = session()
    await c.send('sessionStart')
    const row = await sessionRow(c.id)
    await c.send('SessionStart.claude-format')
    const bob = await hold(c.project, ['out.txt'])
    const r = await c.send('PreToolUse.claude-format')
    expect(r.body.hookSpecificOutput).toMatchObject({ hookEventName: 'PreToolUse', permissionDecision: 'deny' })
    expect(r.body.hookSpecificOutput.permissionDecisionReason).toContain(bob.name)
    // Copilot's edits reach Claude-shaped hooks as Edit/Write with its own `path`: checked on the Claude Code endpoint too
    for (const key of ['PreToolUse.Edit.claude-format', 'PreToolUse.Write.claude-format'] as const) {
      const e = JSON.parse(JSON.stringify(fixtures[key]).replaceAll('/work/repo', c.root).replaceAll('f1d4ac38-0ab5-42ef-a3ea-1c65e32297f6', c.id).replaceAll('src/app.ts', 'out.txt'))
      const viaClaude = await call(s.api, 'POST', '/api/hooks/claude-code', e)
      expect(viaClaude.body.hookSpecificOutput).toMatchObject({ permissionDecision: 'deny', permissionDecisionReason: expect.stringContaining(bob.name) })
    }
    // one session, one instance
    expect(await sessionRow(c.id)).toMatchObject({ instance_id: row.instance_id, agent: 'copilot-cli' })
    const mine = ((await call(s.api, 'GET', '/api/instances')).body as any[]).filter((i) => i.name === row.name)
    expect(mine.length).toBe(1)
  })

  test('permissionRequest (wired by hand) waits for a person in Muster: allow and deny in Copilot shape, {} when the wait runs out', async () => {
    const c = session()
    await c.send('sessionStart')
    const approvals = async () => ((await call(s.api, 'GET', '/api/approvals?status=pending')).body as any[]).filter((a) => a.session_id === c.id)
    const decideNext = async (behavior: string, message?: string) => {
      let pending: any[] = []
      for (let i = 0; i < 200 && !pending.length; i++) {
        pending = await approvals()
        if (!pending.length) await Bun.sleep(25)
      }
      expect(pending).toMatchObject([{ kind: 'permission', agent: 'copilot-cli', tool: 'bash', input: { command: 'echo hi > out.txt' } }])
      expect((await call(s.api, 'POST', `/api/approvals/${pending[0].id}/decision`, { behavior, message })).status).toBe(200)
    }
    const [allowed] = await Promise.all([c.send('permissionRequest'), decideNext('allow')])
    expect(allowed.body).toEqual({ behavior: 'allow' })
    const [denied] = await Promise.all([c.send('permissionRequest'), decideNext('deny', 'not on a Friday')])
    expect(denied.body).toEqual({ behavior: 'deny', message: expect.stringContaining('not on a Friday') })
    const expired = await call(s.api, 'POST', '/api/hooks/copilot-cli', JSON.parse(JSON.stringify(fixtures.permissionRequest).replaceAll('f1d4ac38-0ab5-42ef-a3ea-1c65e32297f6', c.id)), { 'x-muster-approval-wait': '1s' })
    expect([expired.status, expired.body]).toEqual([200, {}])
  })

  test('an event without its name or session id is a 400 naming the field, registering nothing', async () => {
    const before = (await call(s.api, 'GET', '/api/sessions')).body.length
    const { hookName, ...unnamed } = { hookName: 'preToolUse', ...fixtures['preToolUse.bash'] }
    void hookName
    for (const [body, field] of [
      [unnamed, 'hookName'],
      [{ hookName: 'preToolUse', cwd: '/tmp', toolName: 'bash', toolArgs: {} }, 'sessionId'],
    ] as const) {
      const r = await call(s.api, 'POST', '/api/hooks/copilot-cli', body)
      expect(r.status).toBe(400)
      expect(r.body.error).toContain(field)
    }
    expect((await call(s.api, 'GET', '/api/sessions')).body.length).toBe(before)
  })
})

describe('muster hook copilot-cli and muster init copilot-cli', () => {
  function repo(): string {
    const dir = realpathSync(workdir())
    expect(Bun.spawnSync(['git', 'init', '-q', dir]).exitCode).toBe(0)
    return dir
  }

  test('muster hook copilot-cli <event>: the event named from the command line, the answer printed as Copilot reads it', async () => {
    const root = repo()
    const id = crypto.randomUUID()
    const payload = (key: keyof typeof fixtures) => JSON.stringify(fixtures[key]).replaceAll('/work/repo', root).replaceAll('f1d4ac38-0ab5-42ef-a3ea-1c65e32297f6', id)
    const env = { SERVICE_SERVER: s.api, MUSTER_AGENT: 'cody', MUSTER_PROJECT: 'copshop' }
    const start = await runCli(['hook', 'copilot-cli', 'sessionStart'], { cwd: root, env, stdin: payload('sessionStart') })
    expect(start.code).toBe(0)
    expect(start.json.additionalContext).toContain('"cody"')
    expect(await sessionRow(id)).toMatchObject({ agent: 'copilot-cli', name: 'cody', project: 'copshop', root })
    const bob = await hold('copshop', ['src/app.ts'])
    const denied = await runCli(['hook', 'copilot-cli', 'preToolUse'], { cwd: root, env, stdin: payload('preToolUse.edit') })
    expect(denied.code).toBe(0)
    expect(denied.json).toEqual({ permissionDecision: 'deny', permissionDecisionReason: expect.stringContaining(bob.name) })
    // without the event's name the server cannot tell the event: 400, and the hook fails open
    const unnamed = await runCli(['hook', 'copilot-cli'], { cwd: root, env, stdin: payload('preToolUse.edit') })
    expect(unnamed.code).toBe(0)
    expect(unnamed.stdout).toBe('')
    expect(unnamed.stderr).toContain('hookName')
    const end = await runCli(['hook', 'copilot-cli', 'sessionEnd'], { cwd: root, env, stdin: payload('sessionEnd') })
    expect(end).toMatchObject({ code: 0, json: {} })
    expect((await sessionRow(id)).ended_at).toEqual(expect.any(String))
  })

  test('an event without a session id (Copilot before 1.0.21): the Copilot process running the hook stands in for it', async () => {
    const root = repo()
    const env = { SERVICE_SERVER: s.api, MUSTER_PROJECT: `old${Date.now()}` }
    const old = (key: keyof typeof fixtures) => {
      const { sessionId, ...rest } = JSON.parse(JSON.stringify(fixtures[key]).replaceAll('/work/repo', root))
      void sessionId
      return JSON.stringify(rest)
    }
    // Copilot runs a hook through its shell: the first ancestor that is not a shell is Copilot (here, this test)
    const start = await runCli(['hook', 'copilot-cli', 'sessionStart'], { cwd: root, env, stdin: old('sessionStart') })
    expect(start.code).toBe(0)
    const name = /you are "([^"]+)"/.exec(start.json.additionalContext)?.[1]
    const row = ((await call(s.api, 'GET', '/api/sessions')).body as any[]).find((x) => x.name === name)
    expect(row.session_id).toMatch(/^[0-9a-f]{32}$/)
    expect(name).toBe(`copilot-cli-${row.session_id.slice(0, 8)}`)
    const bob = await hold(env.MUSTER_PROJECT, ['src/app.ts'])
    const denied = await runCli(['hook', 'copilot-cli', 'preToolUse'], { cwd: root, env, stdin: old('preToolUse.edit') })
    expect(denied.json.permissionDecisionReason).toContain(bob.name)
    // the same session: one instance
    expect(((await call(s.api, 'GET', '/api/sessions')).body as any[]).filter((x) => x.session_id === row.session_id)).toHaveLength(1)
    expect(((await call(s.api, 'GET', '/api/instances')).body as any[]).filter((i) => i.name === name)).toHaveLength(1)
    await runCli(['hook', 'copilot-cli', 'sessionEnd'], { cwd: root, env, stdin: old('sessionEnd') })
    expect(((await call(s.api, 'GET', '/api/instances')).body as any[]).filter((i) => i.name === name)).toHaveLength(0)
  })

  test('muster init copilot-cli: our hooks merged into .github/hooks/muster.json (others kept), no token written, a second run changes nothing', async () => {
    const dir = repo()
    mkdirSync(join(dir, '.github/hooks'), { recursive: true })
    const mine = { type: 'command', bash: './audit.sh', timeoutSec: 5 }
    writeFileSync(join(dir, '.github/hooks/muster.json'), JSON.stringify({ version: 1, hooks: { preToolUse: [mine], errorOccurred: [mine] } }))
    writeFileSync(join(dir, '.github/copilot-instructions.md'), '# House rules\n\nUse tabs.\n')
    const env = { SERVICE_SERVER: s.api, SERVICE_TOKEN: 'secret-token-never-written' }
    const first = await runCli(['init', 'copilot-cli', '--reserve', '30m'], { cwd: dir, env })
    expect(first.code).toBe(0)
    expect(first.json.files.map((f: any) => [f.path, f.action])).toEqual([
      ['.github/hooks/muster.json', 'updated'],
      ['.github/copilot-instructions.md', 'updated'],
    ])
    const config = JSON.parse(readFileSync(join(dir, '.github/hooks/muster.json'), 'utf8'))
    const ours = (event: string) => {
      const command = `muster hook copilot-cli ${event} --server ${s.api} --reserve 30m`
      return { type: 'command', bash: command, powershell: command, timeoutSec: 10 }
    }
    expect(config.hooks.preToolUse).toEqual([mine, ours('preToolUse')])
    expect(config.hooks.errorOccurred).toEqual([mine])
    for (const event of ['sessionStart', 'userPromptSubmitted', 'postToolUse', 'agentStop', 'sessionEnd']) expect(config.hooks[event]).toEqual([ours(event)])
    const guide = readFileSync(join(dir, '.github/copilot-instructions.md'), 'utf8')
    expect(guide).toStartWith('# House rules\n\nUse tabs.\n\n<!-- muster:begin -->')
    for (const f of ['.github/hooks/muster.json', '.github/copilot-instructions.md']) expect(readFileSync(join(dir, f), 'utf8')).not.toContain(env.SERVICE_TOKEN)
    const second = await runCli(['init', 'copilot-cli', '--reserve', '30m'], { cwd: dir, env })
    expect(second.json.files.map((f: any) => f.action)).toEqual(['unchanged', 'unchanged'])
    // muster doctor sees every event wired
    const doctor = await runCli(['doctor'], { cwd: dir, env })
    expect(doctor.stdout.split('\n').filter((l) => l.slice(5).startsWith('hooks copilot-cli:'))).toEqual([
      'ok   hooks copilot-cli: .github/hooks/muster.json: preToolUse, sessionStart, userPromptSubmitted, postToolUse, agentStop, sessionEnd',
    ])
  })
})

// OpenCode's adapter (services/hooks/agents/opencode.ts) over real HTTP: the events the
// plugin `muster init opencode` writes sends (cli/init/opencode-plugin.ts), with tool
// inputs in OpenCode 1.18.33's own shapes (its write, edit, apply_patch and bash tools:
// filePath, patchText, command and workdir), answered in the plugin's shapes: {} (no
// opinion), {decision: "deny", reason}, {context}. The real OpenCode runs them in
// test/agents/opencode.test.ts.
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { join } from 'node:path'
import { mkdirSync } from 'node:fs'
import { call, register, startServer, tempDir, type TestServer } from './helpers'

let s: TestServer
beforeAll(async () => (s = await startServer()))
afterAll(() => s.cleanup())

let n = 0
/** A fresh OpenCode session with its own id and root (/tmp/oc-hooks-N/<project>). */
function session(headers: Record<string, string> = {}) {
  const id = `ses_${(++n).toString().padStart(4, '0')}${crypto.randomUUID().replaceAll('-', '').slice(0, 20)}`
  const project = `ocproj${n}${Math.random().toString(36).slice(2, 6)}`
  const root = `/tmp/oc-hooks-${n}/${project}`
  const send = async (hook_event_name: string, extra: Record<string, unknown> = {}) => {
    const r = await call(s.api, 'POST', '/api/hooks/opencode', { hook_event_name, session_id: id, cwd: root, ...extra }, headers)
    expect(r.status).toBe(200)
    expect(r.text).not.toContain('"allow"')
    return { body: r.body, headers: r.headers }
  }
  const tool = (tool_name: string, tool_input: Record<string, unknown>) => send('tool.execute.before', { tool_name, tool_input, call_id: `toolu_${n}` })
  return { id, project, root, send, tool }
}

const sessionRow = async (id: string) => ((await call(s.api, 'GET', '/api/sessions')).body as any[]).find((x) => x.session_id === id)
const reservationsOf = async (instanceId: string) => (await call(s.api, 'GET', `/api/reservations?instance_id=${instanceId}`)).body as any[]
async function holder(project: string, paths: string[], name = `holder-${++n}`) {
  const a = await register(s, name)
  const r = await call(s.api, 'POST', '/api/reservations', { project, paths, reason: 'auth rewrite' }, a.h)
  expect(r.status).toBe(201)
  return a
}

describe('endpoint', () => {
  test('an event without session_id or hook_event_name is 400, registering nothing', async () => {
    const before = (await call(s.api, 'GET', '/api/sessions')).body.length
    for (const body of [{ hook_event_name: 'session.created' }, { session_id: 'ses_x' }, { session_id: '', hook_event_name: 'chat.message' }, { session_id: 'ses_x', hook_event_name: 7 }]) {
      const r = await call(s.api, 'POST', '/api/hooks/opencode', body)
      expect(r.status).toBe(400)
      expect(r.body.code).toBeDefined()
      expect(r.body.error).toMatch(/session_id|hook_event_name/)
    }
    expect((await call(s.api, 'GET', '/api/sessions')).body.length).toBe(before)
  })

  test('session.created registers the session as an instance and answers the briefing as context', async () => {
    const o = session({ 'x-muster-agent': 'oc-brief' })
    await holder(o.project, ['src/billing/**'], 'oc-brief-holder')
    const { body, headers } = await o.send('session.created', { source: 'startup' })
    expect(Object.keys(body)).toEqual(['context'])
    expect(body.context).toContain('you are "oc-brief"')
    expect(body.context).toContain('src/billing/**: oc-brief-holder (active), exclusive')
    expect(headers.get('x-muster-instance-token')).toMatch(/^[0-9a-f]{64}$/)
    expect(body.context).not.toContain(headers.get('x-muster-instance-token')!)
    expect(await sessionRow(o.id)).toMatchObject({ agent: 'opencode', name: 'oc-brief', root: o.root, project: o.project, ended_at: null })
  })

  test('an event this adapter does not name (session.compacted) answers {} and still registers the session', async () => {
    const o = session()
    expect((await o.send('session.compacted')).body).toEqual({})
    expect(await sessionRow(o.id)).toMatchObject({ agent: 'opencode', name: `opencode-${o.id.slice(0, 8)}` })
  })
})

describe('tool.execute.before', () => {
  test("write, edit and apply_patch of a held file are denied in the plugin's shape, naming holder, reason and what to do", async () => {
    const o = session({ 'x-muster-agent': 'oc-deny' })
    const h = await holder(o.project, ['src/auth/**'], 'oc-deny-holder')
    const file = join(o.root, 'src/auth/login.ts')
    const answers = [
      (await o.tool('write', { filePath: file, content: 'x' })).body,
      (await o.tool('edit', { filePath: file, oldString: 'a', newString: 'b' })).body,
      (await o.tool('apply_patch', { patchText: '*** Begin Patch\n*** Update File: src/auth/login.ts\n@@\n-a\n+b\n*** End Patch' })).body,
    ]
    for (const a of answers) {
      expect(Object.keys(a).sort()).toEqual(['decision', 'reason'])
      expect(a.decision).toBe('deny')
      expect(a.reason).toContain('src/auth/login.ts')
      expect(a.reason).toContain('oc-deny-holder (active)')
      expect(a.reason).toContain('auth rewrite')
      expect(a.reason).toContain('muster send oc-deny-holder')
    }
    const audit = (await call(s.api, 'GET', `/api/audit?action=hook.deny&actor=${(await sessionRow(o.id)).instance_id}`)).body as any[]
    expect(audit).toHaveLength(3)
    expect(h.id).not.toBe((await sessionRow(o.id)).instance_id)
  })

  test('a bash command that writes a held file is denied, relative paths taken from its workdir; a read-only one is not', async () => {
    const o = session()
    await holder(o.project, ['src/auth/**'])
    expect((await o.tool('bash', { command: "printf 'x' >> src/auth/login.ts", description: 'append' })).body.decision).toBe('deny')
    expect((await o.tool('bash', { command: 'sed -i s/a/b/ login.ts', workdir: join(o.root, 'src/auth'), description: 'edit' })).body.decision).toBe('deny')
    expect((await o.tool('bash', { command: 'rm login.ts', workdir: 'src/auth', description: 'remove' })).body.decision).toBe('deny')
    expect((await o.tool('bash', { command: 'cat src/auth/login.ts', description: 'read' })).body).toEqual({})
    expect((await o.tool('bash', { command: "printf 'x' > src/other.ts", description: 'write elsewhere' })).body).toEqual({})
  })

  test('tools that write nothing, and files outside the root, are not checked', async () => {
    const o = session()
    await holder(o.project, ['**'])
    for (const [name, input] of [
      ['read', { filePath: join(o.root, 'src/a.ts') }],
      ['grep', { pattern: 'x' }],
      ['glob', { pattern: '**/*.ts' }],
      ['write', { filePath: '/elsewhere/a.ts', content: 'x' }],
    ] as const)
      expect((await o.tool(name, input)).body).toEqual({})
  })

  test('in edit-reserve mode a write reserves its file for the session, and the session end releases it', async () => {
    const o = session({ 'x-muster-reserve': '10m', 'x-muster-agent': 'oc-reserve' })
    expect((await o.tool('write', { filePath: join(o.root, 'src/app.ts'), content: 'x' })).body).toEqual({})
    const row = await sessionRow(o.id)
    expect((await reservationsOf(row.instance_id)).map((r) => [r.paths, r.exclusive, r.reason])).toEqual([[['src/app.ts'], true, 'edit']])
    // Another OpenCode session is denied the file.
    const other = session()
    const r = await call(s.api, 'POST', '/api/hooks/opencode', { hook_event_name: 'tool.execute.before', session_id: other.id, cwd: o.root, tool_name: 'edit', tool_input: { filePath: join(o.root, 'src/app.ts'), oldString: 'x', newString: 'y' } })
    expect(r.body.decision).toBe('deny')
    expect(r.body.reason).toContain('oc-reserve')
    const { headers } = await o.send('dispose', { reason: 'exit' })
    expect(headers.get('x-muster-held')).toBe('false')
    expect((await sessionRow(o.id)).ended_at).not.toBeNull()
    expect(await reservationsOf(row.instance_id)).toEqual([])
  })
})

describe('messages', () => {
  const message = (to: string, subject: string, body = 'details') => call(s.api, 'POST', '/api/messages', { to: [to], subject, body })

  test('chat.message and tool.execute.after answer new messages once as context', async () => {
    const o = session({ 'x-muster-agent': 'oc-msg' })
    await o.send('session.created')
    await message('oc-msg', 'first news', 'the schema moved')
    const prompt = await o.send('chat.message', { prompt: 'fix the totals' })
    expect(prompt.body.context).toContain('first news')
    expect(prompt.body.context).toContain('the schema moved')
    expect((await o.send('chat.message', { prompt: 'again' })).body).toEqual({})
    await message('oc-msg', 'second news')
    const after = await o.send('tool.execute.after', { tool_name: 'bash', tool_input: { command: 'ls' }, call_id: 'toolu_1' })
    expect(after.body).toEqual({ context: expect.stringContaining('second news') })
    expect((await o.send('tool.execute.after', { tool_name: 'bash', tool_input: { command: 'ls' }, call_id: 'toolu_2' })).body).toEqual({})
  })

  test('session.idle answers a new message as context (one more turn), but never when the turn was already ours', async () => {
    const o = session({ 'x-muster-agent': 'oc-idle' })
    await o.send('session.created')
    await message('oc-idle', 'before you stop')
    expect((await o.send('session.idle', { stop_hook_active: true })).body).toEqual({})
    const idle = await o.send('session.idle', { stop_hook_active: false })
    expect(idle.body.context).toContain('before you stop')
    expect((await o.send('session.idle', { stop_hook_active: false })).body).toEqual({})
  })
})

describe('session end', () => {
  test('session.deleted deregisters the instance and releases what it held', async () => {
    const o = session({ 'x-muster-agent': 'oc-del' })
    const started = await o.send('session.created')
    const instance = started.headers.get('x-muster-instance-id')!
    const token = started.headers.get('x-muster-instance-token')!
    const r = await call(s.api, 'POST', '/api/reservations', { project: o.project, paths: ['docs/**'], reason: 'docs' }, { 'x-instance-token': token })
    expect(r.status).toBe(201)
    await o.send('session.deleted')
    expect((await sessionRow(o.id)).ended_at).not.toBeNull()
    expect(await reservationsOf(instance)).toEqual([])
    expect(((await call(s.api, 'GET', '/api/instances')).body as any[]).some((i) => i.id === instance)).toBe(false)
  })
})

/** Runs this checkout's CLI in `cwd` (stdin: `input`), with nothing of this environment but PATH. */
async function cli(args: string[], o: { cwd?: string; input?: string; env?: Record<string, string> } = {}) {
  const proc = Bun.spawn([process.execPath, join(import.meta.dir, '..', 'cli.ts'), ...args], {
    cwd: o.cwd,
    stdin: new Blob([o.input ?? '']),
    stdout: 'pipe',
    stderr: 'pipe',
    env: { PATH: process.env.PATH ?? '/usr/bin:/bin', HOME: o.cwd ?? '/tmp', ...o.env },
  })
  const [code, out, err] = await Promise.all([proc.exited, new Response(proc.stdout).text(), new Response(proc.stderr).text()])
  return { code, out, err }
}

describe('muster hook opencode', () => {
  /** `muster hook opencode` with `event` on stdin, as the plugin runs it. */
  async function hook(event: Record<string, unknown>, env: Record<string, string> = {}) {
    const r = await cli(['hook', 'opencode', '--server', s.api], { input: JSON.stringify(event), env })
    return { code: r.code, answer: r.out.trim() ? JSON.parse(r.out) : null, err: r.err }
  }

  test("its answer says which instance the session acts as (for the plugin's shell), never the token", async () => {
    const id = `ses_cli${crypto.randomUUID().replaceAll('-', '').slice(0, 16)}`
    const started = await hook({ hook_event_name: 'session.created', session_id: id, cwd: '/tmp' }, { MUSTER_AGENT: 'oc-cli' })
    expect(started.code, started.err).toBe(0)
    expect(started.answer.muster).toEqual({ agent: 'oc-cli', session: id })
    expect(started.answer.context).toContain('you are "oc-cli"')
    expect(JSON.stringify(started.answer)).not.toMatch(/[0-9a-f]{64}/)
    const later = await hook({ hook_event_name: 'tool.execute.before', session_id: id, cwd: '/tmp', tool_name: 'read', tool_input: { filePath: '/tmp/x' } }, { MUSTER_AGENT: 'oc-cli' })
    expect(later.answer).toEqual({})
  })
})

describe('muster doctor', () => {
  test("finds OpenCode's plugin and the server it points at, and says when it is missing", async () => {
    const repo = tempDir('muster-oc-doctor-')
    Bun.spawnSync(['git', 'init', '-q'], { cwd: repo })
    const doctor = async () => (await cli(['doctor', '--server', s.api], { cwd: repo })).out.split('\n').filter((l) => l.includes('hooks opencode'))
    mkdirSync(join(repo, '.opencode'))
    expect(await doctor()).toEqual([expect.stringMatching(/^warn .*\.opencode\/plugin\/muster\.ts is missing.*muster init opencode/)])
    expect((await cli(['init', 'opencode', '--server', s.api], { cwd: repo })).code).toBe(0)
    expect(await doctor()).toEqual([expect.stringMatching(/^ok .*muster hook opencode/)])
    expect((await cli(['init', 'opencode', '--server', 'http://127.0.0.1:9'], { cwd: repo })).code).toBe(0)
    expect(await doctor()).toEqual([expect.stringMatching(/^ok /), expect.stringMatching(/^warn .*points at http:\/\/127\.0\.0\.1:9 but the CLI at/)])
  })
})

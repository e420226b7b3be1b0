// The session's identity reaches its shell (agents.md, "One agent, one identity"):
// `muster hook` at SessionStart writes .muster/agents/<name>.json and appends to
// CLAUDE_ENV_FILE, never printing the token; the CLI then acts as that session's
// instance, in the order MUSTER_INSTANCE_TOKEN, the file MUSTER_AGENT names, the only
// file, the old identity.json; several files and nothing to choose is exit 2.
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { existsSync, mkdirSync, readFileSync, statSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { call, startServer, type TestServer } from './helpers'
import { gitWorkdir, removeWorkdirs, runCli, workdir } from './cli-run'
import claude from './fixtures/hooks/claude-code.json'

let s: TestServer
beforeAll(async () => (s = await startServer()), 30_000)
afterAll(() => Promise.all([s.cleanup(), removeWorkdirs()]))

const repo = gitWorkdir
const git = (cwd: string, ...args: string[]) => Bun.spawnSync(['git', ...args], { cwd, stdout: 'pipe' }).stdout.toString()
const event = (name: keyof typeof claude, root: string, session: string, extra: Record<string, unknown> = {}) =>
  JSON.stringify({ ...JSON.parse(JSON.stringify(claude[name]).replaceAll('/work/repo', root)), session_id: session, ...extra })
/** The variables a CLAUDE_ENV_FILE line by line `export NAME='value'` sets. */
function sourced(file: string): Record<string, string> {
  const vars: Record<string, string> = {}
  for (const line of readFileSync(file, 'utf8').split('\n')) {
    const m = /^export ([A-Z_]+)=(?:'(.*)'|(.*))$/.exec(line)
    if (m) vars[m[1]] = m[2] !== undefined ? m[2].replaceAll(`'\\''`, "'") : m[3]
  }
  return vars
}
const sessionOf = async (id: string) => ((await call(s.api, 'GET', '/api/sessions')).body as any[]).find((x) => x.session_id === id)

/** A Claude Code session of agent `name` started through `muster hook` in `root`. */
async function start(root: string, name: string, envFile?: string) {
  const session = crypto.randomUUID()
  const env: Record<string, string> = { SERVICE_SERVER: s.api, MUSTER_AGENT: name, MUSTER_PROJECT: 'shop', ...(envFile ? { CLAUDE_ENV_FILE: envFile } : {}) }
  const r = await runCli(['hook', 'claude-code'], { cwd: root, env, stdin: event('SessionStart', root, session) })
  expect(r.code).toBe(0)
  const row = await sessionOf(session)
  return { session, env, answer: r, instanceId: row.instance_id as string }
}

describe('SessionStart hands the session to the shell', () => {
  test('agents file (0600, ignored by git) and CLAUDE_ENV_FILE; no token in what the model reads', async () => {
    const root = repo()
    const envFile = join(workdir(), 'claude-env.sh')
    writeFileSync(envFile, 'export EARLIER=1\n')
    const ada = await start(root, 'ada', envFile)
    const file = join(root, '.muster', 'agents', 'ada.json')
    const saved = JSON.parse(readFileSync(file, 'utf8'))
    const token: string = saved.instance_token
    expect(token).toMatch(/^[0-9a-f]{64}$/)
    expect(saved).toEqual({ name: 'ada', server: s.api, instance_id: ada.instanceId, instance_token: token })
    expect(statSync(file).mode & 0o777).toBe(0o600)
    expect(git(root, 'status', '--porcelain', '--untracked-files=all')).toBe('')
expect(ada.answer.stdout).not.toContain(token)
    expect(ada.answer.stderr).toBe('')
expect(ada.answer.json.hookSpecificOutput.additionalContext).toContain('CLI in your shell already acts as this session')
    const vars = sourced(envFile)
    expect(vars).toEqual({ EARLIER: '1', MUSTER_INSTANCE_TOKEN: token, MUSTER_AGENT: 'ada', MUSTER_SESSION: ada.session })
    expect(readFileSync(envFile, 'utf8').startsWith('export EARLIER=1\n')).toBe(true)
  })

  test("the CLI acts as the session: its reservation never denies the session's own edit; register <own name> is the same id", async () => {
    const root = repo()
    const envFile = join(workdir(), 'claude-env.sh')
    const ada = await start(root, 'ada', envFile)
    const shell: Record<string, string> = { SERVICE_SERVER: s.api, ...sourced(envFile) }
    const sub = join(root, 'src')
    mkdirSync(sub)
    const reserved = await runCli(['reserve', 'shop', 'src/billing/**', '--ttl', '10m'], { cwd: sub, env: shell })
    expect(reserved.code).toBe(0)
    expect(reserved.json.instance_id).toBe(ada.instanceId)
    const edit = await runCli(['hook', 'claude-code'], {
      cwd: root,
      env: ada.env,
      stdin: event('PreToolUse.Write', root, ada.session, { tool_input: { file_path: join(root, 'src/billing/a.ts'), content: 'x' } }),
    })
    expect(edit.json).toEqual({})

    const again = await runCli(['register', 'ada'], { cwd: root, env: shell })
    expect(again.code).toBe(0)
    expect(again.json).toMatchObject({ id: ada.instanceId, resumed: true })
    // the session's token is the shell's already: never printed where the model reads it
    expect(again.json.token).toBeUndefined()
    expect(again.stdout).not.toContain(shell.MUSTER_INSTANCE_TOKEN)
    expect((await call(s.api, 'GET', '/api/instances?name=ada')).body.filter((i: any) => i.workspace === root).length).toBe(1)
  })

  test('two agents in one checkout keep their own identity and message each other by name', async () => {
    const root = repo()
    const ada = await start(root, 'ada')
    const bob = await start(root, 'bob')
    const asBob = { SERVICE_SERVER: s.api, MUSTER_AGENT: 'bob' }
    const asAda = { SERVICE_SERVER: s.api, MUSTER_AGENT: 'ada' }
    const sent = await runCli(['send', 'ada', '--subject', 'can I have src/billing?', '--body', 'please'], { cwd: root, env: asBob })
    expect(sent.code).toBe(0)
    expect(sent.json).toMatchObject({ from: 'bob', from_instance_id: bob.instanceId })
    const inbox = await runCli(['inbox'], { cwd: root, env: asAda })
    expect(inbox.code).toBe(0)
    expect(inbox.json.messages.map((m: any) => [m.from, m.subject])).toEqual([['bob', 'can I have src/billing?']])
    expect(ada.instanceId).not.toBe(bob.instanceId)

    // Nothing chooses between the two: a command that needs an instance exits 2 naming them.
    const lost = await runCli(['inbox'], { cwd: root, env: { SERVICE_SERVER: s.api } })
    expect(lost.code).toBe(2)
    expect(lost.stderr).toContain('ada, bob')
    expect(lost.stderr).toContain('MUSTER_AGENT')
    expect(lost.stdout).toBe('')
    const heartbeat = await runCli(['heartbeat'], { cwd: root, env: { SERVICE_SERVER: s.api } })
    expect(heartbeat.code).toBe(2)
    // Nor is a message sent "from human" by an agent that merely did not say who it is.
    const unsigned = await runCli(['send', 'bob', '--subject', 'who am I?'], { cwd: root, env: { SERVICE_SERVER: s.api } })
    expect([unsigned.code, unsigned.stdout]).toEqual([2, ''])
    expect(unsigned.stderr).toContain('MUSTER_AGENT')
    // A command that needs none still runs.
    expect((await runCli(['instances', 'list'], { cwd: root, env: { SERVICE_SERVER: s.api } })).code).toBe(0)
  })

  test('SessionEnd for good removes the agents file; /clear keeps it for the session that takes over', async () => {
    const root = repo()
    const ada = await start(root, 'ada')
    const file = join(root, '.muster', 'agents', 'ada.json')
    const end = (session: string, reason: string) =>
      runCli(['hook', 'claude-code'], { cwd: root, env: ada.env, stdin: event('SessionEnd', root, session, { reason }) })
    expect((await end(ada.session, 'clear')).code).toBe(0)
    expect(existsSync(file)).toBe(true)
    const next = await start(root, 'ada')
    expect(next.instanceId).toBe(ada.instanceId)
    expect(JSON.parse(readFileSync(file, 'utf8')).instance_id).toBe(ada.instanceId)
    expect((await end(next.session, 'logout')).code).toBe(0)
    expect(existsSync(file)).toBe(false)
    expect((await call(s.api, 'GET', `/api/instances/${ada.instanceId}`)).status).toBe(404)
  })
})

describe('the identity order', () => {
  test('MUSTER_INSTANCE_TOKEN, then the file MUSTER_AGENT names, then the only file, then .muster/identity.json', async () => {
    const root = repo()
    const env = { SERVICE_SERVER: s.api }
    const reg = async (name: string) => (await call(s.api, 'POST', '/api/instances/register', { name })).body
    const [old, only, other, byToken] = [await reg('old'), await reg('only'), await reg('other'), await reg('by-token')]
    const whoAmI = async (extra: Record<string, string> = {}) => {
      const r = await runCli(['lock', 'acquire', `order/${crypto.randomUUID()}`, '--ttl', '1m'], { cwd: root, env: { ...env, ...extra } })
      expect(r.code).toBe(0)
      return r.json.holders?.[0]?.instance_id ?? r.json.instance_id
    }
    mkdirSync(join(root, '.muster', 'agents'), { recursive: true })
    const save = (file: string, i: any) =>
      writeFileSync(join(root, '.muster', file), JSON.stringify({ name: i.name, server: s.api, instance_id: i.id, instance_token: i.token }))
    save('identity.json', old)
    expect(await whoAmI()).toBe(old.id)
    save('agents/only.json', only)
    expect(await whoAmI()).toBe(only.id)
    save('agents/other.json', other)
    expect(await whoAmI({ MUSTER_AGENT: 'other' })).toBe(other.id)
    expect(await whoAmI({ MUSTER_AGENT: 'only', MUSTER_INSTANCE_TOKEN: byToken.token })).toBe(byToken.id)
    // An empty variable chooses nothing.
    expect((await runCli(['inbox'], { cwd: root, env: { ...env, MUSTER_AGENT: '', MUSTER_INSTANCE_TOKEN: '' } })).code).toBe(2)
  })

  test('register NAME writes .muster/agents/NAME.json beside the others, never over them', async () => {
    const root = repo()
    const env = { SERVICE_SERVER: s.api }
    const a = await runCli(['register', 'kim'], { cwd: root, env })
    const b = await runCli(['register', 'lee'], { cwd: root, env })
    expect([a.code, b.code]).toEqual([0, 0])
    const read = (n: string) => JSON.parse(readFileSync(join(root, '.muster', 'agents', `${n}.json`), 'utf8'))
    expect(read('kim')).toMatchObject({ name: 'kim', instance_id: a.json.id })
    expect(read('lee')).toMatchObject({ name: 'lee', instance_id: b.json.id })
    const again = await runCli(['register', 'kim'], { cwd: root, env })
    expect(again.json).toMatchObject({ id: a.json.id, resumed: true })
    expect(existsSync(join(root, '.muster', 'identity.json'))).toBe(false)
  })
})

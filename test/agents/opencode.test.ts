// The real OpenCode (pinned, installed from npm) driven through its own loop against a real
// Muster server and the fake Anthropic API (fake-anthropic.ts): `muster init opencode` in
// a scratch git repository writes the plugin, then plain `opencode run` sessions. Each
// scenario asserts what reached the model (the fake logs every request) and what Muster
// and the files show afterwards. One line per scenario.
import { afterAll, beforeAll, expect, test } from 'bun:test'
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { call, eventually, register } from '../helpers'
import { startFakeAnthropic, type FakeAnthropic } from './fake-anthropic'
import { ensureAgent } from './lib/install'
import { bash, ensurePluginDeps, opencodeRun, OpencodeServer, read, write, type OpencodeRun } from './lib/opencode'
import type { Turn } from './lib/script'
import { startWorld, type World } from './lib/world'

let world: World
let fake: FakeAnthropic

beforeAll(async () => {
  // Installing the pinned CLI and its plugin package on a fresh machine takes a while.
  await Promise.all([ensureAgent('opencode'), ensurePluginDeps()])
  ;[world, fake] = await Promise.all([startWorld(), startFakeAnthropic()])
}, 240_000)

afterAll(async () => {
  if (fake?.log.unknown.size) console.log(`fake Anthropic API: unknown paths asked: ${[...fake.log.unknown].map(([p, n]) => `${p} ×${n}`).join(', ')}`)
  await Promise.all([world?.cleanup(), fake?.stop()])
})

const scenario = (name: string, fn: () => Promise<void>, timeoutMs = 120_000) => test(name, fn, timeoutMs)

/** A scratch repository wired by the real `muster init opencode` (edit-reserve mode with `reserve`). */
async function wiredRepo(name: string, reserve?: string): Promise<string> {
  const repo = world.repo(name)
  const r = await world.muster(['init', 'opencode', ...(reserve ? ['--reserve', reserve] : [])], { cwd: repo })
  if (r.code !== 0) throw new Error(`muster init opencode: ${r.code} ${r.stderr}`)
  return repo
}

async function run(cwd: string, name: string, prompt: string, env: Record<string, string> = {}): Promise<OpencodeRun> {
  const r = await opencodeRun({ world, model: fake.url, cwd, prompt, name, env })
  if (r.code !== 0) throw new Error(`opencode run exited ${r.code}:\n${r.stderr.slice(-4000)}`)
  return r
}

const sessionsOf = async (root: string) => ((await world.api('GET', '/api/sessions')).body as any[]).filter((x) => x.root === root)
const projectOf = (repo: string) => repo.split('/').pop()!

/** Another agent (registered over REST) holding `paths` of the repository's project exclusively. */
async function hold(repo: string, name: string, paths: string[], reason: string) {
  const auth = { authorization: `Bearer ${world.token}` }
  const holder = await register(world.server, name, auth)
  const r = await call(world.server.api, 'POST', '/api/reservations', { project: projectOf(repo), paths, reason, ttl_ms: 600_000 }, { ...auth, ...holder.h })
  if (r.status !== 201) throw new Error(`reserving ${paths} for ${name}: ${r.status} ${r.text}`)
  return holder
}

function seed(repo: string, path: string, text: string) {
  mkdirSync(join(repo, path, '..'), { recursive: true })
  writeFileSync(join(repo, path), text)
}

const LOGIN = 'export const login = 1\n'
/** A wired repository whose src/auth/login.ts (LOGIN) another agent, `holder`, holds exclusively. */
async function heldLogin(label: string, holder: string): Promise<{ repo: string; file: string }> {
  const repo = await wiredRepo(label)
  seed(repo, 'src/auth/login.ts', LOGIN)
  await hold(repo, holder, ['src/auth/**'], 'auth rewrite')
  return { repo, file: join(repo, 'src/auth/login.ts') }
}

scenario('muster init opencode writes the plugin, the MCP entry and AGENTS.md; a second run changes nothing', async () => {
  const repo = world.repo('init')
  const first = await world.muster(['init', 'opencode', '--reserve', '10m'], { cwd: repo })
  expect(first.code, first.stderr).toBe(0)
  expect(JSON.parse(first.stdout).files.map((f: any) => [f.path, f.action])).toEqual([
    ['.opencode/plugin/muster.ts', 'created'],
    ['opencode.json', 'created'],
    ['AGENTS.md', 'created'],
  ])
  const plugin = readFileSync(join(repo, '.opencode/plugin/muster.ts'), 'utf8')
  expect(plugin).toContain(`const SERVER = ${JSON.stringify(world.server.api)}`)
  expect(plugin).toContain('const RESERVE = "10m"')
  expect(plugin).not.toContain(world.token) // the token comes from the environment at run time
  const config = JSON.parse(readFileSync(join(repo, 'opencode.json'), 'utf8'))
  expect(config.mcp.muster).toEqual({ type: 'remote', url: `${world.server.api}/mcp`, headers: { Authorization: 'Bearer {env:SERVICE_TOKEN}' }, oauth: false })
  // Codex reads the same AGENTS.md: its init keeps one section.
  expect((await world.muster(['init', 'codex'], { cwd: repo })).code).toBe(0)
  const second = await world.muster(['init', 'opencode', '--reserve', '10m'], { cwd: repo })
  expect(second.code, second.stderr).toBe(0)
  expect(JSON.parse(second.stdout).files.map((f: any) => f.action)).toEqual(['unchanged', 'unchanged', 'updated'])
  expect(readFileSync(join(repo, 'AGENTS.md'), 'utf8').split('<!-- muster:begin -->').length).toBe(2)
  const third = await world.muster(['init', 'opencode', '--reserve', '10m'], { cwd: repo })
  expect(JSON.parse(third.stdout).files.map((f: any) => f.action)).toEqual(['unchanged', 'unchanged', 'unchanged'])
})

scenario('a session registers and its briefing reaches the model', async () => {
  const repo = await wiredRepo('brief')
  await hold(repo, 'bri-holder', ['src/billing/**'], 'billing rewrite')
  const prompt = fake.scripts.add({ name: 'brief', steps: [], finally: 'Briefed.' })
  const r = await run(repo, 'bri', `${prompt} hello`)
  // The briefing rides in a part the plugin adds to the user's message: OpenCode takes it as valid.
  expect(r.stderr).not.toContain('invalid user part')
  const [first] = fake.log.of('brief')
  expect(first.text).toContain('you are "bri"')
  expect(first.text).toContain('src/billing/**')
  expect(first.text).toContain('bri-holder')
  expect(await sessionsOf(repo)).toMatchObject([{ agent: 'opencode', name: 'bri', root: repo, project: projectOf(repo) }])
})

scenario("a write of a file another agent holds is denied, the file unchanged, and the reason reaches the model", async () => {
  const { repo, file } = await heldLogin('deny', 'den-holder')
  const prompt = fake.scripts.add({ name: 'deny', steps: [read(file), write(file, 'export const login = 2\n')], finally: 'I will ask den-holder.' })
  await run(repo, 'den', `Bump login. ${prompt}`)
  expect(readFileSync(file, 'utf8')).toBe(LOGIN)
  const after = fake.log.of('deny')[2]
  const result = (after.body.messages as any[]).at(-1).content.find((b: any) => b.type === 'tool_result')
  expect(result.is_error).toBe(true)
  expect(result.content).toContain('src/auth/login.ts')
  expect(result.content).toContain('den-holder (active)')
  expect(result.content).toContain('auth rewrite')
  expect(result.content).toContain('muster send den-holder')
  const audit = (await world.api('GET', '/api/audit?action=hook.deny')).body as any[]
  const [session] = await sessionsOf(repo)
  expect(audit.map((a) => a.actor)).toContain(session.instance_id)
  // Nothing the plugin sends after the session's end registers it again.
  expect(session.ended_at).not.toBeNull()
  expect(((await world.api('GET', '/api/instances')).body as any[]).filter((i) => i.name === 'den')).toEqual([])
})

scenario('a shell write of a held file is denied, the file unchanged', async () => {
  const { repo, file } = await heldLogin('shell', 'she-holder')
  const prompt = fake.scripts.add({ name: 'shell', steps: [bash("printf 'export const hack = 1\\n' >> src/auth/login.ts")], finally: 'Tried.' })
  await run(repo, 'she', `Hack it. ${prompt}`)
  expect(readFileSync(file, 'utf8')).toBe(LOGIN)
  expect(fake.log.of('shell')[1].raw).toContain('she-holder')
})

/** A step that sends `to` a message when its request arrives (while the model "thinks"), then plays `turn`. */
const sendThen = (to: string, subject: string, body: string, turn: Turn) => async () => {
  await world.api('POST', '/api/messages', { to: [to], subject, body })
  return turn
}

scenario('a message reaches the model mid-session, at the end of a tool output', async () => {
  const repo = await wiredRepo('mid')
  const prompt = fake.scripts.add({ name: 'mid', steps: [sendThen('mia', 'schema moved to v2', 'pull before you touch db/', bash('echo working'))], finally: 'Noted.' })
  await run(repo, 'mia', `Work. ${prompt}`)
  const [first, second] = fake.log.of('mid')
  expect(first.raw).not.toContain('pull before you touch db/')
  const result = (second.body.messages as any[]).at(-1).content.find((b: any) => b.type === 'tool_result')
  expect(JSON.stringify(result.content)).toContain('working')
  expect(JSON.stringify(result.content)).toContain('schema moved to v2')
  expect(JSON.stringify(result.content)).toContain('pull before you touch db/')
})

scenario('in a running OpenCode server: a message as the model stops gets one more turn, the next prompt shows new ones, deleting the session ends it', async () => {
  const repo = await wiredRepo('serve')
  const server = await OpencodeServer.start({ world, model: fake.url, cwd: repo, name: 'sto' })
  try {
    const first = fake.scripts.add({ name: 'stop', steps: [sendThen('sto', 'release freeze at 5pm', 'no deploys', { text: 'I am finished.' })], finally: 'Read the notice.' })
    const r = await server.run(`Finish. ${first}`)
    expect(r.code, r.stderr).toBe(0)
    // session.idle: the plugin prompts once more with the message (the client has gone by then).
    await eventually(() => fake.log.of('stop').length >= 2, 30_000)
    const stop = fake.log.of('stop')
    expect(stop[0].text).not.toContain('release freeze at 5pm')
    expect(stop[1].text).toContain('release freeze at 5pm')
    await Bun.sleep(1500)
    expect(fake.log.of('stop').length).toBe(2) // never twice in a row

    await world.api('POST', '/api/messages', { to: ['sto'], subject: 'between prompts', body: 'look at billing next' })
    const second = fake.scripts.add({ name: 'next', steps: [], finally: 'Second done.' })
    const again = await server.run(`Again. ${second}`, { continue: true })
    expect(again.code, again.stderr).toBe(0)
    expect(fake.log.of('next')[0].text).toContain('look at billing next')
    const [session] = await sessionsOf(repo)
    expect(session).toMatchObject({ agent: 'opencode', name: 'sto', ended_at: null })

    // A session deleted in OpenCode (the TUI's or the app's delete, its HTTP API here) ends in Muster.
    const gone = await fetch(`${server.url}/session/${session.session_id}?directory=${encodeURIComponent(repo)}`, { method: 'DELETE' })
    expect(gone.status).toBe(200)
    const ended = await eventually(async () => (await sessionsOf(repo)).find((x) => x.ended_at !== null), 10_000)
    expect(ended.session_id).toBe(session.session_id)
  } finally {
    server.kill()
  }
})

scenario('the session ends when opencode run exits: its files are free for the next agent', async () => {
  const repo = await wiredRepo('end', '10m')
  const file = join(repo, 'src/app.ts')
  let held: any[] = []
  const b = fake.scripts.add({ name: 'end-b', steps: [read(file), write(file, 'export const answer = 43\n')], finally: 'Edited too.' })
  const a = fake.scripts.add({
    name: 'end-a',
    steps: [
      read(file),
      write(file, 'export const answer = 42\n'),
      async () => {
        held = (await world.api('GET', `/api/reservations?project=${projectOf(repo)}`)).body as any[]
        return { text: 'Edited.' }
      },
    ],
  })
  await run(repo, 'ena', `Edit. ${a}`)
  expect(readFileSync(file, 'utf8')).toBe('export const answer = 42\n')
  expect(held.map((r) => [r.paths, r.exclusive, r.reason])).toEqual([[['src/app.ts'], true, 'edit']])
  const [ended] = await sessionsOf(repo)
  expect(ended).toMatchObject({ agent: 'opencode', name: 'ena' })
  expect(ended.ended_at).not.toBeNull()
  expect(((await world.api('GET', '/api/instances')).body as any[]).filter((i) => i.name === 'ena')).toEqual([])
  expect((await world.api('GET', `/api/reservations?project=${projectOf(repo)}`)).body).toEqual([])
  await run(repo, 'enb', `Edit again. ${b}`)
  expect(readFileSync(file, 'utf8')).toBe('export const answer = 43\n')
})

scenario("a subagent's session acts as the session that started it: its write of a held file is denied", async () => {
  const { repo, file } = await heldLogin('sub', 'sub-holder')
  const child = fake.scripts.add({ name: 'sub-child', steps: [read(file), write(file, 'export const login = 2\n')], finally: 'Could not write.' })
  const task = { tool: { name: 'task', input: { description: 'edit login', prompt: `Edit login. ${child}`, subagent_type: 'general' } } }
  const prompt = fake.scripts.add({ name: 'sub', steps: [task], finally: 'Delegated.' })
  await run(repo, 'sub', `Delegate. ${prompt}`)
  expect(readFileSync(file, 'utf8')).toBe(LOGIN)
  expect(fake.log.of('sub-child')[2].raw).toContain('sub-holder (active)')
  const sessions = await sessionsOf(repo)
  expect(sessions.map((x) => x.name)).toEqual(['sub']) // one session, one instance: the subagent's is its parent's
  const audit = (await world.api('GET', `/api/audit?action=hook.deny&actor=${sessions[0].instance_id}`)).body as any[]
  expect(audit).toHaveLength(1)
})

scenario("the CLI in the model's shell acts as the session", async () => {
  const repo = await wiredRepo('cli')
  const prompt = fake.scripts.add({ name: 'cli', steps: [bash('muster send olga --subject "from inside opencode"; echo "exit=$?"')], finally: 'Sent.' })
  await run(repo, 'ide', `Send it. ${prompt}`)
  expect(fake.log.of('cli')[1].raw).toContain('exit=0')
  const sent = (await world.api('GET', '/api/messages?to=olga')).body as any[]
  expect(sent.find((m) => m.subject === 'from inside opencode')).toMatchObject({ from: 'ide' })
  expect(((await world.api('GET', '/api/instances')).body as any[]).filter((i) => i.name === 'ide')).toHaveLength(0) // deregistered at exit
})

scenario('the instance token never reaches the model', async () => {
  const repo = await wiredRepo('token')
  let identity: any = null
  const look = async () => {
    identity = JSON.parse(readFileSync(join(repo, '.muster/agents/tok.json'), 'utf8'))
    return bash('env | grep MUSTER_ || true')
  }
  const prompt = fake.scripts.add({ name: 'token', steps: [look], finally: 'Hello.' })
  await run(repo, 'tok', `Hi. ${prompt}`)
  const [session] = await sessionsOf(repo)
  expect(identity.instance_id).toBe(session.instance_id)
  expect(identity.instance_token).toMatch(/\S{16,}/)
  for (const req of fake.log.entries) expect(req.raw).not.toContain(identity.instance_token)
  expect(fake.log.of('token')[1].raw).toContain('MUSTER_AGENT=tok')
})

scenario("Muster's MCP server connects from opencode.json (its token from SERVICE_TOKEN) and its tools are callable", async () => {
  const repo = await wiredRepo('mcp')
  const prompt = fake.scripts.add({ name: 'mcp', steps: [{ tool: { name: 'muster_discover_instances', input: { name: 'mcq' } } }], finally: 'Found.' })
  await run(repo, 'mcq', `Who is here? ${prompt}`)
  const [first, second] = fake.log.of('mcp')
  const tools = (first.body.tools as any[]).map((t) => t.name)
  expect(tools).toContain('muster_discover_instances')
  const result = (second.body.messages as any[]).at(-1).content.find((b: any) => b.type === 'tool_result')
  expect(result.is_error ?? false).toBe(false)
  expect(JSON.stringify(result.content)).toContain('mcq')
})

scenario('a server that cannot be reached stops nothing: OpenCode goes on, told once', async () => {
  const repo = world.repo('down')
  const init = await world.muster(['init', 'opencode', '--server', 'http://127.0.0.1:9'], { cwd: repo })
  expect(init.code, init.stderr).toBe(0)
  const file = join(repo, 'src/app.ts')
  const prompt = fake.scripts.add({ name: 'down', steps: [read(file), write(file, 'export const answer = 42\n')], finally: 'Edited.' })
  const r = await run(repo, 'dow', `Edit. ${prompt}`)
  expect(readFileSync(file, 'utf8')).toBe('export const answer = 42\n')
  expect(r.stderr.match(/muster hook: cannot reach http:\/\/127\.0\.0\.1:9/g)).toHaveLength(1)
})

test('the fake model server saw no request it does not know', () => {
  expect([...fake.log.unknown.keys()]).toEqual([])
})

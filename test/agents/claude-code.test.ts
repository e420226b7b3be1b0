// The real Claude Code, driven through its own loop against a real Muster server and the
// fake Anthropic API (fake-anthropic.ts): each scenario is a contract of
// docs/../shared agents.md seen from inside the agent. One line per scenario.
import { afterAll, beforeAll, expect, test } from 'bun:test'
import { existsSync, readFileSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { eventually } from '../helpers'
import { startFakeAnthropic, type FakeAnthropic } from './fake-anthropic'
import { bash, ClaudeSession, readAndEdit } from './lib/claude'
import type { Turn } from './lib/script'
import { ensureAgent } from './lib/install'
import { startWorld, type World } from './lib/world'

/**
 * Scenarios that fail only because of behaviour another issue owns: run, reported as
 * expected failures (`test.failing`), not failing the run. Remove a label when its fix
 * lands: the scenario then passes, and `test.failing` says to remove it.
 */
const awaiting: Record<string, string> = {}

/** MUSTER_AGENTS_STRICT=1 runs the awaited scenarios as plain tests, to see why they fail. */
const strict = process.env.MUSTER_AGENTS_STRICT === '1'

function scenario(name: string, fn: () => Promise<void>, timeoutMs = 90_000) {
  const issue = strict ? undefined : awaiting[name]
  if (issue) test.failing(`${name} [expected failure: ${issue}]`, fn, timeoutMs)
  else test(name, fn, timeoutMs)
}

let world: World
let fake: FakeAnthropic
const sessions: ClaudeSession[] = []

beforeAll(async () => {
  // Installing the pinned CLI on a fresh machine takes a while; a failure here fails every scenario.
  await ensureAgent('claude-code')
  ;[world, fake] = await Promise.all([startWorld(), startFakeAnthropic()])
}, 240_000)

afterAll(async () => {
  for (const s of sessions) s.kill()
  // Claude Code calls paths the fake does not serve: say which, so a new version's new calls show up.
  if (fake?.log.unknown.size) console.log(`fake Anthropic API: unknown paths asked: ${[...fake.log.unknown].map(([p, n]) => `${p} ×${n}`).join(', ')}`)
  await Promise.all([world?.cleanup(), fake?.stop()])
})

/** A scratch repository wired by the real `muster init claude-code` in edit-reserve mode. */
async function wiredRepo(name: string): Promise<string> {
  const repo = world.repo(name)
  const r = await world.muster(['init', 'claude-code', '--reserve', '10m'], { cwd: repo })
  if (r.code !== 0) throw new Error(`muster init: ${r.code} ${r.stderr}`)
  return repo
}

async function claude(cwd: string, name: string, env: Record<string, string> = {}): Promise<ClaudeSession> {
  const s = await ClaudeSession.start({ world, model: fake.url, cwd, name, env })
  sessions.push(s)
  return s
}

const instanceNamed = async (name: string) => ((await world.api('GET', '/api/instances')).body as any[]).find((i) => i.name === name)

scenario('muster init wires a scratch repository, and a second run changes nothing', async () => {
  const repo = world.repo('init')
  const first = await world.muster(['init', 'claude-code', '--reserve', '10m'], { cwd: repo })
  expect(first.code).toBe(0)
  const settings = JSON.parse(readFileSync(join(repo, '.claude/settings.json'), 'utf8'))
  for (const event of ['SessionStart', 'PreToolUse', 'PostToolUse', 'UserPromptSubmit', 'Stop', 'SessionEnd']) expect(settings.hooks[event]).toBeArray()
  expect(JSON.stringify(settings)).toContain(world.server.api)
  expect(JSON.parse(readFileSync(join(repo, '.mcp.json'), 'utf8')).mcpServers.muster.url).toBe(`${world.server.api}/mcp`)
  expect(readFileSync(join(repo, 'CLAUDE.md'), 'utf8')).toContain('muster')
  const second = await world.muster(['init', 'claude-code', '--reserve', '10m'], { cwd: repo })
  expect(second.code).toBe(0)
  // the repository's three files, and the user's Claude Code settings with the telemetry towards the server
  expect(JSON.parse(second.stdout).files.map((f: any) => f.action)).toEqual(['unchanged', 'unchanged', 'unchanged', 'unchanged'])
})

scenario('a session registers and its briefing reaches the model', async () => {
  const repo = await wiredRepo('brief')
  const prompt = fake.scripts.add({ name: 'brief', steps: [], finally: 'Briefed.' })
  const ada = await claude(repo, 'ada-brief')
  await ada.prompt(`What is going on here? ${prompt}`)
  const instance = await instanceNamed('ada-brief')
  expect(instance).toBeDefined()
  const sessions = (await world.api('GET', '/api/sessions')).body as any[]
  expect(sessions.find((s) => s.session_id === ada.sessionId)?.instance_id).toBe(instance.id)
  expect(fake.log.reached('brief', `you are "ada-brief" (instance ${instance.id})`)).toBe(true)
  await ada.end()
})

/** A session in a fresh wired repository that has edited src/app.ts (41 → 42), so holds it in edit-reserve mode. */
async function editedBy(label: string, name: string): Promise<{ repo: string; file: string; session: ClaudeSession }> {
  const repo = await wiredRepo(label)
  const file = join(repo, 'src/app.ts')
  const prompt = fake.scripts.add({ name: `${label}-edit`, steps: readAndEdit(file, '41', '42'), finally: 'Edited.' })
  const session = await claude(repo, name)
  await session.prompt(`Fix the answer. ${prompt}`)
  return { repo, file, session }
}
const reservations = async (project: string) => (await world.api('GET', `/api/reservations?project=${project}`)).body as any[]
const send = (to: string, subject: string, body: string) => world.api('POST', '/api/messages', { to: [to], subject, body })
/** A step that sends `to` a message when its request arrives (while the model "thinks"), then plays `turn`. */
const sendThen = (to: string, subject: string, body: string, turn: Turn) => async () => {
  await send(to, subject, body)
  return turn
}

scenario("an edit reserves its file for the session's instance", async () => {
  const { file, session: ada } = await editedBy('reserve', 'ada-reserve')
  expect(readFileSync(file, 'utf8')).toBe('export const answer = 42\n')
  const instance = await instanceNamed('ada-reserve')
  const held = await reservations('reserve')
  expect(held.map((r) => [r.paths, r.instance_id, r.exclusive, r.reason])).toEqual([[['src/app.ts'], instance.id, true, 'edit']])
  await ada.end()
})

scenario("a second agent's edit of a reserved file is denied, the file unchanged, and the reason reaches its model", async () => {
  const { repo, file, session: ada } = await editedBy('deny', 'ada-deny')
  const bobPrompt = fake.scripts.add({ name: 'deny-bob', steps: readAndEdit(file, '42', '43'), finally: 'I was told to ask ada.' })
  const bob = await claude(repo, 'bob-deny')
  await bob.prompt(`Bump the answer. ${bobPrompt}`)
  expect(readFileSync(file, 'utf8')).toBe('export const answer = 42\n')
  // The tool result Claude Code fed back, and the request that carried it to the model.
  const denied = bob.toolResults().join('\n')
  expect(denied).toContain('Muster denied this edit')
  expect(denied).toContain('ada-deny')
  expect(denied).toContain('muster send ada-deny')
  const after = fake.log.of('deny-bob')[2]?.raw ?? ''
  expect(after).toContain('ada-deny')
  expect(after).toContain('src/app.ts')
  const audit = (await world.api('GET', '/api/audit?action=hook.deny')).body as any[]
  expect(audit.map((a) => a.actor)).toEqual([(await instanceNamed('bob-deny')).id])
  await Promise.all([ada.end(), bob.end()])
})

scenario('the CLI inside a session acts as that session', async () => {
  const repo = await wiredRepo('cli')
  const prompt = fake.scripts.add({
    name: 'cli',
    steps: [bash('muster inbox'), bash('muster reserve cli "docs/**" --ttl 10m --reason writing-docs')],
    finally: 'Reserved.',
  })
  await send('ada-cli', 'hello from a person', 'read me in your inbox')
  const ada = await claude(repo, 'ada-cli')
  await ada.prompt(`Check your inbox, then reserve the docs. ${prompt}`)
  const [inbox, reserve] = ada.toolResults()
  expect(inbox).toContain('hello from a person')
  const instance = await instanceNamed('ada-cli')
  expect(((await world.api('GET', '/api/instances')).body as any[]).filter((i) => i.name === 'ada-cli')).toHaveLength(1)
  const held = await reservations('cli')
  expect(held.map((r) => [r.paths, r.instance_id])).toEqual([[['docs/**'], instance.id]])
  expect(reserve).not.toContain('required')
  await ada.end()
})

scenario("muster register of the session's own name inside it is the same instance, and its reservation never denies its edits", async () => {
  const repo = await wiredRepo('same')
  const file = join(repo, 'src/app.ts')
  const prompt = fake.scripts.add({
    name: 'same',
    steps: [bash('muster register ada-same'), bash('muster reserve same "src/**" --ttl 10m --reason refactor'), ...readAndEdit(file, '41', '42')],
    finally: 'Done.',
  })
  const ada = await claude(repo, 'ada-same')
  await ada.prompt(`Register, reserve src, edit. ${prompt}`)
  expect(readFileSync(file, 'utf8')).toBe('export const answer = 42\n')
  const [registered] = ada.toolResults()
  expect(registered).toContain(`"id":"${(await instanceNamed('ada-same')).id}"`)
  expect(registered).toContain('"resumed":true')
  // the session's instance token is in its shell already, never in what the model reads
  expect(registered).not.toMatch(/\b[0-9a-f]{64}\b/)
  expect(((await world.api('GET', '/api/instances')).body as any[]).filter((i) => i.name === 'ada-same')).toHaveLength(1)
  await ada.end()
})

scenario('a message reaches the model mid-session, through PostToolUse', async () => {
  const repo = await wiredRepo('mid')
  // Sent after UserPromptSubmit, before the tool runs.
  const step = sendThen('ada-mid', 'mid-session subject', 'the schema changed under you', bash('echo working'))
  const prompt = fake.scripts.add({ name: 'mid', steps: [step], finally: 'Noted.' })
  const ada = await claude(repo, 'ada-mid')
  await ada.prompt(`Work. ${prompt}`)
  const [first, second] = fake.log.of('mid')
  expect(first.raw).not.toContain('the schema changed under you')
  expect(second.raw).toContain('the schema changed under you')
  await ada.end()
})

scenario('a message reaches the model on the next prompt', async () => {
  const repo = await wiredRepo('next')
  const one = fake.scripts.add({ name: 'next-1', steps: [], finally: 'First done.' })
  const two = fake.scripts.add({ name: 'next-2', steps: [], finally: 'Second done.' })
  const ada = await claude(repo, 'ada-next')
  await ada.prompt(`First. ${one}`)
  await send('ada-next', 'between prompts', 'please look at the billing module next')
  await ada.prompt(`Second. ${two}`)
  expect(fake.log.reached('next-1', 'please look at the billing module next')).toBe(false)
  expect(fake.log.of('next-2')[0].raw).toContain('please look at the billing module next')
  await ada.end()
})

scenario('a message that arrives as the model stops reaches it before the session goes idle', async () => {
  const repo = await wiredRepo('stop')
  const step = sendThen('ada-stop', 'before you stop', 'one more thing: run the tests', { text: 'I am finished.' })
  const prompt = fake.scripts.add({ name: 'stop', steps: [step], finally: 'Read the message.' })
  const ada = await claude(repo, 'ada-stop')
  await ada.prompt(`Finish up. ${prompt}`)
  const requests = fake.log.of('stop')
  expect(requests.length).toBeGreaterThanOrEqual(2)
  expect(requests.at(-1)!.raw).toContain('one more thing: run the tests')
  await ada.end()
})

scenario('the session ends and releases everything it held', async () => {
  const { session: ada } = await editedBy('end', 'ada-end')
  expect(await reservations('end')).toHaveLength(1)
  expect(await ada.end()).toBe(0)
  expect(await reservations('end')).toEqual([])
  expect(await instanceNamed('ada-end')).toBeUndefined()
})

scenario('a SessionEnd slower than Claude Code\'s default 1.5 s still ends the session: init\'s hook timeout sets the budget', async () => {
  const repo = await wiredRepo('slowend')
  // A server that takes 3 s to answer, as the hook sees it: the command waits, then runs as init wrote it.
  const settingsFile = join(repo, '.claude/settings.json')
  const settings = JSON.parse(readFileSync(settingsFile, 'utf8'))
  const [hook] = settings.hooks.SessionEnd[0].hooks
  expect(hook.timeout).toBe(10)
  hook.command = `sleep 3; ${hook.command}`
  writeFileSync(settingsFile, JSON.stringify(settings, null, 2))
  const prompt = fake.scripts.add({ name: 'slowend-edit', steps: readAndEdit(join(repo, 'src/app.ts'), '41', '42'), finally: 'Edited.' })
  const ada = await claude(repo, 'ada-slowend')
  await ada.prompt(`Fix the answer. ${prompt}`)
  expect(await reservations('slowend')).toHaveLength(1)
  expect(await ada.end()).toBe(0)
  expect(await reservations('slowend')).toEqual([])
  expect(await instanceNamed('ada-slowend')).toBeUndefined()
})

scenario("Muster's MCP server connects and its tools are callable by the model", async () => {
  const repo = await wiredRepo('mcp')
  const prompt = fake.scripts.add({ name: 'mcp', steps: [{ tool: { name: 'mcp__muster__discover_instances', input: {} } }], finally: 'Listed.' })
  const ada = await claude(repo, 'ada-mcp')
  const turn = await ada.prompt(`Who else is here? ${prompt}`)
  const init = ada.events.find((e) => e.type === 'system' && e.subtype === 'init')
  expect(init?.mcp_servers.find((m: any) => m.name === 'muster')?.status).toBe('connected')
  expect(init?.tools).toContain('mcp__muster__discover_instances')
  expect(ada.toolResults().join('\n')).toContain('ada-mcp')
  expect(fake.log.of('mcp')[1].raw).toContain('ada-mcp')
  expect(turn.at(-1)?.is_error).toBe(false)
  await ada.end()
})

scenario("muster init refuses a token Claude Code's http hooks cannot read", async () => {
  const repo = world.repo('token')
  const r = await world.muster(['init', 'claude-code'], { cwd: repo, env: { SERVICE_TOKEN: '', MUSTER_TOKEN: world.token } })
  expect(r.code).toBe(2)
  expect(r.stderr).toContain('MUSTER_TOKEN')
  expect(r.stderr).toContain('set SERVICE_TOKEN')
  expect(existsSync(join(repo, '.claude/settings.json'))).toBe(false)
})

scenario('two agents in one checkout message each other by name, each as itself', async () => {
  const repo = await wiredRepo('two')
  const adaPrompt = fake.scripts.add({ name: 'two-ada', steps: [bash('muster send bob-two --subject "tests are red" --body "please look at src/app.ts"')], finally: 'Sent.' })
  const bobPrompt = fake.scripts.add({ name: 'two-bob', steps: [bash('muster send ada-two --subject "on it" --body "looking now"')], finally: 'Replied.' })
  const [ada, bob] = await Promise.all([claude(repo, 'ada-two'), claude(repo, 'bob-two')])
  await ada.prompt(`Tell bob. ${adaPrompt}`)
  await bob.prompt(`Answer ada. ${bobPrompt}`)
  // Bob's model read ada's message, from ada, as his prompt went in; and his answer is from bob.
  expect(fake.log.of('two-bob')[0].raw).toContain('please look at src/app.ts')
  const sent = ((await world.api('GET', '/api/messages')).body as any[]).filter((m) => /-two$/.test(m.from))
  expect(sent.map((m) => [m.from, m.to, m.subject]).sort()).toEqual([
    ['ada-two', ['bob-two'], 'tests are red'],
    ['bob-two', ['ada-two'], 'on it'],
  ])
  await Promise.all([ada.end(), bob.end()])
})

scenario("/clear keeps the session's reservations and claims with the same instance", async () => {
  const { session: ada } = await editedBy('clear', 'ada-clear')
  const before = await instanceNamed('ada-clear')
  // and a task claimed from the session's shell
  const task = (await world.api('POST', '/api/queues/clear-q/tasks', { title: 'port the lexer' })).body
  await ada.prompt(`Take the next task. ${fake.scripts.add({ name: 'clear-claim', steps: [bash('muster task claim clear-q')], finally: 'Claimed.' })}`)
  expect((await world.api('GET', `/api/tasks/${task.id}`)).body).toMatchObject({ status: 'claimed', claimed_by: before.id })
  await ada.prompt('/clear')
  const held = await reservations('clear')
  expect(held.map((r) => [r.paths, r.instance_id])).toEqual([[['src/app.ts'], before.id]])
  expect((await instanceNamed('ada-clear'))?.id).toBe(before.id)
  expect((await world.api('GET', `/api/tasks/${task.id}`)).body).toMatchObject({ status: 'claimed', claimed_by: before.id })
  await ada.end()
})

scenario('no token reaches the model', async () => {
  const repo = await wiredRepo('secret')
  const prompt = fake.scripts.add({ name: 'secret', steps: [], finally: 'Fine.' })
  const ada = await claude(repo, 'ada-secret')
  await ada.prompt(`Hello. ${prompt}`)
  // What the model reads: the system prompt and the conversation (not the request's metadata).
  const seen = fake.log
    .of('secret')
    .map((r) => JSON.stringify([r.body.system, r.body.messages]))
    .join('\n')
  expect(seen).toContain('ada-secret')
  expect(seen).not.toContain(world.token)
  // An instance token is 64 hex digits: none may be in what the model reads.
  expect(seen.match(/\b[0-9a-f]{64}\b/g) ?? []).toEqual([])
  await ada.end()
})

scenario("a second agent's write through the shell to a reserved file is refused, the file unchanged", async () => {
  const { repo, file, session: ada } = await editedBy('shell', 'ada-shell')
  const bobPrompt = fake.scripts.add({ name: 'shell-bob', steps: [bash(`printf 'export const hacked = true\\n' >> src/app.ts`)], finally: 'Tried.' })
  const bob = await claude(repo, 'bob-shell')
  await bob.prompt(`Append a flag. ${bobPrompt}`)
  expect(readFileSync(file, 'utf8')).toBe('export const answer = 42\n')
  expect(fake.log.of('shell-bob')[1]?.raw ?? '').toContain('ada-shell')
  await Promise.all([ada.end(), bob.end()])
})

/** A session whose Bash is not allowed by rule: each shell command asks, and Muster's PermissionRequest hook holds it for a person. */
async function askingForBash(label: string, name: string, command: string, finale: string) {
  const repo = await wiredRepo(label)
  const prompt = fake.scripts.add({ name: label, steps: [bash(command)], finally: finale })
  const session = await ClaudeSession.start({ world, model: fake.url, cwd: repo, name, allowedTools: ['Read', 'Edit', 'Write', 'mcp__muster'] })
  sessions.push(session)
  return { repo, prompt, session }
}
const pendingOf = (name: string) =>
  eventually(async () => ((await world.api('GET', `/api/approvals?status=pending&name=${name}`)).body as any[])[0], 30_000, 100)

scenario('in -p mode with Bash not allowed, a command runs once a person allows it in Muster', async () => {
  const { repo, prompt, session: ada } = await askingForBash('approve', 'ada-approve', `sh -c 'echo approved > ran.txt'`, 'Ran it.')
  const turn = ada.prompt(`Run the command. ${prompt}`, 90_000)
  const asked = await pendingOf('ada-approve')
  expect([asked.tool, asked.summary]).toEqual(['Bash', `sh -c 'echo approved > ran.txt'`])
  expect(existsSync(join(repo, 'ran.txt'))).toBe(false)
  expect((await world.api('POST', `/api/approvals/${asked.id}/decision`, { behavior: 'allow' })).status).toBe(200)
  await turn
  expect(readFileSync(join(repo, 'ran.txt'), 'utf8')).toBe('approved\n')
  await ada.end()
}, 120_000)

scenario("in -p mode a person's deny keeps the command from running, and the model reads their words", async () => {
  const { repo, prompt, session: bob } = await askingForBash('refuse', 'bob-refuse', `sh -c 'echo refused > ran.txt'`, 'Understood.')
  const turn = bob.prompt(`Run the command. ${prompt}`, 90_000)
  const asked = await pendingOf('bob-refuse')
  const words = 'not on this branch: open a pull request instead'
  expect((await world.api('POST', `/api/approvals/${asked.id}/decision`, { behavior: 'deny', message: words })).status).toBe(200)
  await turn
  expect(existsSync(join(repo, 'ran.txt'))).toBe(false)
  expect(fake.log.of('refuse')[1]?.raw ?? '').toContain(words)
  await bob.end()
}, 120_000)

scenario('telemetry wired by muster init records usage of the session\'s instance; a deny budget stops its next tool call', async () => {
  const repo = await wiredRepo('spend')
  const prompt = fake.scripts.add({ name: 'spend', steps: [bash('echo one')], finally: 'Spent.' })
  const ada = await claude(repo, 'ada-spend', { OTEL_LOGS_EXPORT_INTERVAL: '500', OTEL_METRIC_EXPORT_INTERVAL: '1000' })
  await ada.prompt(`Run it. ${prompt}`)
  const instance = await instanceNamed('ada-spend')
  // no call by the model: Claude Code's own telemetry, towards the server as init set it up
  const usage = await eventually(async () => {
    const rows = (await world.api('GET', `/api/llm/usage?session_tag=${ada.sessionId}`)).body as any[]
    return rows.length >= 2 ? rows : null
  }, 20_000)
  for (const u of usage!) expect(u).toMatchObject({ instance_id: instance.id, project: 'spend', provider: 'anthropic' })
  // a person sets a deny budget under what was spent: the session's next tool call is denied, naming it
  expect((await world.api('PUT', '/api/budgets/ada-spend-cap', { scope: 'agent', target: 'ada-spend', limit_usd: 0.000001, window: 'day', action: 'deny' })).status).toBe(201)
  const next = fake.scripts.add({ name: 'spend-denied', steps: [bash('echo two')], finally: 'Stopped.' })
  await ada.prompt(`Again. ${next}`)
  expect(fake.log.reached('spend-denied', 'Muster budget "ada-spend-cap" (agent ada-spend) is exceeded')).toBe(true)
  await ada.end()
})

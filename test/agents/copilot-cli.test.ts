// The real GitHub Copilot CLI (npm @github/copilot, pinned in lib/install.ts), driven through
// its own loop (`copilot -p`, lib/copilot.ts) against a real Muster server and our fake
// Anthropic API, which Copilot's BYOK provider settings point it at: `muster init
// copilot-cli` wires a scratch repository, the session registers and is briefed, a write of a
// file another agent holds is denied with the file unchanged and the reason reaching the
// model, a message reaches the model at the start, mid-session and as it stops, and the session's end
// releases what it held. One line per scenario.
import { afterAll, beforeAll, expect, test } from 'bun:test'
import { readFileSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { call } from '../helpers'
import { startFakeAnthropic, type FakeAnthropic } from './fake-anthropic'
import { bash, copilot, edit, view } from './lib/copilot'
import { ensureAgent } from './lib/install'
import { startWorld, type World } from './lib/world'

let world: World
let fake: FakeAnthropic

beforeAll(async () => {
  await ensureAgent('copilot-cli')
  ;[world, fake] = await Promise.all([startWorld(), startFakeAnthropic()])
}, 240_000)

afterAll(async () => {
  if (fake?.log.unknown.size) console.log(`fake Anthropic API: unknown paths asked: ${[...fake.log.unknown].map(([p, n]) => `${p} ×${n}`).join(', ')}`)
  await Promise.all([world?.cleanup(), fake?.stop()])
})

/** A scratch repository wired by the real `muster init copilot-cli`. */
async function wiredRepo(name: string, ...args: string[]): Promise<string> {
  const repo = world.repo(name)
  const r = await world.muster(['init', 'copilot-cli', ...args], { cwd: repo })
  if (r.code !== 0) throw new Error(`muster init: ${r.code} ${r.stderr}`)
  return repo
}

async function run(cwd: string, name: string, prompt: string) {
  const r = await copilot({ world, model: fake.url, cwd, name, prompt })
  if (r.code !== 0) throw new Error(`copilot exited ${r.code}:\n${r.stderr}\n${r.stdout}`)
  return r
}

const instanceNamed = async (name: string) => ((await world.api('GET', '/api/instances')).body as any[]).find((i) => i.name === name)
const sessionsNamed = async (name: string) => ((await world.api('GET', '/api/sessions')).body as any[]).filter((s) => s.name === name)
const send = (to: string, subject: string, body: string) => world.api('POST', '/api/messages', { to: [to], subject, body })

/** Another agent (registered over REST with the agents' token) holding `paths` of `project`. */
async function holder(name: string, project: string, paths: string[]) {
  const agent = { authorization: `Bearer ${world.token}` }
  const reg = await call(world.server.api, 'POST', '/api/instances/register', { name }, agent)
  expect(reg.status).toBe(200)
  const r = await call(world.server.api, 'POST', '/api/reservations', { project, paths, reason: 'rewriting the app', ttl_ms: 600_000 }, { ...agent, 'x-instance-token': reg.body.token })
  expect(r.status).toBe(201)
  return reg.body
}

test('muster init copilot-cli wires a scratch repository, and a second run changes nothing', async () => {
  const repo = world.repo('init')
  const first = await world.muster(['init', 'copilot-cli'], { cwd: repo })
  expect(first.code).toBe(0)
  const hooks = JSON.parse(readFileSync(join(repo, '.github/hooks/muster.json'), 'utf8'))
  expect(hooks.version).toBe(1)
  for (const event of ['sessionStart', 'userPromptSubmitted', 'preToolUse', 'postToolUse', 'agentStop', 'sessionEnd'])
    expect(hooks.hooks[event]).toEqual([expect.objectContaining({ type: 'command', bash: `muster hook copilot-cli ${event} --server ${world.server.api}` })])
  expect(readFileSync(join(repo, '.github/copilot-instructions.md'), 'utf8')).toContain('muster send')
  expect(JSON.stringify(hooks)).not.toContain(world.token)
  const second = await world.muster(['init', 'copilot-cli'], { cwd: repo })
  expect(JSON.parse(second.stdout).files.map((f: any) => f.action)).toEqual(['unchanged', 'unchanged'])
}, 60_000)

test('the session registers as an instance while it runs, its briefing reaches the model, and its end deregisters it', async () => {
  const repo = await wiredRepo('brief')
  let live: any
  const prompt = fake.scripts.add({
    name: 'brief',
    steps: [
      async () => {
        live = await instanceNamed('ada-brief')
        return view(join(repo, 'README.md'))
      },
    ],
    finally: 'Briefed.',
  })
  await run(repo, 'ada-brief', `What is going on here? ${prompt}`)
  expect(live).toMatchObject({ name: 'ada-brief', status: 'active' })
  const [session] = await sessionsNamed('ada-brief')
  expect(session).toMatchObject({ agent: 'copilot-cli', instance_id: live.id, root: repo, project: 'brief' })
  expect(fake.log.reached('brief', `you are "ada-brief" (instance ${live.id})`)).toBe(true)
  // `copilot -p` ends its session when the prompt is done: sessionEnd deregistered the instance
  expect(session.ended_at).toEqual(expect.any(String))
  expect(await instanceNamed('ada-brief')).toBeUndefined()
}, 90_000)

test("a write of a file another agent holds is denied (edit and a shell redirect), the file unchanged, and the reason reaches the model", async () => {
  const repo = await wiredRepo('deny')
  const file = join(repo, 'src/app.ts')
  const bob = await holder('bob-deny', 'deny', ['src/app.ts'])
  const prompt = fake.scripts.add({ name: 'deny', steps: [edit(file, '41', '42'), bash('echo "export const answer = 43" > src/app.ts')], finally: 'I will ask bob-deny.' })
  await run(repo, 'ada-deny', `Bump the answer. ${prompt}`)
  expect(readFileSync(file, 'utf8')).toBe('export const answer = 41\n')
  const [, afterEdit, afterBash] = fake.log.of('deny')
  for (const request of [afterEdit, afterBash]) {
    expect(request.raw).toContain('bob-deny')
    expect(request.raw).toContain('rewriting the app')
    expect(request.raw).toContain('muster send bob-deny')
  }
  const audit = (await world.api('GET', '/api/audit?action=hook.deny')).body as any[]
  const [session] = await sessionsNamed('ada-deny')
  expect(audit.filter((a) => a.actor === session.instance_id)).toHaveLength(2)
  expect(bob.name).toBe('bob-deny')
}, 90_000)

test('a message reaches the model: one waiting at the start (briefing), one sent mid-session (postToolUse)', async () => {
  const repo = await wiredRepo('msg')
  await send('ada-msg', 'waiting subject', 'read the migration notes first')
  const step = async () => {
    await send('ada-msg', 'mid-session subject', 'the schema changed under you')
    return bash('echo working')
  }
  const prompt = fake.scripts.add({ name: 'msg', steps: [step], finally: 'Noted.' })
  await run(repo, 'ada-msg', `Work. ${prompt}`)
  const [first, second] = fake.log.of('msg')
  expect(first.raw).toContain('read the migration notes first')
  expect(first.raw).not.toContain('the schema changed under you')
  expect(second.raw).toContain('the schema changed under you')
}, 90_000)

test('a message that arrives as the model stops reaches it: agentStop blocks once, its reason the next prompt', async () => {
  const repo = await wiredRepo('stop')
  const step = async () => {
    await send('ada-stop', 'before you stop', 'one more thing: run the tests')
    return { text: 'I am finished.' }
  }
  const prompt = fake.scripts.add({ name: 'stop', steps: [step], finally: 'Read the message.' })
  const r = await run(repo, 'ada-stop', `Work. ${prompt}`)
  const [first, second] = fake.log.of('stop')
  expect(first.raw).not.toContain('one more thing: run the tests')
  expect(second.raw).toContain('one more thing: run the tests')
  expect(second.raw).toContain('not from the user')
  expect(fake.log.of('stop')).toHaveLength(2)
  expect(r.stdout).toContain('Read the message.')
}, 90_000)

test('in edit-reserve mode an edit reserves its file while the session runs, and the session end releases it', async () => {
  const repo = await wiredRepo('release', '--reserve', '10m')
  const file = join(repo, 'src/app.ts')
  let held: any[] = []
  const prompt = fake.scripts.add({
    name: 'release',
    steps: [
      edit(file, '41', '42'),
      async () => {
        held = (await world.api('GET', '/api/reservations?project=release')).body
        return view(file)
      },
    ],
    finally: 'Edited.',
  })
  await run(repo, 'ada-release', `Fix the answer. ${prompt}`)
  expect(readFileSync(file, 'utf8')).toBe('export const answer = 42\n')
  const [session] = await sessionsNamed('ada-release')
  expect(held.map((r) => [r.paths, r.instance_id, r.reason])).toEqual([[['src/app.ts'], session.instance_id, 'edit']])
  expect((await world.api('GET', '/api/reservations?project=release')).body).toEqual([])
  expect(await instanceNamed('ada-release')).toBeUndefined()
}, 90_000)

test("wired for Claude Code too (Copilot runs .claude/settings.json's hooks as well): one session, one instance, the write still denied", async () => {
  const repo = await wiredRepo('both')
  const claude = await world.muster(['init', 'claude-code'], { cwd: repo })
  expect(claude.code).toBe(0)
  const file = join(repo, 'src/app.ts')
  await holder('bob-both', 'both', ['src/app.ts'])
  let during: any[] = []
  const prompt = fake.scripts.add({
    name: 'both',
    steps: [
      async () => {
        during = (await world.api('GET', '/api/instances')).body
        return edit(file, '41', '42')
      },
    ],
    finally: 'I will ask bob-both.',
  })
  // Copilot refuses http hooks to loopback (and ignores the whole file for it) unless told it is local development.
  const r = await copilot({ world, model: fake.url, cwd: repo, name: 'ada-both', prompt: `Bump the answer. ${prompt}`, env: { COPILOT_HOOK_ALLOW_LOCALHOST: '1' } })
  expect(r.code).toBe(0)
  expect(readFileSync(file, 'utf8')).toBe('export const answer = 41\n')
  expect(fake.log.of('both')[1].raw).toContain('bob-both')
  const sessions = (await world.api('GET', '/api/sessions')).body as any[]
  const mine = sessions.filter((s) => s.name === 'ada-both' || s.name.startsWith('claude-code-') || s.name.startsWith('copilot-cli-'))
  expect(mine.map((s) => [s.name, s.agent])).toEqual([['ada-both', 'copilot-cli']])
  expect(during.filter((i) => i.name === 'ada-both' || i.name.startsWith('claude-code-'))).toHaveLength(1)
  // denied as the one session (Copilot stops at the first hook that denies)
  const audit = (await world.api('GET', '/api/audit?action=hook.deny')).body as any[]
  expect(audit.filter((a) => a.actor === mine[0].instance_id).length).toBeGreaterThanOrEqual(1)
  const registered = ((await world.api('GET', '/api/audit?action=hook.session')).body as any[]).filter((a) => JSON.stringify(a).includes(mine[0].session_id))
  expect(registered.filter((a) => JSON.stringify(a).includes('registered'))).toHaveLength(1)
  expect(await instanceNamed('ada-both')).toBeUndefined()
}, 90_000)

test("wired for Claude Code only: Copilot's session is still Copilot's, and its edit is denied through Claude's http hook", async () => {
  const repo = world.repo('claudeonly')
  expect((await world.muster(['init', 'claude-code'], { cwd: repo })).code).toBe(0)
  const file = join(repo, 'src/app.ts')
  await holder('bob-claudeonly', 'claudeonly', ['src/app.ts'])
  const prompt = fake.scripts.add({ name: 'claudeonly', steps: [edit(file, '41', '42')], finally: 'I will ask bob-claudeonly.' })
  const r = await copilot({ world, model: fake.url, cwd: repo, name: 'ada-claudeonly', prompt: `Bump the answer. ${prompt}`, env: { COPILOT_HOOK_ALLOW_LOCALHOST: '1' } })
  expect(r.code).toBe(0)
  expect(readFileSync(file, 'utf8')).toBe('export const answer = 41\n')
  // Claude's SessionStart command hook (`muster hook claude-code`, run by Copilot with COPILOT_CLI=1) registered Copilot's session
  const [session] = await sessionsNamed('ada-claudeonly')
  expect(session).toMatchObject({ agent: 'copilot-cli', root: repo })
  // the http PreToolUse hook got Copilot's edit as Edit {path, old_str, new_str}, and denied it
  expect(fake.log.of('claudeonly')[1].raw).toContain('bob-claudeonly')
  const audit = (await world.api('GET', '/api/audit?action=hook.deny')).body as any[]
  expect(audit.filter((a) => a.actor === session.instance_id)).toHaveLength(1)
}, 90_000)

test('a permission request wired by hand waits for a person in Muster, and their allow lets the command run', async () => {
  const repo = await wiredRepo('approve')
  // Not wired by init (Copilot asks even under --allow-all-tools for some commands): a team adds it by hand.
  const command = `muster hook copilot-cli permissionRequest --server ${world.server.api} --approval-wait 1m`
  writeFileSync(join(repo, '.github/hooks/approvals.json'), JSON.stringify({ version: 1, hooks: { permissionRequest: [{ type: 'command', bash: command, timeoutSec: 90 }] } }))
  const prompt = fake.scripts.add({ name: 'approve', steps: [bash('echo approved > approved.txt')], finally: 'Done.' })
  const running = copilot({ world, model: fake.url, cwd: repo, name: 'ada-approve', prompt: `Write it. ${prompt}`, allowAll: false })
  let pending: any
  for (let i = 0; i < 400 && !pending; i++) {
    pending = ((await world.api('GET', '/api/approvals?status=pending')).body as any[]).find((a) => a.name === 'ada-approve')
    if (!pending) await Bun.sleep(50)
  }
  expect(pending).toMatchObject({ kind: 'permission', agent: 'copilot-cli', tool: 'bash' })
  expect((await world.api('POST', `/api/approvals/${pending.id}/decision`, { behavior: 'allow' })).status).toBe(200)
  const r = await running
  expect(r.code).toBe(0)
  expect(readFileSync(join(repo, 'approved.txt'), 'utf8')).toBe('approved\n')
}, 90_000)

// The real Gemini CLI (pinned, installed from npm) driven through its own loop against a
// fake Gemini API and a real Muster server: `muster init gemini-cli --trust` in a scratch
// git repository, then plain headless `gemini -p` runs. Each scenario asserts what
// reached the model (the fake logs every request) and what Muster and the files show.
import { afterAll, beforeAll, expect, test } from 'bun:test'
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { call, register, startServer, type TestServer } from '../helpers'
import { startFakeGemini, type FakeGemini } from './fake-gemini'
import { marker } from './lib/script'
import { geminiRun, geminiWorld, muster, responses, type GeminiWorld } from './gemini'

let s: TestServer
let fake: FakeGemini
let w: GeminiWorld

beforeAll(async () => {
  s = await startServer()
  fake = startFakeGemini()
  w = await geminiWorld({ modelUrl: fake.url, server: s.api })
}, 240_000)

afterAll(async () => {
  fake?.stop()
  await s?.cleanup()
  w?.cleanup()
})

const scenario = (name: string, fn: () => Promise<void>) => test(name, fn, 120_000)

/** A scratch repository wired by `muster init gemini-cli --trust …` (asserted to succeed). */
function wired(...flags: string[]): string {
  const repo = w.repo()
  const r = muster(w, repo, ['init', 'gemini-cli', '--trust', ...flags])
  expect(r.code, r.stderr).toBe(0)
  return repo
}

const sessionsOf = async (root: string) => ((await call(s.api, 'GET', '/api/sessions')).body as any[]).filter((x) => x.root === root)

function seed(repo: string, path: string, text: string) {
  mkdirSync(join(repo, path, '..'), { recursive: true })
  writeFileSync(join(repo, path), text)
}

const projectOf = (repo: string) => repo.split('/').pop()!

scenario('muster init gemini-cli writes hooks, MCP entry, GEMINI.md and trust; a second run changes nothing', async () => {
  const repo = w.repo()
  mkdirSync(join(repo, '.gemini'))
  // The user's own settings stay: a hook of theirs, and a setting.
  const theirs = { type: 'command', command: 'echo theirs' }
  writeFileSync(join(repo, '.gemini/settings.json'), JSON.stringify({ ui: { theme: 'GitHub' }, hooks: { BeforeTool: [{ matcher: 'read_file', hooks: [theirs] }] } }))
  // Untrusted: init says so, and headless Gemini CLI does not start (nor run a hook).
  const untrusted = muster(w, repo, ['init', 'gemini-cli'])
  expect(untrusted.code, untrusted.stderr).toBe(0)
  expect(JSON.parse(untrusted.stdout).notes.join('\n')).toContain('muster init gemini-cli --trust')
  const refused = await geminiRun(w, repo, 'hello', { env: { MUSTER_AGENT: 'gnot' } })
  expect(refused.code).not.toBe(0)
  expect(refused.stderr).toContain('not running in a trusted directory')
  expect(await sessionsOf(repo)).toEqual([])
  const first = muster(w, repo, ['init', 'gemini-cli', '--trust'])
  expect(first.code, first.stderr).toBe(0)
  expect(JSON.parse(first.stdout).notes).toBeUndefined()
  const settings = JSON.parse(readFileSync(join(repo, '.gemini/settings.json'), 'utf8'))
  expect(settings.ui).toEqual({ theme: 'GitHub' })
  expect(settings.hooks.BeforeTool[0]).toEqual({ matcher: 'read_file', hooks: [theirs] })
  for (const event of ['SessionStart', 'SessionEnd', 'BeforeTool', 'AfterTool', 'BeforeAgent', 'AfterAgent']) {
    const ours = (settings.hooks[event] as any[]).flatMap((g) => g.hooks).filter((h) => h.command.startsWith('muster hook gemini-cli'))
    expect(ours.length, event).toBe(1)
  }
  expect(settings.mcpServers.muster).toMatchObject({ httpUrl: `${s.api}/mcp` })
  expect(JSON.stringify(settings)).not.toContain('Bearer ey') // no token in a committed file
  expect(readFileSync(join(repo, 'GEMINI.md'), 'utf8')).toContain('## How this team of agents coordinates (Muster)')
  const trusted = JSON.parse(readFileSync(join(w.home, '.gemini/trustedFolders.json'), 'utf8'))
  expect(trusted[repo]).toBe('TRUST_FOLDER')
  // The untrusted run wrote the project's files already: only the trust is new.
  expect(JSON.parse(first.stdout).files.map((f: any) => f.action)).toEqual(['unchanged', 'unchanged', 'created'])
  const again = muster(w, repo, ['init', 'gemini-cli', '--trust'])
  expect(again.code, again.stderr).toBe(0)
  expect((JSON.parse(again.stdout).files as any[]).every((f) => f.action === 'unchanged')).toBe(true)
})

scenario('a session registers and is briefed: the briefing reaches the model', async () => {
  const repo = wired()
  const holder = await register(s, 'gbri-holder')
  await call(s.api, 'POST', '/api/reservations', { project: projectOf(repo), paths: ['src/billing/**'], reason: 'billing rewrite' }, holder.h)
  const m = 'brief'
  fake.scripts.add({ name: m, steps: [{ text: 'read it' }] })
  const r = await geminiRun(w, repo, marker(m), { env: { MUSTER_AGENT: 'gbri' } })
  expect(r.code, r.stderr).toBe(0)
  const [first] = fake.log.of(m)
  expect(first.text).toContain('Muster coordination: you are "gbri"')
  expect(first.text).toContain('src/billing/**: gbri-holder (active), exclusive')
  // The MCP entry connected: Gemini CLI put the server's instructions in the model's context.
  expect(first.text).toContain("instructions provided by the tool server 'muster'")
  const [session] = await sessionsOf(repo)
  expect(session).toMatchObject({ agent: 'gemini-cli', name: 'gbri', root: repo, project: projectOf(repo) })
})

scenario("a write_file of a file another agent holds is denied, the file unchanged, the reason reaches the model", async () => {
  const repo = wired()
  seed(repo, 'src/auth/login.ts', 'export const login = 1\n')
  const holder = await register(s, 'gada')
  await call(s.api, 'POST', '/api/reservations', { project: projectOf(repo), paths: ['src/auth/**'], reason: 'auth rewrite' }, holder.h)
  const m = 'denied'
  fake.scripts.add({ name: m, steps: [{ tool: { name: 'write_file', input: { file_path: 'src/auth/login.ts', content: 'export const login = 2\n' } } }, { text: 'denied, asking gada' }] })
  const r = await geminiRun(w, repo, marker(m), { env: { MUSTER_AGENT: 'gbob' } })
  expect(r.code, r.stderr).toBe(0)
  expect(readFileSync(join(repo, 'src/auth/login.ts'), 'utf8')).toBe('export const login = 1\n')
  const reason = responses(fake.log.of(m)[1]).join('\n')
  expect(reason).toContain('Tool execution blocked')
  expect(reason).toContain('src/auth/login.ts')
  expect(reason).toContain('gada')
  expect(reason).toContain('muster send gada')
})

scenario('a replace and a shell write of a held file are denied, the file unchanged', async () => {
  const repo = wired()
  seed(repo, 'src/pay.ts', 'export const pay = 1\n')
  const holder = await register(s, 'gpay-holder')
  await call(s.api, 'POST', '/api/reservations', { project: projectOf(repo), paths: ['src/pay.ts'], reason: 'payments' }, holder.h)
  const m = 'replshell'
  fake.scripts.add({
    name: m,
    steps: [
      { tool: { name: 'replace', input: { file_path: join(repo, 'src/pay.ts'), old_string: 'pay = 1', new_string: 'pay = 2', instruction: 'bump' } } },
      { tool: { name: 'run_shell_command', input: { command: "printf 'export const hack = 1\\n' >> pay.ts", dir_path: 'src' } } },
      { text: 'tried' },
    ],
  })
  const r = await geminiRun(w, repo, marker(m), { env: { MUSTER_AGENT: 'grep' } })
  expect(r.code, r.stderr).toBe(0)
  expect(readFileSync(join(repo, 'src/pay.ts'), 'utf8')).toBe('export const pay = 1\n')
  const [, afterReplace, afterShell] = fake.log.of(m)
  expect(responses(afterReplace).at(-1)).toContain('gpay-holder')
  expect(responses(afterShell).at(-1)).toContain('gpay-holder')
})

scenario('a message reaches the model mid-session (after a tool call)', async () => {
  const repo = wired()
  const m = 'midmsg'
  fake.scripts.add({
    name: m,
    steps: [
      async () => {
        await call(s.api, 'POST', '/api/messages', { to: ['gmia'], subject: 'schema moved to v2', body: 'pull before you touch db/' })
        return { tool: { name: 'read_file', input: { file_path: 'README.md' } } }
      },
      { text: 'noted' },
    ],
  })
  const r = await geminiRun(w, repo, marker(m), { env: { MUSTER_AGENT: 'gmia' } })
  expect(r.code, r.stderr).toBe(0)
  const out = responses(fake.log.of(m)[1]).join('\n')
  expect(out).toContain('<hook_context>')
  expect(out).toContain('schema moved to v2')
  expect(out).toContain('pull before you touch db/')
})

scenario('a message that arrives before the model stops reaches it as a Muster notice', async () => {
  const repo = wired()
  const m = 'stopmsg'
  fake.scripts.add({
    name: m,
    steps: [
      async () => {
        await call(s.api, 'POST', '/api/messages', { to: ['gsto'], subject: 'release freeze at 5pm' })
        return { text: 'finished' }
      },
      { text: 'read the notice' },
    ],
  })
  const r = await geminiRun(w, repo, marker(m), { env: { MUSTER_AGENT: 'gsto' } })
  expect(r.code, r.stderr).toBe(0)
  const reqs = fake.log.of(m)
  expect(reqs.length).toBe(2) // one more turn to read it, then Gemini CLI stops
  expect(reqs[1].text).toContain('release freeze at 5pm')
  expect(reqs[1].text).toContain('not from the user')
})

scenario('edit-reserve: a write reserves its file; the session ends when gemini exits and frees it', async () => {
  const repo = wired('--reserve', '30m')
  seed(repo, 'src/cart.ts', 'export const cart = 1\n')
  const [ma, mb] = ['ends', 'next']
  let held: any[] = []
  fake.scripts.add({
    name: ma,
    steps: [
      { tool: { name: 'write_file', input: { file_path: 'src/cart.ts', content: 'export const cart = 2\n' } } },
      async () => {
        const [session] = await sessionsOf(repo)
        held = (await call(s.api, 'GET', `/api/reservations?instance_id=${session.instance_id}`)).body
        return { text: 'done' }
      },
    ],
  })
  fake.scripts.add({ name: mb, steps: [{ tool: { name: 'write_file', input: { file_path: 'src/cart.ts', content: 'export const cart = 3\n' } } }, { text: 'done' }] })
  const a = await geminiRun(w, repo, marker(ma), { env: { MUSTER_AGENT: 'gena' } })
  expect(a.code, a.stderr).toBe(0)
  expect(held).toMatchObject([{ paths: ['src/cart.ts'], exclusive: true, reason: 'edit' }])
  const [ended] = await sessionsOf(repo)
  expect(ended.ended_at).not.toBeNull()
  expect((await call(s.api, 'GET', `/api/reservations?instance_id=${ended.instance_id}`)).body).toEqual([])
  const b = await geminiRun(w, repo, marker(mb), { env: { MUSTER_AGENT: 'genb' } })
  expect(b.code, b.stderr).toBe(0)
  expect(readFileSync(join(repo, 'src/cart.ts'), 'utf8')).toBe('export const cart = 3\n')
})

scenario('the CLI in the model shell acts as the session; the instance token never reaches the model', async () => {
  const repo = wired()
  const m = 'identity'
  fake.scripts.add({ name: m, steps: [{ tool: { name: 'run_shell_command', input: { command: 'muster send golga --subject "from inside gemini" ; echo "exit=$?"' } } }, { text: 'sent' }] })
  const r = await geminiRun(w, repo, marker(m), { env: { MUSTER_AGENT: 'gide' } })
  expect(r.code, r.stderr).toBe(0)
  expect(responses(fake.log.of(m)[1]).join('\n')).toContain('exit=0')
  const sent = (await call(s.api, 'GET', '/api/messages?to=golga')).body as any[]
  expect(sent.find((x) => x.subject === 'from inside gemini')).toMatchObject({ from: 'gide' })
  for (const req of fake.log.of(m)) expect(req.text).not.toMatch(/instance token: \S+|\b[0-9a-f]{64}\b/i)
  expect(existsSync(join(repo, '.muster'))).toBe(true)
})

scenario('a server that cannot be reached does not stop Gemini CLI: the write goes through, the user is told', async () => {
  const repo = w.repo()
  const dead = { SERVICE_SERVER: 'http://127.0.0.1:9' }
  const r0 = muster(w, repo, ['init', 'gemini-cli', '--trust'], dead)
  expect(r0.code, r0.stderr).toBe(0)
  const m = 'unreachable'
  fake.scripts.add({ name: m, steps: [{ tool: { name: 'write_file', input: { file_path: 'notes.md', content: 'still works\n' } } }, { text: 'done' }] })
  const r = await geminiRun(w, repo, marker(m), { env: { MUSTER_AGENT: 'gdead', ...dead } })
  expect(r.code, r.stderr).toBe(0)
  expect(readFileSync(join(repo, 'notes.md'), 'utf8')).toBe('still works\n')
  // `muster hook` says why on stderr and exits 0: Gemini CLI shows that line to its user.
  expect(r.stdout + r.stderr).toContain('muster hook: cannot reach http://127.0.0.1:9')
})

scenario('a resumed session (gemini --resume latest) registers again under its id and is briefed again', async () => {
  const repo = wired()
  const [m1, m2] = ['first-run', 'resumed-run']
  fake.scripts.add({ name: m1, steps: [{ text: 'the first run answers' }] })
  fake.scripts.add({ name: m2, steps: [{ text: 'two' }] })
  const a = await geminiRun(w, repo, marker(m1), { env: { MUSTER_AGENT: 'gres' } })
  expect(a.code, a.stderr).toBe(0)
  const [ended] = await sessionsOf(repo)
  expect(ended.ended_at).not.toBeNull()
  const b = await geminiRun(w, repo, marker(m2), { env: { MUSTER_AGENT: 'gres' }, args: ['--resume', 'latest'] })
  expect(b.code, b.stderr).toBe(0)
  // The same session id (one row), started again after it ended, and ended again when the run did.
  const [again, ...more] = await sessionsOf(repo)
  expect(more).toEqual([])
  expect(again).toMatchObject({ session_id: ended.session_id, name: 'gres' })
  expect(again.started_at > ended.ended_at).toBe(true)
  expect(again.ended_at).not.toBeNull()
  expect(fake.log.of(m2)[0].text).toContain('Muster coordination: you are "gres"')
  expect(fake.log.of(m2)[0].text).toContain('the first run answers') // the first run's conversation: resumed indeed
})

test('the fake model server saw no request it does not know', () => {
  expect([...fake.log.unknown.keys()]).toEqual([])
})

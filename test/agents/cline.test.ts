// The real Cline CLI (pinned, installed from npm) driven through its own loop against a fake
// Chat Completions API and a real Muster server: `muster init cline` in a scratch git
// repository, then plain `cline --json "<prompt>"` runs (one task each). Each scenario asserts
// what reached the model (the fake logs every request) and what Muster and the files show.
import { afterAll, beforeAll, expect, test } from 'bun:test'
import { chmodSync, existsSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { call, register, startServer, type TestServer } from '../helpers'
import { startFakeChat, type FakeChat } from './fake-chat'
import { marker } from './lib/script'
import { clineRun, clineWorld, eventually, hookContexts, jsonLines, muster, toolResults, type ClineWorld } from './cline'

let s: TestServer
let fake: FakeChat
let w: ClineWorld

beforeAll(async () => {
  s = await startServer()
  fake = startFakeChat()
  w = await clineWorld({ modelUrl: fake.baseUrl, server: s.api })
}, 240_000)

afterAll(async () => {
  fake?.stop()
  await s?.cleanup()
  w?.cleanup()
})

/** A scratch repository wired by `muster init cline …` (asserted to succeed). */
function wired(...flags: string[]): string {
  const repo = w.repo()
  const r = muster(w, repo, ['init', 'cline', ...flags])
  expect(r.code, r.stderr).toBe(0)
  return repo
}

const sessionsOf = async (root: string) => ((await call(s.api, 'GET', '/api/sessions')).body as any[]).filter((x) => x.root === root)
const reservationsOf = async (instance: string) => (await call(s.api, 'GET', `/api/reservations?instance_id=${instance}`)).body as any[]

test('muster init cline writes executable hook files, the plugin and a rules file; a second run changes nothing', () => {
  const repo = w.repo()
  writeFileSync(join(repo, '.gitignore'), '')
  Bun.spawnSync(['mkdir', '-p', join(repo, '.clinerules/hooks')])
  // A hook file of the user's own keeps its name: ours takes the next one Cline reads.
  writeFileSync(join(repo, '.clinerules/hooks/PostToolUse'), '#!/bin/sh\necho {}\n', { mode: 0o755 })
  const first = muster(w, repo, ['init', 'cline', '--reserve', '30m'])
  expect(first.code, first.stderr).toBe(0)
  const files = JSON.parse(first.stdout).files.map((f: any) => `${f.path} ${f.action}`)
  expect(files).toEqual([
    '.clinerules/hooks/PostToolUse.sh created',
    '.clinerules/hooks/TaskComplete created',
    '.clinerules/hooks/TaskError created',
    '.clinerules/hooks/SessionShutdown created',
    '.cline/plugins/muster.js created',
    '.clinerules/muster.md created',
  ])
  for (const hook of ['PostToolUse.sh', 'TaskComplete', 'TaskError', 'SessionShutdown']) {
    const path = join(repo, '.clinerules/hooks', hook)
    expect(statSync(path).mode & 0o777).toBe(0o755)
    expect(readFileSync(path, 'utf8')).toContain(`exec muster hook cline --server ${s.api} --reserve 30m`)
  }
  expect(readFileSync(join(repo, '.clinerules/hooks/PostToolUse'), 'utf8')).toBe('#!/bin/sh\necho {}\n')
  expect(readFileSync(join(repo, '.cline/plugins/muster.js'), 'utf8')).toContain(JSON.stringify(['muster', 'hook', 'cline', '--server', s.api, '--reserve', '30m']))
  expect(readFileSync(join(repo, '.clinerules/muster.md'), 'utf8')).toContain('How this team of agents coordinates (Muster)')
  const again = muster(w, repo, ['init', 'cline', '--reserve', '30m'])
  expect(again.code, again.stderr).toBe(0)
  expect(JSON.parse(again.stdout).files.every((f: any) => f.action === 'unchanged')).toBe(true)
  // No token in any file written.
  for (const f of JSON.parse(first.stdout).files) expect(readFileSync(join(repo, f.path), 'utf8')).not.toMatch(/Bearer|token=/i)
  expect(JSON.parse(first.stdout).notes[0]).toContain(`cline mcp add muster --transport streamableHttp --header "Authorization: Bearer $SERVICE_TOKEN" --yes ${s.api}/mcp`)

  // muster doctor checks the wiring: fine, then a hook not executable and the plugin gone.
  const fine = muster(w, repo, ['doctor'])
  expect(fine.stdout).toContain('ok   hooks cline: .clinerules/hooks/PostToolUse.sh, .clinerules/hooks/TaskComplete')
  expect(fine.stdout).not.toContain('no agent is wired')
  chmodSync(join(repo, '.clinerules/hooks/SessionShutdown'), 0o644)
  rmSync(join(repo, '.cline/plugins/muster.js'))
  const broken = muster(w, repo, ['doctor'])
  expect(broken.code).toBe(3)
  expect(broken.stdout).toContain('FAIL hooks cline: lacks .cline/plugins/muster.js: no write is denied')
  expect(broken.stdout).toContain('FAIL hooks cline: .clinerules/hooks/SessionShutdown not executable')
})

test('a task registers as a session, briefed: the briefing and the rules file reach the model', async () => {
  const repo = wired()
  const holder = await register(s, 'bri-holder')
  const project = repo.split('/').pop()
  await call(s.api, 'POST', '/api/reservations', { project, paths: ['src/billing/**'], reason: 'billing rewrite' }, holder.h)
  const m = 'brief'
  let during: any[] = []
  fake.scripts.add({
    name: m,
    steps: [
      async () => {
        during = await sessionsOf(repo)
        return { text: 'looking', tool: { name: 'run_commands', input: { commands: ['ls src'] } } }
      },
      { text: 'read it' },
    ],
  })
  const r = await clineRun(w, repo, `${marker(m)} look around`, { env: { MUSTER_AGENT: 'bri' } })
  expect(r.code, r.stderr).toBe(0)
  expect(during).toMatchObject([{ agent: 'cline', name: 'bri', root: repo, project, ended_at: null }])
  // The session is Cline's own (what `cline history` lists), not one agent's conversation.
  expect(existsSync(join(w.home, '.cline/data/sessions', during[0].session_id))).toBe(true)
  const [first, second] = fake.log.of(m)
  expect(first.text).toContain('How this team of agents coordinates (Muster)') // .clinerules/muster.md
  const context = hookContexts(second).join('\n')
  expect(context).toContain('Muster coordination: you are "bri"')
  expect(context).toContain('src/billing/**: bri-holder (active), exclusive')
})

test("an edit of a file another agent holds is skipped, the file unchanged, the reason reaching the model; the task goes on", async () => {
  const repo = wired()
  const holder = await register(s, 'ada')
  const project = repo.split('/').pop()
  const held = await call(s.api, 'POST', '/api/reservations', { project, paths: ['src/app.ts'], reason: 'answer refactor' }, holder.h)
  expect(held.status).toBe(201)
  const m = 'denied'
  fake.scripts.add({
    name: m,
    steps: [
      { text: 'editing', tool: { name: 'editor', input: { path: 'src/app.ts', old_text: 'export const answer = 41', new_text: 'export const answer = 42' } } },
      { text: 'then the shell', tool: { name: 'run_commands', input: { commands: ["echo 'export const answer = 43' > src/app.ts"] } } },
      { text: 'asking ada' },
    ],
  })
  const r = await clineRun(w, repo, `${marker(m)} bump the answer`, { env: { MUSTER_AGENT: 'bob' } })
  expect(r.code, r.stderr).toBe(0)
  expect(readFileSync(join(repo, 'src/app.ts'), 'utf8')).toBe('export const answer = 41\n')
  const [, afterEdit, afterShell] = fake.log.of(m)
  const edit = toolResults(afterEdit).join('\n')
  expect(edit).toContain('src/app.ts')
  expect(edit).toContain('by ada (active)')
  expect(edit).toContain('answer refactor')
  expect(edit).toContain('muster send ada')
  expect(toolResults(afterShell).at(-1)).toContain('by ada (active)')
  expect(jsonLines(r, 'run_result')[0]?.finishReason).toBe('completed')
})

test('a gpt model gets apply_patch instead of editor: a patch of a held file is skipped the same way', async () => {
  const repo = wired()
  const holder = await register(s, 'pat')
  const project = repo.split('/').pop()
  expect((await call(s.api, 'POST', '/api/reservations', { project, paths: ['src/**'], reason: 'moving files' }, holder.h)).status).toBe(201)
  const m = 'patched'
  const patch = '*** Begin Patch\n*** Update File: src/app.ts\n@@\n-export const answer = 41\n+export const answer = 42\n*** End Patch'
  fake.scripts.add({ name: m, steps: [{ text: 'patching', tool: { name: 'apply_patch', input: { input: patch } } }, { text: 'asking pat' }] })
  const r = await clineRun(w, repo, `${marker(m)} bump it`, { env: { MUSTER_AGENT: 'gus' }, model: 'fake-gpt-5' })
  expect(r.code, r.stderr).toBe(0)
  const [first, second] = fake.log.of(m)
  expect((first.body.tools as any[]).map((t) => t.function?.name)).toContain('apply_patch')
  expect(readFileSync(join(repo, 'src/app.ts'), 'utf8')).toBe('export const answer = 41\n')
  const reason = JSON.parse(toolResults(second).at(-1)!).error
  expect(reason).toContain('src/app.ts: reserved as "src/**" by pat (active), reason "moving files"')
})

test('a message sent mid-task reaches the model after the next tool call', async () => {
  const repo = wired()
  const m = 'midmsg'
  fake.scripts.add({
    name: m,
    steps: [
      async () => {
        await call(s.api, 'POST', '/api/messages', { to: ['mia'], subject: 'schema moved to v2', body: 'pull before you touch db/' })
        return { text: 'checking', tool: { name: 'run_commands', input: { commands: ['true'] } } }
      },
      { text: 'noted' },
    ],
  })
  const r = await clineRun(w, repo, `${marker(m)} go`, { env: { MUSTER_AGENT: 'mia' } })
  expect(r.code, r.stderr).toBe(0)
  const [, next] = fake.log.of(m)
  const context = hookContexts(next).join('\n')
  expect(context).toContain('schema moved to v2')
  expect(context).toContain('pull before you touch db/')
  const sent = (await call(s.api, 'GET', '/api/messages?to=mia')).body as any[]
  expect(sent.length).toBe(1)
})

/** The model's editor call taking src/app.ts's answer from `from` to `to`. */
const bump = (from: number, to: number) => ({ text: 'editing', tool: { name: 'editor', input: { path: 'src/app.ts', old_text: `answer = ${from}`, new_text: `answer = ${to}` } } })

/** A script that edits src/app.ts, then notes what the session holds (and does `then`) before it says done. */
function editThenLook(repo: string, name: string, then: () => Promise<void> | void = () => {}): { held: any[] } {
  const seen = { held: [] as any[] }
  const look = async () => {
    const [session] = await sessionsOf(repo)
    seen.held = await reservationsOf(session.instance_id)
    await then()
    return { text: 'done' }
  }
  fake.scripts.add({ name, steps: [bump(41, 42), look] })
  return seen
}

/** `name`'s session in `repo` once ended (Cline runs its end hooks detached: they may finish after it exits): its instance gone, nothing held. */
async function endedAndReleased(repo: string, name: string) {
  const ended = await eventually(async () => (await sessionsOf(repo)).find((x) => x.name === name && x.ended_at !== null))
  expect(await reservationsOf(ended.instance_id)).toEqual([])
  expect((await call(s.api, 'GET', `/api/instances/${ended.instance_id}`)).status).toBe(404)
}

test('the session ends when the task completes, and what it held is free for the next', async () => {
  const repo = wired('--reserve', '30m')
  const seen = editThenLook(repo, 'ends')
  fake.scripts.add({ name: 'next', steps: [bump(42, 43), { text: 'done' }] })
  const a = await clineRun(w, repo, `${marker('ends')} edit`, { env: { MUSTER_AGENT: 'ena' } })
  expect(a.code, a.stderr).toBe(0)
  expect(seen.held).toMatchObject([{ paths: ['src/app.ts'], exclusive: true, reason: 'edit' }])
  await endedAndReleased(repo, 'ena')
  const b = await clineRun(w, repo, `${marker('next')} edit again`, { env: { MUSTER_AGENT: 'enb' } })
  expect(b.code, b.stderr).toBe(0)
  expect(readFileSync(join(repo, 'src/app.ts'), 'utf8')).toBe('export const answer = 43\n')
})

test('Cline interrupted (SIGINT) mid-task: the session ends and what it held is released', async () => {
  const repo = wired('--reserve', '30m')
  let cline: { kill(signal?: number | NodeJS.Signals): void } | null = null
  // As Ctrl-C does, while the model thinks.
  const seen = editThenLook(repo, 'interrupted', async () => {
    cline!.kill('SIGINT')
    await Bun.sleep(2000)
  })
  const r = await clineRun(w, repo, `${marker('interrupted')} edit`, { env: { MUSTER_AGENT: 'int' }, spawned: (p) => (cline = p) })
  expect(jsonLines(r, 'run_result').map((x) => x.finishReason)).not.toContain('completed') // no TaskComplete: SessionShutdown ends it
  expect(seen.held).toMatchObject([{ paths: ['src/app.ts'], reason: 'edit' }])
  await endedAndReleased(repo, 'int')
})

test("a sub-agent's edits are its session's: the lead's file is not denied to it, and its end ends nothing", async () => {
  const repo = wired('--reserve', '30m')
  const other = await register(s, 'oth')
  expect((await call(s.api, 'POST', '/api/reservations', { project: repo.split('/').pop(), paths: ['README.md'], reason: 'docs pass' }, other.h)).status).toBe(201)
  let during: any[] = []
  fake.scripts.add({ name: 'lead', steps: [bump(41, 42), { text: 'delegating', tool: { name: 'spawn_agent', input: { systemPrompt: 'You edit files.', task: `${marker('sub')} bump the answer again` } } }, { text: 'all done' }] })
  fake.scripts.add({
    name: 'sub',
    steps: [
      bump(42, 43),
      { text: 'and the readme', tool: { name: 'editor', input: { path: 'README.md', old_text: '# scratch', new_text: '# answer' } } },
      async () => {
        during = await sessionsOf(repo)
        return { text: 'bumped' }
      },
    ],
  })
  const r = await clineRun(w, repo, `${marker('lead')} bump twice`, { env: { MUSTER_AGENT: 'lea' } })
  expect(r.code, r.stderr).toBe(0)
  expect(fake.log.of('sub').length).toBeGreaterThan(0)
  expect(readFileSync(join(repo, 'src/app.ts'), 'utf8')).toBe('export const answer = 43\n')
  // One session, the lead's, live while its sub-agent worked.
  expect(during).toMatchObject([{ name: 'lea', ended_at: null }])
  const [, afterBump, afterReadme] = fake.log.of('sub')
  expect(toolResults(afterBump).join('\n')).not.toContain('Muster denied')
  // The sub-agent's calls are checked (the plugin runs for it too): another agent's file is denied to it.
  expect(toolResults(afterReadme).at(-1)).toContain('by oth (active)')
  expect(readFileSync(join(repo, 'README.md'), 'utf8')).toBe('# scratch\n')
  await endedAndReleased(repo, 'lea')
  expect((await sessionsOf(repo)).length).toBe(1)
})

test('a server that does not answer: the plugin gives up before Cline fails the task (3 s), and the edit runs', async () => {
  // Accepts every request and never answers.
  const silent = Bun.serve({ hostname: '127.0.0.1', port: 0, idleTimeout: 0, fetch: () => new Promise<Response>(() => {}) })
  try {
    const repo = w.repo()
    const init = muster(w, repo, ['init', 'cline', '--server', `http://127.0.0.1:${silent.port}`])
    expect(init.code, init.stderr).toBe(0)
    const m = 'silent'
    fake.scripts.add({ name: m, steps: [bump(41, 45), { text: 'done' }] })
    const r = await clineRun(w, repo, `${marker(m)} edit`, { env: { MUSTER_AGENT: 'sil' } })
    expect(r.code, r.stderr).toBe(0)
    expect(jsonLines(r, 'run_result')[0]?.finishReason).toBe('completed')
    expect(readFileSync(join(repo, 'src/app.ts'), 'utf8')).toBe('export const answer = 45\n')
  } finally {
    silent.stop(true)
  }
})

test('with no server to reach, Cline goes on: hooks and plugin fail open', async () => {
  const repo = w.repo()
  const r0 = muster(w, repo, ['init', 'cline', '--server', 'http://127.0.0.1:9'])
  expect(r0.code, r0.stderr).toBe(0)
  const m = 'offline'
  fake.scripts.add({ name: m, steps: [bump(41, 44), { text: 'done' }] })
  const r = await clineRun(w, repo, `${marker(m)} edit`, { env: { MUSTER_AGENT: 'off' } })
  expect(r.code, r.stderr).toBe(0)
  expect(readFileSync(join(repo, 'src/app.ts'), 'utf8')).toBe('export const answer = 44\n')
  expect(existsSync(join(repo, '.cline/plugins/muster.js'))).toBe(true)
})

test("the model's shell acts as the session's instance: `muster reserve` there is the session's", async () => {
  const repo = wired()
  const project = repo.split('/').pop()
  const m = 'shell'
  let mine: any[] = []
  let session: any = null
  fake.scripts.add({
    name: m,
    steps: [
      { text: 'reserving', tool: { name: 'run_commands', input: { commands: [`muster reserve ${project} 'docs/**' --ttl 10m --reason notes; echo "exit=$?"`] } } },
      async () => {
        ;[session] = await sessionsOf(repo)
        mine = await reservationsOf(session.instance_id)
        return { text: 'done' }
      },
    ],
  })
  const r = await clineRun(w, repo, `${marker(m)} reserve the docs`, { env: { MUSTER_AGENT: 'shy' } })
  expect(r.code, r.stderr).toBe(0)
  expect(toolResults(fake.log.of(m)[1]).join('\n')).toContain('exit=0')
  expect(session).toMatchObject({ agent: 'cline', name: 'shy' })
  expect(mine).toMatchObject([{ paths: ['docs/**'], reason: 'notes' }])
})

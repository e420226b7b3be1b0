// The real Codex CLI (pinned, installed from npm) driven through its own loop against a
// fake OpenAI Responses API and a real Muster server: `muster init codex` in a scratch git
// repository, then plain `codex exec` runs. Each scenario asserts what reached the model
// (the fake logs every request) and what Muster and the files show afterwards.
import { afterAll, beforeAll, expect, test } from 'bun:test'
import { existsSync, readFileSync, writeFileSync, mkdirSync } from 'node:fs'
import { join } from 'node:path'
import { call, eventually, register, startServer, type TestServer } from '../helpers'
import { codexHooksTrust } from '../../cli/codex-trust'
import { startFakeOpenAI, type FakeOpenAI } from './fake-openai'
import { marker } from './lib/script'
import { codexExec, codexWorld, muster, outputs, patchAdd, patchUpdate, type CodexWorld } from './codex'

/**
 * Scenarios that fail only because another issue's work has not landed: reported as expected
 * failures without failing the run (and announced when they start to pass).
 */
const awaiting: Record<string, string> = {}

let s: TestServer
let fake: FakeOpenAI
let w: CodexWorld

beforeAll(async () => {
  s = await startServer()
  fake = startFakeOpenAI()
  w = await codexWorld({ modelUrl: fake.baseUrl, server: s.api })
}, 240_000)

afterAll(async () => {
  fake?.stop()
  await s?.cleanup()
  w?.cleanup()
})

/** One scenario, one line in the output; an awaited one passes when it fails for its issue. */
function scenario(name: string, fn: () => Promise<void>, timeout = 120_000) {
  test(
    name,
    async () => {
      const waitingFor = awaiting[name]
      try {
        await fn()
      } catch (err) {
        if (!waitingFor) throw err
        console.log(`codex: expected failure (awaiting ${waitingFor}): ${name}: ${String((err as Error).message).split('\n')[0]}`)
        return
      }
      console.log(waitingFor ? `codex: NOW PASSES, remove from awaiting (${waitingFor}): ${name}` : `codex: ok: ${name}`)
    },
    timeout,
  )
}

/** A scratch repository wired by `muster init codex …` (asserted to succeed). */
function wired(...flags: string[]): string {
  const repo = w.repo()
  const r = muster(w, repo, ['init', 'codex', ...flags])
  expect(r.code, r.stderr).toBe(0)
  return repo
}

const sessionsOf = async (root: string) => ((await call(s.api, 'GET', '/api/sessions')).body as any[]).filter((x) => x.root === root)

function seed(repo: string, path: string, text: string) {
  mkdirSync(join(repo, path, '..'), { recursive: true })
  writeFileSync(join(repo, path), text)
}

scenario('untrusted hooks never run; after muster init codex --trust a plain codex exec runs them', async () => {
  const repo = wired()
  const trust = codexHooksTrust(repo, w.env)
  expect(trust.ok).toBe(false)
  expect(trust.problem).toContain('not trusted')
  // muster doctor says so, with the fix
  const doctor = muster(w, repo, ['doctor'])
  expect(doctor.code).toBe(3)
  const line = doctor.stdout.split('\n').find((l) => l.includes('codex trust:')) ?? ''
  expect(line).toStartWith('FAIL codex trust:')
  expect(line).toContain('Codex hooks not trusted: 7 untrusted')
  expect(line).toContain(`-- fix: run \`muster init codex --trust\` in ${repo}`)
  const m = 'trust'
  fake.scripts.add({ name: m, steps: [{ text: 'nothing to do' }] })
  const before = await codexExec(w, repo, `${marker(m)} first`, { env: { MUSTER_AGENT: 'tru' } })
  expect(before.code, before.stderr).toBe(0)
  expect(await sessionsOf(repo)).toEqual([]) // Codex ran none of them, and said nothing

  const again = muster(w, repo, ['init', 'codex', '--trust'])
  expect(again.code, again.stderr).toBe(0)
  expect(JSON.parse(again.stdout).trusted.hooks.length).toBe(7)
  expect(codexHooksTrust(repo, w.env)).toMatchObject({ ok: true, problem: null })
  expect(muster(w, repo, ['doctor']).stdout).toContain('ok   codex trust: the project and its 7 Muster hooks are trusted')
  const after = await codexExec(w, repo, `${marker(m)} second`, { env: { MUSTER_AGENT: 'tru' } })
  expect(after.code, after.stderr).toBe(0)
  expect(after.stderr).toContain('hook: SessionStart Completed')
  expect(await sessionsOf(repo)).toMatchObject([{ agent: 'codex', name: 'tru' }])
})

scenario('a session registers and is briefed: the briefing reaches the model', async () => {
  const repo = wired('--trust')
  const holder = await register(s, 'bri-holder')
  const project = repo.split('/').pop()
  await call(s.api, 'POST', '/api/reservations', { project, paths: ['src/billing/**'], reason: 'billing rewrite' }, holder.h)
  const m = 'brief'
  fake.scripts.add({ name: m, steps: [{ text: 'read it' }] })
  const r = await codexExec(w, repo, marker(m), { env: { MUSTER_AGENT: 'bri' } })
  expect(r.code, r.stderr).toBe(0)
  const [first] = fake.log.of(m)
  expect(first.text).toContain('Muster coordination: you are "bri"')
  expect(first.text).toContain('src/billing/**: bri-holder (active), exclusive')
  const [session] = await sessionsOf(repo)
  expect(session).toMatchObject({ agent: 'codex', name: 'bri', root: repo, project })
})

scenario('an apply_patch edit reserves its file (edit-reserve mode)', async () => {
  const repo = wired('--trust', '--reserve', '30m')
  const m = 'reserve'
  let held: any[] = []
  fake.scripts.add({
    name: m,
    steps: [
      { patch: patchAdd('src/app.ts', 'export const app = 1') },
      async () => {
        const [session] = await sessionsOf(repo)
        held = (await call(s.api, 'GET', `/api/reservations?instance_id=${session.instance_id}`)).body
        return { text: 'edited' }
      },
    ],
  })
  const r = await codexExec(w, repo, marker(m), { env: { MUSTER_AGENT: 'res' } })
  expect(r.code, r.stderr).toBe(0)
  expect(readFileSync(join(repo, 'src/app.ts'), 'utf8')).toBe('export const app = 1\n')
  expect(held).toMatchObject([{ paths: ['src/app.ts'], exclusive: true, reason: 'edit' }])
  expect(outputs(fake.log.of(m)[1]).join('\n')).toContain('Success')
})

scenario("a second agent's edit of a held file is denied, the file unchanged, the reason reaches its model", async () => {
  const repo = wired('--trust', '--reserve', '30m')
  seed(repo, 'src/auth/login.ts', 'export const login = 1\nexport const logout = 1\n')
  const [ma, mb] = ['holder', 'denied']
  let second: Awaited<ReturnType<typeof codexExec>> | null = null
  let during = ''
  // bob runs while ada's session holds the file: ada's second turn starts him and waits.
  // bob's patch applies cleanly over ada's edit: only the deny keeps it out.
  fake.scripts.add({ name: mb, steps: [{ patch: patchUpdate('src/auth/login.ts', 'export const logout = 1', 'export const logout = 3') }, { text: 'denied, asking ada' }] })
  fake.scripts.add({
    name: ma,
    steps: [
      { patch: patchUpdate('src/auth/login.ts', 'export const login = 1', 'export const login = 2') },
      async () => {
        second = await codexExec(w, repo, marker(mb), { env: { MUSTER_AGENT: 'bob' } })
        during = readFileSync(join(repo, 'src/auth/login.ts'), 'utf8')
        return { text: 'done' }
      },
    ],
  })
  const first = await codexExec(w, repo, marker(ma), { env: { MUSTER_AGENT: 'ada' } })
  expect(first.code, first.stderr).toBe(0)
  expect(second!.code, second!.stderr).toBe(0)
  expect(during).toBe('export const login = 2\nexport const logout = 1\n') // ada's edit, not bob's
  const reason = outputs(fake.log.of(mb)[1]).join('\n')
  expect(reason).toContain('src/auth/login.ts')
  expect(reason).toContain('by ada (active)')
  expect(reason).toContain('muster send ada')
})

scenario('the session ends when codex exec exits and its files are free for the next', async () => {
  const repo = wired('--trust', '--reserve', '30m')
  seed(repo, 'src/cart.ts', 'export const cart = 1\n')
  const [ma, mb] = ['ends', 'next']
  fake.scripts.add({ name: ma, steps: [{ patch: patchUpdate('src/cart.ts', 'export const cart = 1', 'export const cart = 2') }, { text: 'done' }] })
  fake.scripts.add({ name: mb, steps: [{ patch: patchUpdate('src/cart.ts', 'export const cart = 2', 'export const cart = 3') }, { text: 'done' }] })
  const a = await codexExec(w, repo, marker(ma), { env: { MUSTER_AGENT: 'ena' } })
  expect(a.code, a.stderr).toBe(0)
  const [ended] = await sessionsOf(repo)
  expect(ended.ended_at).not.toBeNull()
  expect((await call(s.api, 'GET', `/api/reservations?instance_id=${ended.instance_id}`)).body).toEqual([])
  expect((await call(s.api, 'GET', `/api/instances/${ended.instance_id}`)).status).toBe(404)
  const b = await codexExec(w, repo, marker(mb), { env: { MUSTER_AGENT: 'enb' } })
  expect(b.code, b.stderr).toBe(0)
  expect(readFileSync(join(repo, 'src/cart.ts'), 'utf8')).toBe('export const cart = 3\n')
  expect(outputs(fake.log.of(mb)[1]).join('\n')).toContain('Success')
})

scenario('under --sandbox workspace-write the CLI reaches the server once init --allow-network set it', async () => {
  const repo = wired('--trust')
  const [m1, m2] = ['sandboxed', 'network']
  const cmd = 'muster instances list -o json; echo "exit=$?"'
  fake.scripts.add({ name: m1, steps: [{ shell: cmd }, { text: 'done' }] })
  fake.scripts.add({ name: m2, steps: [{ shell: cmd }, { text: 'done' }] })
  const blocked = await codexExec(w, repo, marker(m1), { sandbox: 'workspace-write', env: { MUSTER_AGENT: 'san' } })
  expect(blocked.code, blocked.stderr).toBe(0)
  // The command's stderr and stdout reach the model in whichever order Codex read them.
  const refused = outputs(fake.log.of(m1)[1]).join('\n')
  expect(refused).toMatch(/cannot reach .*EPERM/)
  expect(refused).toContain('exit=1')

  const init = muster(w, repo, ['init', 'codex', '--trust', '--allow-network'])
  expect(init.code, init.stderr).toBe(0)
  expect(readFileSync(join(repo, '.codex/config.toml'), 'utf8')).toContain('[sandbox_workspace_write]\nnetwork_access = true')
  const open = await codexExec(w, repo, marker(m2), { sandbox: 'workspace-write', env: { MUSTER_AGENT: 'san' } })
  expect(open.code, open.stderr).toBe(0)
  const out = outputs(fake.log.of(m2)[1]).join('\n')
  expect(out).toContain('exit=0')
  expect(out).toContain('"name":"san"')
})

scenario('a message reaches the model mid-session (after a tool call)', async () => {
  const repo = wired('--trust')
  const m = 'midmsg'
  fake.scripts.add({
    name: m,
    steps: [
      async () => {
        await call(s.api, 'POST', '/api/messages', { to: ['mia'], subject: 'schema moved to v2', body: 'pull before you touch db/' })
        return { shell: 'true' }
      },
      { text: 'noted' },
    ],
  })
  const r = await codexExec(w, repo, marker(m), { env: { MUSTER_AGENT: 'mia' } })
  expect(r.code, r.stderr).toBe(0)
  const [, next] = fake.log.of(m)
  expect(next.text).toContain('schema moved to v2')
  expect(next.text).toContain('pull before you touch db/')
})

scenario('a message that arrives before Stop reaches the model as a Muster notice, not a user request', async () => {
  const repo = wired('--trust')
  const m = 'stopmsg'
  fake.scripts.add({
    name: m,
    steps: [
      async () => {
        await call(s.api, 'POST', '/api/messages', { to: ['sto'], subject: 'release freeze at 5pm' })
        return { text: 'finished' }
      },
      { text: 'read the notice' },
    ],
  })
  const r = await codexExec(w, repo, marker(m), { env: { MUSTER_AGENT: 'sto' } })
  expect(r.code, r.stderr).toBe(0)
  const reqs = fake.log.of(m)
  expect(reqs.length).toBe(2) // one more turn to read it, then Codex stops
  const prompt = ((reqs[1].body.input as any[]).at(-1)?.content ?? []).map((c: any) => c.text).join('')
  expect(prompt).toContain('<hook_prompt')
  expect(prompt).toContain('release freeze at 5pm')
  expect(prompt).toContain('not from the user')
})

scenario('MCP connects (SERVICE_TOKEN set) and its tools are callable from the model', async () => {
  const repo = wired('--trust')
  const m = 'mcp'
  fake.scripts.add({ name: m, steps: [{ search: 'discover instances' }, { call: 'discover_instances', namespace: 'mcp__muster', arguments: { name: 'mcq' } }, { text: 'found' }] })
  // Codex starts no MCP server whose bearer_token_env_var is unset: a token is needed even with auth off.
  const r = await codexExec(w, repo, marker(m), { env: { MUSTER_AGENT: 'mcq', SERVICE_TOKEN: 'unused-auth-off' } })
  expect(r.code, r.stderr).toBe(0)
  const [, found, called] = fake.log.of(m)
  const search = (found.body.input as any[]).find((i) => i.type === 'tool_search_output')
  expect(search.tools[0]).toMatchObject({ type: 'namespace', name: 'mcp__muster' })
  expect(search.tools[0].tools.map((t: any) => t.name)).toContain('discover_instances')
  const out = outputs(called).join('\n')
  expect(out).toContain('"name":"mcq"')
  expect(out).toContain(repo)
})

scenario('the CLI in the model shell acts as the session', async () => {
  const repo = wired('--trust', '--allow-network')
  const m = 'identity'
  fake.scripts.add({ name: m, steps: [{ shell: 'muster send olga --subject "from inside ide" ; echo "exit=$?"' }, { text: 'sent' }] })
  const r = await codexExec(w, repo, marker(m), { env: { MUSTER_AGENT: 'ide' } })
  expect(r.code, r.stderr).toBe(0)
  expect(outputs(fake.log.of(m)[1]).join('\n')).toContain('exit=0')
  const sent = (await call(s.api, 'GET', '/api/messages?to=olga')).body as any[]
  expect(sent.find((x) => x.subject === 'from inside ide')).toMatchObject({ from: 'ide' })
})

scenario("muster register of the session's own name inside it is the same instance, and its CLI reservation never denies its own edit", async () => {
  const repo = wired('--trust', '--allow-network')
  seed(repo, 'src/app.ts', 'export const app = 1\n')
  const project = repo.split('/').pop()
  const m = 'same'
  let session: any = null
  let held: any[] = []
  let named: any[] = []
  fake.scripts.add({
    name: m,
    steps: [
      async () => {
        ;[session] = await sessionsOf(repo)
        return { shell: 'muster register sam; echo "exit=$?"' }
      },
      { shell: `muster reserve ${project} "src/**" --ttl 10m --reason refactor; echo "exit=$?"` },
      { patch: patchUpdate('src/app.ts', 'export const app = 1', 'export const app = 2') },
      async () => {
        held = (await call(s.api, 'GET', `/api/reservations?project=${project}`)).body
        named = (await call(s.api, 'GET', '/api/instances?name=sam')).body
        return { text: 'done' }
      },
    ],
  })
  const r = await codexExec(w, repo, marker(m), { env: { MUSTER_AGENT: 'sam' } })
  expect(r.code, r.stderr).toBe(0)
  const [registered, reserved, patched] = [1, 2, 3].map((i) => outputs(fake.log.of(m)[i]).join('\n'))
  expect(registered).toContain(`"id":"${session.instance_id}"`)
  expect(registered).toContain('"resumed":true')
  // the session's token is in the shell already: not in what the model reads
  expect(registered).not.toMatch(/\b[0-9a-f]{64}\b/)
  expect(registered).toContain('exit=0')
  expect(reserved).toContain('exit=0')
  expect(patched).toContain('Success')
  expect(readFileSync(join(repo, 'src/app.ts'), 'utf8')).toBe('export const app = 2\n')
  // one "sam", the session's: the CLI's reservation is his, and his edit went through it
  expect(held.map((x) => [x.paths, x.instance_id])).toEqual([[['src/**'], session.instance_id]])
  expect(named.map((i) => i.id)).toEqual([session.instance_id])
})

scenario('two Codex sessions in one checkout each keep their own identity and message each other by name', async () => {
  const repo = wired('--trust', '--allow-network')
  const [ma, mb] = ['two-ada', 'two-bob']
  let bob: Awaited<ReturnType<typeof codexExec>> | null = null
  fake.scripts.add({ name: mb, steps: [{ shell: 'muster send ada-two --subject "on it" --body "looking now"; echo "exit=$?"' }, { text: 'replied' }] })
  fake.scripts.add({
    name: ma,
    steps: [
      { shell: 'muster send bob-two --subject "tests are red" --body "please look at src/app.ts"; echo "exit=$?"' },
      // bob works in the same checkout while ada's session is open; her next tool call brings his answer
      async () => {
        bob = await codexExec(w, repo, marker(mb), { env: { MUSTER_AGENT: 'bob-two' } })
        return { shell: 'true' }
      },
      { text: 'read it' },
    ],
  })
  const ada = await codexExec(w, repo, marker(ma), { env: { MUSTER_AGENT: 'ada-two' } })
  expect(ada.code, ada.stderr).toBe(0)
  expect(bob!.code, bob!.stderr).toBe(0)
  expect(outputs(fake.log.of(ma)[1]).join('\n')).toContain('exit=0')
  expect(outputs(fake.log.of(mb)[1]).join('\n')).toContain('exit=0')
  expect(fake.log.of(mb)[0].text).toContain('please look at src/app.ts')
  expect(fake.log.of(ma)[2].text).toContain('looking now')
  const sent = ((await call(s.api, 'GET', '/api/messages')).body as any[]).filter((x) => /-two$/.test(x.from))
  expect(sent.map((x) => [x.from, x.to, x.subject]).sort()).toEqual([
    ['ada-two', ['bob-two'], 'tests are red'],
    ['bob-two', ['ada-two'], 'on it'],
  ])
})

scenario('the instance token never reaches the model', async () => {
  const repo = wired('--trust')
  const m = 'token'
  fake.scripts.add({ name: m, steps: [{ text: 'hello' }] })
  const r = await codexExec(w, repo, marker(m), { env: { MUSTER_AGENT: 'tok' } })
  expect(r.code, r.stderr).toBe(0)
  for (const req of fake.log.of(m)) expect(req.text).not.toMatch(/instance token: \S+|\b[0-9a-f]{64}\b/i)
})

scenario('a shell write to a held file is refused, the file unchanged', async () => {
  const repo = wired('--trust')
  seed(repo, 'src/auth/login.ts', 'export const login = 1\n')
  const holder = await register(s, 'shell-holder')
  await call(s.api, 'POST', '/api/reservations', { project: repo.split('/').pop(), paths: ['src/auth/**'], reason: 'auth rewrite' }, holder.h)
  const m = 'shell'
  fake.scripts.add({ name: m, steps: [{ shell: "printf 'export const hack = 1\\n' >> src/auth/login.ts" }, { text: 'tried' }] })
  const r = await codexExec(w, repo, marker(m), { env: { MUSTER_AGENT: 'she' } })
  expect(r.code, r.stderr).toBe(0)
  expect(readFileSync(join(repo, 'src/auth/login.ts'), 'utf8')).toBe('export const login = 1\n')
  expect(outputs(fake.log.of(m)[1]).join('\n')).toContain('shell-holder')
})

// `codex exec` never asks by default (its approval policy is forced to never: a request for
// escalated permissions is refused, and `-c approval_policy=...` does not change that).
// With --approve-for-me it asks, and runs the PermissionRequest hook before its own reviewer.
/** A shell call asking for escalated permissions, in `codex exec --approve-for-me`; the pending approval and the run. */
async function askingForShell(m: string, name: string, command: string) {
  const repo = wired('--trust')
  fake.scripts.add({ name: m, steps: [{ call: 'exec_command', arguments: { cmd: command, sandbox_permissions: 'require_escalated', justification: 'write ran.txt', yield_time_ms: 30000 } }, { text: 'finished' }] })
  const run = codexExec(w, repo, marker(m), { flags: ['--approve-for-me'], env: { MUSTER_AGENT: name } })
  const asked = await eventually(async () => ((await call(s.api, 'GET', `/api/approvals?status=pending&name=${name}`)).body as any[])[0], 30_000, 100)
  return { repo, run, asked }
}

scenario('exec --approve-for-me asks Muster first: a command runs once a person allows it', async () => {
  const { repo, run, asked } = await askingForShell('cx-allow', 'cx-allow', "sh -c 'echo approved > ran.txt'")
  expect([asked.agent, asked.tool, asked.summary]).toEqual(['codex', 'Bash', "sh -c 'echo approved > ran.txt'"])
  expect(existsSync(join(repo, 'ran.txt'))).toBe(false)
  expect((await call(s.api, 'POST', `/api/approvals/${asked.id}/decision`, { behavior: 'allow' })).status).toBe(200)
  const r = await run
  expect(r.code, r.stderr).toBe(0)
  expect(readFileSync(join(repo, 'ran.txt'), 'utf8')).toBe('approved\n')
})

scenario("exec --approve-for-me: a person's deny keeps the command from running, and the model reads their words", async () => {
  const { repo, run, asked } = await askingForShell('cx-deny', 'cx-deny', "sh -c 'echo refused > ran.txt'")
  const words = 'not on this branch: open a pull request instead'
  expect((await call(s.api, 'POST', `/api/approvals/${asked.id}/decision`, { behavior: 'deny', message: words })).status).toBe(200)
  const r = await run
  expect(r.code, r.stderr).toBe(0)
  expect(existsSync(join(repo, 'ran.txt'))).toBe(false)
  expect(outputs(fake.log.of('cx-deny')[1]).join('\n')).toContain(words)
})

scenario("telemetry wired by muster init records usage of the session's instance, with no call by the model", async () => {
  const repo = wired('--trust')
  fake.scripts.add({ name: 'cx-otel', steps: [{ text: 'hello' }] })
  const r = await codexExec(w, repo, marker('cx-otel'), { env: { MUSTER_AGENT: 'cx-otel' } })
  expect(r.code, r.stderr).toBe(0)
  const [session] = await sessionsOf(repo)
  // Codex's own OTLP export ($CODEX_HOME/config.toml's [otel], as init wrote it): the fake answers 100 in, 10 out
  const usage = await eventually(async () => ((await call(s.api, 'GET', `/api/llm/usage?session_tag=${session.session_id}`)).body as any[])[0], 20_000, 250)
  expect(usage).toMatchObject({ instance_id: session.instance_id, project: session.project, provider: 'openai', tokens_in: 100, tokens_out: 10, cost_usd: 0 })
})

test('the fake model server saw no request it does not know', () => {
  expect([...fake.log.unknown.keys()]).toEqual([])
})

// `muster doctor` in scratch repositories against a real server with tokens: each
// finding as one line with its fix, exit 3 when something is broken, 0 when the wiring
// is whole.
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { chmodSync, mkdirSync, readFileSync, realpathSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { call, startServer, type TestServer } from './helpers'
import { removeWorkdirs, runCli, workdir } from './cli-run'

const ADMIN = 'doctor-admin-token-0123456789abcdef'
let s: TestServer
let agentToken: string
let viewerToken: string
/** A PATH with a `muster` in it, and one without. */
let withMuster: string
const withoutMuster = '/usr/local/bin:/usr/bin:/bin'

beforeAll(async () => {
  s = await startServer({ args: ['--auth-token', ADMIN] })
  const admin = { authorization: `Bearer ${ADMIN}` }
  agentToken = (await call(s.api, 'POST', '/api/tokens', { name: 'doc-agent', role: 'agent' }, admin)).body.token
  viewerToken = (await call(s.api, 'POST', '/api/tokens', { name: 'doc-viewer', role: 'viewer' }, admin)).body.token
  const bin = workdir()
  writeFileSync(join(bin, 'muster'), `#!/bin/sh\nexec '${process.execPath}' '${join(import.meta.dir, '..', 'cli.ts')}' "$@"\n`)
  chmodSync(join(bin, 'muster'), 0o755)
  withMuster = `${bin}:${withoutMuster}`
})
afterAll(async () => {
  await s.cleanup()
  removeWorkdirs()
})

/** A scratch repository with Claude Code and Codex wired to the test server. */
async function wired(): Promise<string> {
  const dir = realpathSync(workdir())
  expect(Bun.spawnSync(['git', 'init', '-q', dir]).exitCode).toBe(0)
  for (const agent of ['claude-code', 'codex']) expect((await runCli(['init', agent], { cwd: dir, env: { SERVICE_SERVER: s.api } })).code).toBe(0)
  return dir
}

const doctor = async (cwd: string, env: Record<string, string>) => {
  const r = await runCli(['doctor'], { cwd, env: { CODEX_HOME: workdir(), ...env } })
  const lines = r.stdout.trim().split('\n')
  const line = (check: string) => lines.find((l) => l.slice(5).startsWith(`${check}:`)) ?? `(no ${check} line)`
  return { ...r, lines, line }
}

describe('muster doctor', () => {
  test('what the issue found, each a FAIL line with its fix: MUSTER_TOKEN the http hooks cannot see, muster not on PATH, Codex without network; exit 3', async () => {
    const dir = await wired()
    const d = await doctor(dir, { SERVICE_SERVER: s.api, MUSTER_TOKEN: agentToken, PATH: withoutMuster })
    expect(d.code).toBe(3)
    expect(d.line('server')).toBe(`ok   server: ${s.api} answers (from SERVICE_SERVER)`)
    expect(d.line('token')).toBe('ok   token: token "doc-agent" from MUSTER_TOKEN, role agent')
    expect(d.line('hooks claude-code')).toStartWith('ok   hooks claude-code: .claude/settings.json: SessionStart, PreToolUse')
    expect(d.line('hooks codex')).toStartWith('ok   hooks codex: .codex/hooks.json: SessionStart, PreToolUse')
    expect(d.line('hook token')).toBe(
      'FAIL hook token: the Claude Code http hooks read $SERVICE_TOKEN, which is not set while the CLI has one from MUSTER_TOKEN: they send an empty bearer, the server answers 401, and Claude Code goes on without a word (no edit is ever denied) -- fix: export SERVICE_TOKEN="$MUSTER_TOKEN" in the environment Claude Code starts from',
    )
    expect(d.line('PATH')).toStartWith('FAIL PATH: the claude-code and codex hooks run `muster hook …` but muster is not on PATH')
    expect(d.line('PATH')).toContain('-- fix: put the muster binary on PATH')
    expect(d.line('codex sandbox')).toContain("FAIL codex sandbox: Codex's workspace-write sandbox has no network")
    expect(d.line('codex sandbox')).toContain('network_access = true')
    expect(d.line('codex trust')).toStartWith(`FAIL codex trust: Codex does not trust the project ${dir}`)
    expect(d.line('codex trust')).toContain('Codex hooks not trusted: 7 untrusted')
    expect(d.line('codex trust')).toContain(`-- fix: run \`muster init codex --trust\` in ${dir}`)
    expect(d.line('git guards')).toBe(`warn git guards: no Muster pre-commit or pre-push hook in ${join(dir, '.git/hooks')}: a commit or push of a held file goes through -- fix: \`muster init git\` (kept beside your hooks)`)
    expect(d.lines.every((l) => /^(ok  |warn|FAIL) [\w -]+: /.test(l))).toBe(true)
    expect(d.stdout).not.toContain(agentToken)
  })

  test('the same repository put right: every line ok, exit 0', async () => {
    const dir = await wired()
    writeFileSync(join(dir, '.codex/config.toml'), readFileSync(join(dir, '.codex/config.toml'), 'utf8') + '\n[sandbox_workspace_write]\nnetwork_access = true\n')
    expect((await runCli(['init', 'git'], { cwd: dir, env: { SERVICE_SERVER: s.api } })).code).toBe(0)
    const CODEX_HOME = workdir()
    expect((await runCli(['init', 'codex', '--trust'], { cwd: dir, env: { SERVICE_SERVER: s.api, CODEX_HOME } })).code).toBe(0)
    const d = await doctor(dir, { SERVICE_SERVER: s.api, SERVICE_TOKEN: agentToken, PATH: withMuster, CODEX_HOME })
    expect(d.lines.filter((l) => !l.startsWith('ok '))).toEqual([])
    expect(d.code).toBe(0)
    expect(d.line('hook token')).toBe('ok   hook token: the http hooks send $SERVICE_TOKEN, which is set')
    expect(d.line('codex sandbox')).toBe('ok   codex sandbox: workspace-write with network_access = true: the CLI reaches the server')
    expect(d.line('git guards')).toBe(`ok   git guards: pre-commit and pre-push in ${join(dir, '.git/hooks')}`)
    expect(d.line('codex trust')).toBe(`ok   codex trust: the project and its 7 Muster hooks are trusted in ${join(CODEX_HOME, 'config.toml')}`)
    // --json: the same findings for a program
    const json = await runCli(['doctor', '--json'], { cwd: dir, env: { SERVICE_SERVER: s.api, SERVICE_TOKEN: agentToken, PATH: withMuster, CODEX_HOME } })
    expect(json.json.map((f: any) => f.status)).toEqual(d.lines.map(() => 'ok'))
  })

  test('server away, a token the server refuses, a viewer token, no token at all', async () => {
    const dir = await wired()
    const away = await doctor(dir, { SERVICE_SERVER: 'http://127.0.0.1:9', SERVICE_TOKEN: agentToken, PATH: withMuster })
    expect(away.code).toBe(3)
    expect(away.line('server')).toStartWith('FAIL server: cannot reach http://127.0.0.1:9 (from SERVICE_SERVER)')
    expect(away.line('server')).toContain('-- fix: start the server there, or point the CLI at it')
    const bad = await doctor(dir, { SERVICE_SERVER: s.api, SERVICE_TOKEN: 'not-a-token', PATH: withMuster })
    expect(bad.line('token')).toStartWith(`FAIL token: ${s.api} answered 401`)
    expect(bad.line('token')).toContain('the token from SERVICE_TOKEN is not a live token of this server')
    const viewer = await doctor(dir, { SERVICE_SERVER: s.api, SERVICE_TOKEN: viewerToken, PATH: withMuster })
    expect(viewer.line('token')).toStartWith('FAIL token: token "doc-viewer" from SERVICE_TOKEN, role viewer: a viewer can read but not reserve')
    const none = await doctor(dir, { SERVICE_SERVER: s.api, PATH: withMuster })
    expect(none.line('token')).toContain('the server checks tokens and none is set: export SERVICE_TOKEN=')
    expect(none.line('hook token')).toContain('export SERVICE_TOKEN=<an agent token>')
  })

  test('hooks: a matcher without Bash, an agent not wired, a file that is not JSON; identity registered, then gone', async () => {
    const dir = await wired()
    const env = { SERVICE_SERVER: s.api, SERVICE_TOKEN: agentToken, PATH: withMuster }
    const settings = JSON.parse(readFileSync(join(dir, '.claude/settings.json'), 'utf8'))
    settings.hooks.PreToolUse[0].matcher = 'Write|Edit'
    writeFileSync(join(dir, '.claude/settings.json'), JSON.stringify(settings))
    writeFileSync(join(dir, '.codex/hooks.json'), '{ not json')
    const d = await doctor(dir, env)
    expect(d.line('hooks claude-code')).toBe(
      'FAIL hooks claude-code: .claude/settings.json lacks PreToolUse of NotebookEdit, Bash (without Bash, writes through the shell are not checked) -- fix: `muster init claude-code` (merges, keeps your other hooks)',
    )
    expect(d.line('hooks codex')).toStartWith('FAIL hooks codex: .codex/hooks.json is not a JSON object')

    const bare = realpathSync(workdir())
    expect(Bun.spawnSync(['git', 'init', '-q', bare]).exitCode).toBe(0)
    mkdirSync(join(bare, '.codex'))
    const b = await doctor(bare, env)
    expect(b.line('hooks codex')).toBe('warn hooks codex: .codex/hooks.json has no Muster hooks -- fix: `muster init codex`')
    expect(b.lines.some((l) => l.includes('hooks claude-code'))).toBe(false)
    expect(b.line('identity')).toContain('ok   identity: none in')

    const reg = await runCli(['register', 'doc-ada'], { cwd: bare, env })
    expect(reg.code).toBe(0)
    expect((await doctor(bare, env)).line('identity')).toMatch(/^ok {3}identity: acts as doc-ada \([0-9a-f-]+\), from .*\/\.muster\/agents\/doc-ada\.json$/)
    expect((await call(s.api, 'DELETE', `/api/instances/${reg.json.id}`, undefined, { authorization: `Bearer ${ADMIN}` })).status).toBe(200)
    const gone = await doctor(bare, env)
    expect(gone.line('identity')).toContain('is not registered on the server any more')
    expect(gone.line('identity')).toContain('-- fix: `muster register NAME` again')
    expect(gone.code).toBe(3)

    // two agents' identities in one checkout: which one is up to MUSTER_AGENT
    expect((await runCli(['register', 'doc-bo'], { cwd: bare, env })).code).toBe(0)
    const two = await doctor(bare, env)
    expect(two.line('identity')).toBe(
      "warn identity: several agents' identities here (doc-ada, doc-bo) and nothing chooses one: a command that acts as an instance exits 2 -- fix: set MUSTER_AGENT to one of them (a hooked session sets it itself), or MUSTER_INSTANCE_TOKEN",
    )
    expect((await doctor(bare, { ...env, MUSTER_AGENT: 'doc-bo' })).line('identity')).toMatch(/^ok {3}identity: acts as doc-bo \(/)
  })
  test('path case: a repository that ignores case on a case-sensitive project is a FAIL with its fix, then ok once init sets it', async () => {
    const dir = await wired()
    const env = { SERVICE_SERVER: s.api, SERVICE_TOKEN: agentToken, PATH: withMuster }
    const project = dir.split('/').pop()!
    expect((await doctor(dir, env)).line('path case')).toStartWith(`ok   path case: project "${project}" matches paths case-sensitively (core.ignorecase unset)`)
    expect(Bun.spawnSync(['git', 'config', 'core.ignorecase', 'true'], { cwd: dir }).exitCode).toBe(0)
    const d = await doctor(dir, env)
    expect(d.code).toBe(3)
    expect(d.line('path case')).toStartWith(`FAIL path case: the repository ignores case (core.ignorecase) but project "${project}" matches paths case-sensitively: an edit of another case of a held file is not denied -- fix: \`muster init\` again`)
    expect((await runCli(['init', 'claude-code'], { cwd: dir, env })).code).toBe(0)
    expect((await doctor(dir, env)).line('path case')).toStartWith(`ok   path case: project "${project}" matches paths without regard to case`)
  })
})

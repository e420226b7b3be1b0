// Codex's wiring without Codex (the real Codex runs in test/agents/codex.test.ts): the trust
// `muster init codex --trust` records in a scratch CODEX_HOME and what codexHooksTrust reads
// back (for `muster doctor`), SessionEnd in the hooks with Codex's 3 s cap, the sandbox
// network setting, and `muster hook codex` giving up on SessionEnd inside that cap.
import { afterAll, describe, expect, test } from 'bun:test'
import { mkdirSync, readFileSync, realpathSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { codexHookHash, codexHooksTrust } from '../cli/codex-trust'
import { removeWorkdirs, runCli, workdir } from './cli-run'

afterAll(() => removeWorkdirs())

function repo(): string {
  const dir = realpathSync(workdir())
  expect(Bun.spawnSync(['git', 'init', '-q', dir]).exitCode).toBe(0)
  return dir
}

describe('Codex trust', () => {
  test('the hash is the one Codex records (vectors from real Codex config files)', () => {
    const post = codexHookHash('PostToolUse', 'Edit|Write|apply_patch', { type: 'command', command: 'bash ~/.vibemon/notify.sh activity codex_cli', timeout: 10 })
    expect(post).toBe('sha256:306ce275f2cc817572187285d692d4878cca2fb0b823d32fea8b5b28f2595fd0')
    // SessionEnd: the timeout capped at 3 s before hashing
    const end = codexHookHash('SessionEnd', undefined, { type: 'command', command: 'bash ~/.vibemon/notify.sh session_end codex_cli', timeout: 10 })
    expect(end).toBe('sha256:59015a3376fd5e5d8ffb5bf1adf4be4ebc610622c674a7546a32a06ac4a47a61')
    // Stop ignores a matcher; no timeout hashes as Codex's default of 600 s
    expect(codexHookHash('Stop', 'x', { type: 'command', command: 'c' })).toBe(codexHookHash('Stop', undefined, { type: 'command', command: 'c', timeout: 600 }))
  })

  test('init codex --trust records project and hook trust in CODEX_HOME, keeps what is there, twice = same bytes', async () => {
    const dir = repo()
    const home = workdir()
    mkdirSync(join(home, '.codex'))
    const config = join(home, '.codex', 'config.toml')
    writeFileSync(config, 'model = "gpt-5.5"\n\n[projects."/elsewhere"]\ntrust_level = "trusted"\n\n[mcp_servers.docs]\nurl = "http://docs.test/mcp"\n')
    const env = { SERVICE_SERVER: 'http://muster.test:9800', CODEX_HOME: join(home, '.codex') }

    const plain = await runCli(['init', 'codex'], { cwd: dir, env })
    expect(plain.code).toBe(0)
    expect(plain.json.notes.join('\n')).toContain('muster init codex --trust')
    const before = codexHooksTrust(dir, env)
    expect(before).toMatchObject({ ok: false, projectTrusted: false })
    expect(before.hooks.map((h) => [h.event, h.status])).toEqual(
      ['SessionStart', 'PreToolUse', 'PermissionRequest', 'PostToolUse', 'UserPromptSubmit', 'Stop', 'SessionEnd'].map((e) => [e, 'untrusted']),
    )
    expect(before.problem).toContain(`Codex does not trust the project ${dir}`)
    expect(before.problem).toContain('7 untrusted')
    expect(before.fix).toBe(`run \`muster init codex --trust\` in ${dir} (or review them in Codex's /hooks)`)

    const trusted = await runCli(['init', 'codex', '--trust'], { cwd: dir, env })
    expect(trusted.code).toBe(0)
    expect(trusted.json.trusted).toMatchObject({ config, project: true })
    expect(trusted.json.trusted.hooks[0]).toBe(`${dir}/.codex/hooks.json:session_start:0:0`)
    expect(trusted.json.notes).toEqual([expect.stringContaining('--allow-network')])
    const text = readFileSync(config, 'utf8')
    expect(text.startsWith('model = "gpt-5.5"\n\n[projects."/elsewhere"]\ntrust_level = "trusted"\n\n[mcp_servers.docs]\nurl = "http://docs.test/mcp"\n\n')).toBe(true)
    const parsed = Bun.TOML.parse(text) as any
    expect(parsed.projects[dir]).toEqual({ trust_level: 'trusted' })
    const hooks = JSON.parse(readFileSync(join(dir, '.codex/hooks.json'), 'utf8')).hooks
    const pre = hooks.PreToolUse[0]
    expect(parsed.hooks.state[`${dir}/.codex/hooks.json:pre_tool_use:0:0`]).toEqual({ trusted_hash: codexHookHash('PreToolUse', pre.matcher, pre.hooks[0]) })
    expect(codexHooksTrust(dir, env)).toMatchObject({ ok: true, projectTrusted: true, problem: null, fix: null })

    await runCli(['init', 'codex', '--trust'], { cwd: dir, env })
    expect(readFileSync(config, 'utf8')).toBe(text)

    // Another server changes the commands: Codex sees modified hooks until they are trusted again.
    await runCli(['init', 'codex'], { cwd: dir, env: { ...env, SERVICE_SERVER: 'http://other.test:1' } })
    const moved = codexHooksTrust(dir, env)
    expect(moved.ok).toBe(false)
    expect(moved.problem).toContain('7 modified')
    await runCli(['init', 'codex', '--trust'], { cwd: dir, env: { ...env, SERVICE_SERVER: 'http://other.test:1' } })
    expect(codexHooksTrust(dir, env).ok).toBe(true)
    expect(Object.keys((Bun.TOML.parse(readFileSync(config, 'utf8')) as any).hooks.state).length).toBe(7)
  })

  test("only Muster's hooks are trusted, each by its place in the file beside the user's own", async () => {
    const dir = repo()
    mkdirSync(join(dir, '.codex'))
    writeFileSync(join(dir, '.codex/hooks.json'), JSON.stringify({ hooks: { Stop: [{ hooks: [{ type: 'command', command: 'notify-send done' }] }] } }))
    const env = { SERVICE_SERVER: 'http://muster.test:9800', CODEX_HOME: join(workdir(), '.codex') }
    const r = await runCli(['init', 'codex', '--trust'], { cwd: dir, env })
    expect(r.code).toBe(0)
    expect(r.json.trusted.hooks).toContain(`${dir}/.codex/hooks.json:stop:1:0`)
    const state = (Bun.TOML.parse(readFileSync(join(env.CODEX_HOME, 'config.toml'), 'utf8')) as any).hooks.state
    expect(Object.keys(state).length).toBe(7)
    expect(state[`${dir}/.codex/hooks.json:stop:0:0`]).toBeUndefined() // the user's own: theirs to review
  })

  test('--trust is for codex and gemini-cli only', async () => {
    const r = await runCli(['init', 'claude-code', '--trust'], { cwd: repo(), env: { SERVICE_SERVER: 'http://muster.test:9800' } })
    expect(r.code).toBe(2)
    expect(r.stderr).toContain('--trust is for codex and gemini-cli')
  })
})

describe('Codex hooks and sandbox', () => {
  test('SessionEnd wired with a 3 s timeout; --allow-network opens the workspace-write sandbox, kept on a second run', async () => {
    const dir = repo()
    const env = { SERVICE_SERVER: 'http://muster.test:9800', CODEX_HOME: join(workdir(), '.codex') }
    expect((await runCli(['init', 'codex', '--allow-network'], { cwd: dir, env })).code).toBe(0)
    const hooks = JSON.parse(readFileSync(join(dir, '.codex/hooks.json'), 'utf8')).hooks
    expect(hooks.SessionEnd).toEqual([{ hooks: [{ type: 'command', command: 'muster hook codex --server http://muster.test:9800', timeout: 3 }] }])
    const toml = readFileSync(join(dir, '.codex/config.toml'), 'utf8')
    expect((Bun.TOML.parse(toml) as any).sandbox_workspace_write).toEqual({ network_access: true })
    const again = await runCli(['init', 'codex', '--allow-network'], { cwd: dir, env })
    expect(again.json.files.find((f: any) => f.path === '.codex/config.toml').action).toBe('unchanged')
  })

  test('muster hook codex gives up on a SessionEnd the server does not answer inside Codex\'s 3 s cap', async () => {
    const stalled = Bun.serve({ hostname: '127.0.0.1', port: 0, idleTimeout: 0, fetch: () => new Promise<Response>(() => {}) })
    try {
      const cwd = repo()
      const stdin = JSON.stringify({ session_id: crypto.randomUUID(), hook_event_name: 'SessionEnd', cwd, reason: 'other' })
      const t0 = performance.now()
      const r = await runCli(['hook', 'codex'], { cwd, env: { SERVICE_SERVER: `http://127.0.0.1:${stalled.port}` }, stdin })
      const took = performance.now() - t0
      expect(r.code).toBe(0)
      expect(r.stderr).toContain('the agent goes on')
      expect(took).toBeLessThan(3000)
    } finally {
      stalled.stop(true)
    }
  })
})

// `muster hook` driven exactly as a command hook runs it (the event on stdin, the answer
// on stdout), failing open or closed against a dead port; `muster init` merging into a
// repository's files, idempotently; the Claude Code plugin's manifests against the
// documented schema.
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { existsSync, mkdirSync, readFileSync, realpathSync, statSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { call, register, startServer, type TestServer } from './helpers'
import { removeWorkdirs, runCli, workdir } from './cli-run'
import codex from './fixtures/hooks/codex.json'

let s: TestServer
beforeAll(async () => (s = await startServer()))
afterAll(async () => {
  await s.cleanup()
  removeWorkdirs()
})

/** A scratch git repository (its real path: the git root as git prints it). */
function repo(): string {
  const dir = realpathSync(workdir())
  expect(Bun.spawnSync(['git', 'init', '-q', dir]).exitCode).toBe(0)
  return dir
}

const event = (name: keyof typeof codex, root: string, session: string, extra: Record<string, unknown> = {}) =>
  JSON.stringify({ ...JSON.parse(JSON.stringify(codex[name]).replaceAll('/work/repo', root)), session_id: session, ...extra })

describe('muster hook', () => {
  test('stdin → server → stdout: headers from MUSTER_* and the git root; a denial printed as the agent reads it', async () => {
    const root = repo()
    const sub = join(root, 'pkg')
    mkdirSync(sub)
    const session = crypto.randomUUID()
    const env = { SERVICE_SERVER: s.api, MUSTER_AGENT: 'piper', MUSTER_PROJECT: 'pipes', MUSTER_RESERVE: '5m' }
    const start = await runCli(['hook', 'codex'], { cwd: sub, env, stdin: event('SessionStart', root, session) })
    expect(start.code).toBe(0)
    expect(start.json.hookSpecificOutput).toMatchObject({ hookEventName: 'SessionStart', additionalContext: expect.stringContaining('"piper"') })
    const row = (await call(s.api, 'GET', '/api/sessions')).body.find((x: any) => x.session_id === session)
    expect(row).toMatchObject({ agent: 'codex', name: 'piper', project: 'pipes', root })

    // edit-reserve mode from MUSTER_RESERVE: the patch's files are reserved for the session
    const edit = await runCli(['hook', 'codex'], { cwd: sub, env, stdin: event('PreToolUse.apply_patch', root, session) })
    expect(edit).toMatchObject({ code: 0, json: {} })
    const mine = (await call(s.api, 'GET', `/api/reservations?instance_id=${row.instance_id}`)).body
    expect(mine.map((r: any) => r.paths[0]).sort()).toEqual(['docs/hello.md', 'src/app.ts', 'src/name.ts', 'src/old.ts', 'src/renamed.ts'])

    const other = await register(s, 'olive')
    await call(s.api, 'POST', '/api/reservations', { project: 'pipes', paths: ['lib/**'], reason: 'lib split' }, other.h)
    const denied = await runCli(['hook', 'codex'], {
      cwd: sub,
      env,
      stdin: event('PreToolUse.apply_patch', root, session, { tool_input: { command: `*** Begin Patch\n*** Add File: ${join(root, 'lib/x.ts')}\n+x\n*** End Patch\n` } }),
    })
    expect(denied.code).toBe(0)
    expect(denied.json.hookSpecificOutput).toMatchObject({ hookEventName: 'PreToolUse', permissionDecision: 'deny' })
    expect(denied.json.hookSpecificOutput.permissionDecisionReason).toContain('lib/x.ts: reserved as "lib/**" by olive (active), reason "lib split"')
  })

  test('server unreachable: one stderr line and exit 0; --fail-closed exits 2', async () => {
    const dead = Bun.serve({ port: 0, fetch: () => new Response() })
    const url = `http://127.0.0.1:${dead.port}`
    dead.stop(true)
    const cwd = repo()
    const stdin = event('PreToolUse.Bash', cwd, crypto.randomUUID())
    const open = await runCli(['hook', 'codex'], { cwd, env: { SERVICE_SERVER: url }, stdin })
    expect(open.code).toBe(0)
    expect(open.stdout).toBe('')
    expect(open.stderr.trim().split('\n').length).toBe(1)
    expect(open.stderr).toContain(`cannot reach ${url}`)
    const closed = await runCli(['hook', 'codex', '--fail-closed'], { cwd, env: { SERVICE_SERVER: url }, stdin })
    expect(closed.code).toBe(2)
    expect(closed.stdout).toBe('')
    expect(closed.stderr.trim().split('\n').length).toBe(1)
  })

  test('a refused event or a misconfigured hook fails open the same way (closed with --fail-closed)', async () => {
    const cwd = repo()
    const stdin = event('PreToolUse.Bash', cwd, crypto.randomUUID())
    const env = { SERVICE_SERVER: s.api, MUSTER_RESERVE: 'soon' }
    const refused = await runCli(['hook', 'codex'], { cwd, env, stdin })
    expect([refused.code, refused.stdout]).toEqual([0, ''])
    expect(refused.stderr).toContain('answered 400')
    expect(refused.stderr).toContain('X-Muster-Reserve')
    expect((await runCli(['hook', 'codex', '--fail-closed'], { cwd, env, stdin })).code).toBe(2)
    // A settings.json of another tool: one line naming it, the agent goes on.
    writeFileSync(join(cwd, 'settings.json'), JSON.stringify({ server: { port: 1 } }))
    const foreign = await runCli(['hook', 'codex'], { cwd, stdin })
    expect([foreign.code, foreign.stdout]).toEqual([0, ''])
    expect(foreign.stderr.trim().split('\n')).toEqual([
      `muster hook: ${join(cwd, 'settings.json')}: "server" must be a URL string (this file may belong to another tool; pass --server or set MUSTER_SERVER); the agent goes on without coordination`,
    ])
    expect((await runCli(['hook', 'codex', '--fail-closed'], { cwd, stdin })).code).toBe(2)
    const unknown = await runCli(['hook', 'notepad'], { cwd, env: { SERVICE_SERVER: s.api }, stdin })
    expect([unknown.code, unknown.stdout]).toEqual([0, ''])
    expect(unknown.stderr).toContain('unknown agent "notepad"')
  })
})

describe('muster init', () => {
  const read = (dir: string, path: string) => readFileSync(join(dir, path), 'utf8')

  test('claude-code: http hooks (session hooks as commands), MCP entry and CLAUDE.md section merged into what is there; twice = same bytes; --dry-run writes nothing', async () => {
    const dir = repo()
    mkdirSync(join(dir, '.claude'))
    const mine = { matcher: 'Bash', hooks: [{ type: 'command', command: './scripts/lint.sh' }] }
    writeFileSync(join(dir, '.claude/settings.json'), JSON.stringify({ model: 'opus', hooks: { PreToolUse: [mine] } }))
    writeFileSync(join(dir, 'CLAUDE.md'), '# Project rules\n\nUse tabs.\n')
    // Claude Code's own config dir, where its telemetry settings go (never the real ~/.claude)
    const home = join(dir, '.user-claude')
    mkdirSync(home)
    writeFileSync(join(home, 'settings.json'), JSON.stringify({ theme: 'dark', env: { FOO: '1' } }))
    const env = { SERVICE_SERVER: 'http://muster.test:9800', CLAUDE_CONFIG_DIR: home, SERVICE_TOKEN: 'secret-token-never-written' }

    const dry = await runCli(['init', 'claude-code', '--reserve', '30m', '--dry-run'], { cwd: dir, env })
    expect(dry.code).toBe(0)
    expect(dry.json.files.map((f: any) => [f.path, f.action])).toEqual([
      ['.claude/settings.json', 'update'],
      ['.mcp.json', 'create'],
      ['CLAUDE.md', 'update'],
      [join(home, 'settings.json'), 'update'],
    ])
    expect(existsSync(join(dir, '.mcp.json'))).toBe(false)
    expect(read(dir, 'CLAUDE.md')).toBe('# Project rules\n\nUse tabs.\n')

    const first = await runCli(['init', 'claude-code', '--reserve', '30m'], { cwd: dir, env })
    expect(first.code).toBe(0)
    const files = ['.claude/settings.json', '.mcp.json', 'CLAUDE.md'].map((p) => read(dir, p))
    expect(files[0]).toBe(dry.json.files[0].content)
    const settings = JSON.parse(files[0])
    expect(settings.model).toBe('opus')
    expect(settings.hooks.PreToolUse[0]).toEqual(mine)
    const ours = settings.hooks.PreToolUse[1]
    expect(ours.matcher).toBe('Write|Edit|NotebookEdit|Bash')
    expect(ours.hooks[0]).toEqual({
      type: 'http',
      url: 'http://muster.test:9800/api/hooks/claude-code',
      headers: { Authorization: 'Bearer $SERVICE_TOKEN', 'X-Muster-Agent': '$MUSTER_AGENT', 'X-Muster-Project': '$MUSTER_PROJECT', 'X-Muster-Reserve': '30m' },
      allowedEnvVars: ['SERVICE_TOKEN', 'MUSTER_AGENT', 'MUSTER_PROJECT'],
      timeout: 10,
    })
    expect(Object.keys(settings.hooks)).toEqual(['PreToolUse', 'SessionStart', 'PermissionRequest', 'PostToolUse', 'UserPromptSubmit', 'Notification', 'Stop', 'SessionEnd'])
    // a PermissionRequest waits for a person in Muster: the hook's timeout is above the wait it asks for
    expect(settings.hooks.PermissionRequest).toEqual([
      { hooks: [{ ...ours.hooks[0], headers: { ...ours.hooks[0].headers, 'X-Muster-Approval-Wait': '5m' }, timeout: 330 }] },
    ])
    // Claude Code runs session hooks as commands only.
    for (const event of ['SessionStart', 'SessionEnd'])
      expect(settings.hooks[event][0].hooks).toEqual([{ type: 'command', command: 'muster hook claude-code --server http://muster.test:9800 --reserve 30m', timeout: 10 }])
    for (const event of ['PostToolUse', 'UserPromptSubmit', 'Stop']) expect(settings.hooks[event][0].hooks[0]).toEqual(ours.hooks[0])
    expect(JSON.parse(files[1]).mcpServers.muster).toMatchObject({ type: 'http', url: 'http://muster.test:9800/mcp' })
    expect(files[2].startsWith('# Project rules\n\nUse tabs.\n\n<!-- muster:begin -->')).toBe(true)
    // telemetry: in the user's settings (Claude Code takes OTEL settings from there only), headers from a helper; no token anywhere
    expect(JSON.parse(read(home, 'settings.json'))).toEqual({
      theme: 'dark',
      env: {
        FOO: '1',
        CLAUDE_CODE_ENABLE_TELEMETRY: '1',
        OTEL_LOGS_EXPORTER: 'otlp',
        OTEL_METRICS_EXPORTER: 'otlp',
        OTEL_EXPORTER_OTLP_PROTOCOL: 'http/json',
        OTEL_EXPORTER_OTLP_ENDPOINT: 'http://muster.test:9800',
      },
      otelHeadersHelper: 'muster otel-headers',
    })
    for (const text of [...files, read(home, 'settings.json')]) expect(text).not.toContain('secret-token-never-written')
    const helper = await runCli(['otel-headers'], { cwd: dir, env })
    expect([helper.code, helper.stdout.trim()]).toEqual([0, '{"Authorization":"Bearer secret-token-never-written"}'])
    expect((await runCli(['otel-headers'], { cwd: dir, env: { SERVICE_SERVER: 'http://muster.test:9800' } })).stdout.trim()).toBe('{}')

    const second = await runCli(['init', 'claude-code', '--reserve', '30m'], { cwd: dir, env })
    expect(second.json.files.every((f: any) => f.action === 'unchanged')).toBe(true)
    expect(second.json.files.length).toBe(4)
    expect(['.claude/settings.json', '.mcp.json', 'CLAUDE.md'].map((p) => read(dir, p))).toEqual(files)
  })

  test('codex: command hooks running muster hook codex, MCP table in .codex/config.toml, AGENTS.md; idempotent, other content kept', async () => {
    const dir = repo()
    mkdirSync(join(dir, '.codex'))
    writeFileSync(join(dir, '.codex/config.toml'), 'model = "gpt-5-codex"\n\n[mcp_servers.docs]\nurl = "http://docs.test/mcp"\n')
    writeFileSync(join(dir, '.codex/hooks.json'), JSON.stringify({ hooks: { Stop: [{ hooks: [{ type: 'command', command: 'notify-send done' }] }] } }))
    // Codex's home, where its [otel] table goes (Codex ignores it in a project's config)
    const home = join(dir, '.user-codex')
    mkdirSync(home)
    writeFileSync(join(home, 'config.toml'), 'model = "o3"\n\n[otel]\nexporter = "none"\n\n[tui]\nnotifications = true\n')
    const env = { SERVICE_SERVER: 'http://muster.test:9800', CODEX_HOME: home, SERVICE_TOKEN: 'codex-token' }
    expect((await runCli(['init', 'codex'], { cwd: dir, env })).code).toBe(0)
    const files = ['.codex/hooks.json', '.codex/config.toml', 'AGENTS.md'].map((p) => read(dir, p))
    const hooks = JSON.parse(files[0]).hooks
    expect(hooks.Stop).toEqual([
      { hooks: [{ type: 'command', command: 'notify-send done' }] },
      { hooks: [{ type: 'command', command: 'muster hook codex --server http://muster.test:9800', timeout: 10 }] },
    ])
    expect(hooks.PreToolUse[0].matcher).toBe('apply_patch|Write|Edit|Bash')
    expect(hooks.PermissionRequest).toEqual([{ hooks: [{ type: 'command', command: 'muster hook codex --server http://muster.test:9800 --approval-wait 5m', timeout: 330 }] }])
    expect(files[1]).toBe(
      'model = "gpt-5-codex"\n\n[mcp_servers.docs]\nurl = "http://docs.test/mcp"\n\n[mcp_servers.muster]\nurl = "http://muster.test:9800/mcp"\nbearer_token_env_var = "SERVICE_TOKEN"\n',
    )
    expect(files[2]).toContain('## How this team of agents coordinates (Muster)')
    expect(files.join('')).not.toContain('codex-token')
    // --dry-run prints what it would write, the token left out
    const dry = await runCli(['init', 'codex', '--dry-run'], { cwd: dir, env })
    expect(dry.stdout).not.toContain('codex-token')
    expect(dry.stdout).toContain('Bearer <token>')
    const exporter = (signal: string) => `{ otlp-http = { endpoint = "http://muster.test:9800/v1/${signal}", protocol = "json", headers = { Authorization = "Bearer codex-token" } } }`
    expect(read(home, 'config.toml')).toBe(
      `model = "o3"\n\n[otel]\nlog_user_prompt = false\nexporter = ${exporter('logs')}\nmetrics_exporter = ${exporter('metrics')}\n\n[tui]\nnotifications = true\n`,
    )
    expect((statSync(join(home, 'config.toml')).mode & 0o777).toString(8)).toBe('600')
    await runCli(['init', 'codex'], { cwd: dir, env })
    expect(['.codex/hooks.json', '.codex/config.toml', 'AGENTS.md'].map((p) => read(dir, p))).toEqual(files)
    // another server or --reserve replaces our entries instead of adding more
    await runCli(['init', 'codex', '--reserve', '10m'], { cwd: dir, env: { SERVICE_SERVER: 'http://other.test:1', CODEX_HOME: home } })
    const moved = JSON.parse(read(dir, '.codex/hooks.json')).hooks
    expect(moved.Stop.length).toBe(2)
    expect(moved.Stop[1].hooks[0].command).toBe('muster hook codex --server http://other.test:1 --reserve 10m')
    expect(read(dir, '.codex/config.toml').match(/\[mcp_servers\.muster\]/g)!.length).toBe(1)
  })

  test('a broken settings file is a usage error that names it, and nothing is written', async () => {
    const dir = repo()
    mkdirSync(join(dir, '.claude'))
    writeFileSync(join(dir, '.claude/settings.json'), '{ nope')
    const r = await runCli(['init', 'claude-code'], { cwd: dir, env: { SERVICE_SERVER: 'http://muster.test:9800', CLAUDE_CONFIG_DIR: join(dir, '.user-claude') } })
    expect(r.code).toBe(2)
    expect(r.stderr).toContain('.claude/settings.json is not valid JSON')
    expect(existsSync(join(dir, 'CLAUDE.md'))).toBe(false)
  })
})

describe('Claude Code plugin', () => {
  // Required fields from the plugin manifest and marketplace references (code.claude.com/docs/en/plugins-reference,
  // .../plugin-marketplaces): plugin.json needs a kebab-case `name`; marketplace.json needs `name`, `owner.name`
  // and `plugins`, each entry a `name` and a `source` (a relative path starts with ./).
  const dir = join(import.meta.dir, '..', '.claude-plugin')
  const plugin = JSON.parse(readFileSync(join(dir, 'plugin.json'), 'utf8'))
  const market = JSON.parse(readFileSync(join(dir, 'marketplace.json'), 'utf8'))
  const KEBAB = /^[a-z][a-z0-9]*(-[a-z0-9]+)*$/
  const EVENTS = ['PreToolUse', 'PermissionRequest', 'PostToolUse', 'UserPromptSubmit', 'Notification', 'Stop', 'SubagentStop', 'SessionStart', 'SessionEnd', 'PreCompact']

  test('plugin.json: name, semver version, hooks for every handled event, the MCP server', () => {
    expect(plugin.name).toMatch(KEBAB)
    expect(plugin.version).toMatch(/^\d+\.\d+\.\d+(-[\w.]+)?$/)
    expect(typeof plugin.description).toBe('string')
    expect(typeof plugin.author.name).toBe('string')
    for (const [event, groups] of Object.entries(plugin.hooks as Record<string, any[]>)) {
      expect(EVENTS).toContain(event)
      for (const g of groups) {
        if (g.matcher !== undefined) expect(typeof g.matcher).toBe('string')
        // A permission request waits for a person: the hook outlives the wait it asks for (cli/init.ts).
        for (const h of g.hooks)
          expect(h).toMatchObject(
            event === 'PermissionRequest' ? { type: 'command', command: 'muster hook claude-code --approval-wait 5m', timeout: 330 } : { type: 'command', command: 'muster hook claude-code' },
          )
      }
    }
    expect(Object.keys(plugin.hooks).sort()).toEqual(['Notification', 'PermissionRequest', 'PostToolUse', 'PreToolUse', 'SessionEnd', 'SessionStart', 'Stop', 'UserPromptSubmit'])
    expect(plugin.hooks.PreToolUse[0].matcher).toBe('Write|Edit|NotebookEdit|Bash')
    expect(plugin.mcpServers.muster).toMatchObject({ type: 'http', url: expect.stringMatching(/\/mcp$/) })
  })

  test('marketplace.json: name, owner, plugins naming this plugin with a relative source', () => {
    expect(market.name).toMatch(KEBAB)
    expect(typeof market.owner.name).toBe('string')
    expect(market.plugins.length).toBeGreaterThan(0)
    for (const p of market.plugins) {
      expect(p.name).toMatch(KEBAB)
      expect(typeof p.source === 'string' ? p.source : p.source?.source).toBeTruthy()
      if (typeof p.source === 'string') expect(p.source.startsWith('./')).toBe(true)
    }
    const entry = market.plugins.find((p: any) => p.name === plugin.name)
    expect(existsSync(join(dir, '..', entry.source, '.claude-plugin/plugin.json'))).toBe(true)
  })
})

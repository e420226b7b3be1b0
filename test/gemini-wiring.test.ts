// Gemini CLI's wiring without Gemini CLI (the real one runs in test/agents/gemini-cli.test.ts):
// what `muster init gemini-cli` merges into .gemini/settings.json and GEMINI.md, the trust
// --trust records in Gemini CLI's trusted folders (GEMINI_CLI_TRUSTED_FOLDERS_PATH here),
// and what `muster doctor` says of both.
import { afterAll, describe, expect, test } from 'bun:test'
import { existsSync, mkdirSync, readFileSync, realpathSync, writeFileSync } from 'node:fs'
import { dirname, join } from 'node:path'
import { removeWorkdirs, runCli, workdir } from './cli-run'

afterAll(() => removeWorkdirs())

const SERVER = 'http://muster.test:9800'

function repo(): string {
  const dir = realpathSync(workdir())
  expect(Bun.spawnSync(['git', 'init', '-q', dir]).exitCode).toBe(0)
  return dir
}

/** A scratch trusted-folders file for Gemini CLI, with `rules` in it. */
function trustFile(rules: Record<string, string> = {}): string {
  const file = join(workdir(), 'gemini', 'trustedFolders.json')
  mkdirSync(dirname(file), { recursive: true })
  writeFileSync(file, JSON.stringify(rules))
  return file
}

const settingsOf = (dir: string) => JSON.parse(readFileSync(join(dir, '.gemini/settings.json'), 'utf8'))
const ours = (settings: any, event: string) => (settings.hooks[event] as any[]).flatMap((g) => g.hooks.map((h: any) => ({ matcher: g.matcher, ...h }))).filter((h) => h.command?.startsWith('muster hook gemini-cli'))

describe('muster init gemini-cli', () => {
  test('merges hooks and the MCP server into the settings there, no token written; a second run changes no byte', async () => {
    const dir = repo()
    mkdirSync(join(dir, '.gemini'))
    const theirs = { type: 'command', command: 'echo theirs' }
    writeFileSync(join(dir, '.gemini/settings.json'), JSON.stringify({ general: { vimMode: true }, mcpServers: { docs: { httpUrl: 'http://docs.test/mcp' } }, hooks: { AfterTool: [{ hooks: [theirs] }] } }))
    writeFileSync(join(dir, 'GEMINI.md'), '# House rules\n')
    const env = { SERVICE_SERVER: SERVER, SERVICE_TOKEN: 'secret-token-never-written', GEMINI_CLI_TRUSTED_FOLDERS_PATH: trustFile() }
    const first = await runCli(['init', 'gemini-cli', '--reserve', '30m'], { cwd: dir, env })
    expect(first.code, first.stderr).toBe(0)
    const s = settingsOf(dir)
    expect(s.general).toEqual({ vimMode: true })
    expect(s.mcpServers).toEqual({ docs: { httpUrl: 'http://docs.test/mcp' }, muster: { httpUrl: `${SERVER}/mcp`, headers: { Authorization: 'Bearer $SERVICE_TOKEN' } } })
    expect(s.hooks.AfterTool[0]).toEqual({ hooks: [theirs] })
    for (const event of ['SessionStart', 'BeforeAgent', 'BeforeTool', 'AfterTool', 'AfterAgent', 'Notification', 'SessionEnd'])
      expect(ours(s, event), event).toEqual([
        { ...(event === 'BeforeTool' ? { matcher: '^(write_file|replace|run_shell_command)$' } : {}), type: 'command', name: 'muster', command: `muster hook gemini-cli --server ${SERVER} --reserve 30m`, timeout: 10000 },
      ])
    expect(readFileSync(join(dir, '.gemini/settings.json'), 'utf8')).not.toContain('secret-token-never-written')
    const guide = readFileSync(join(dir, 'GEMINI.md'), 'utf8')
    expect(guide).toStartWith('# House rules\n\n<!-- muster:begin -->')
    expect(guide).toContain('reserved for you for 30m')
    // Not trusted yet: said, with the fix.
    expect(first.json.notes.join('\n')).toContain('muster init gemini-cli --trust')

    const before = readFileSync(join(dir, '.gemini/settings.json'), 'utf8')
    const again = await runCli(['init', 'gemini-cli', '--reserve', '30m'], { cwd: dir, env })
    expect(again.json.files.map((f: any) => f.action)).toEqual(['unchanged', 'unchanged'])
    expect(readFileSync(join(dir, '.gemini/settings.json'), 'utf8')).toBe(before)
    // Another server replaces our hooks, never adds a second set.
    await runCli(['init', 'gemini-cli'], { cwd: dir, env: { ...env, SERVICE_SERVER: 'http://other.test:1' } })
    expect(ours(settingsOf(dir), 'SessionStart').map((h) => h.command)).toEqual(['muster hook gemini-cli --server http://other.test:1'])
  })

  test('--dry-run writes nothing; --allow-network is refused for gemini-cli', async () => {
    const dir = repo()
    const dry = await runCli(['init', 'gemini-cli', '--dry-run', '--trust'], { cwd: dir, env: { SERVICE_SERVER: SERVER, GEMINI_CLI_TRUSTED_FOLDERS_PATH: join(workdir(), 'trusted.json') } })
    expect(dry.code, dry.stderr).toBe(0)
    expect(dry.json.files.map((f: any) => f.path)).toEqual(['.gemini/settings.json', 'GEMINI.md', expect.stringContaining('trusted.json')])
    expect(existsSync(join(dir, '.gemini'))).toBe(false)
    const net = await runCli(['init', 'gemini-cli', '--allow-network'], { cwd: dir, env: { SERVICE_SERVER: SERVER } })
    expect(net.code).toBe(2)
    expect(net.stderr).toContain('--allow-network is for codex')
  })

  test('--trust adds the repository to the trusted folders, keeping the other rules; a trusted parent needs no note', async () => {
    const dir = repo()
    const file = trustFile({ '/elsewhere': 'TRUST_FOLDER', '/nope': 'DO_NOT_TRUST' })
    const env = { SERVICE_SERVER: SERVER, GEMINI_CLI_TRUSTED_FOLDERS_PATH: file }
    const r = await runCli(['init', 'gemini-cli', '--trust'], { cwd: dir, env })
    expect(r.code, r.stderr).toBe(0)
    expect(r.json.notes).toBeUndefined()
    expect(JSON.parse(readFileSync(file, 'utf8'))).toEqual({ '/elsewhere': 'TRUST_FOLDER', '/nope': 'DO_NOT_TRUST', [dir]: 'TRUST_FOLDER' })
    expect((await runCli(['init', 'gemini-cli', '--trust'], { cwd: dir, env })).json.files.map((f: any) => f.action)).toEqual(['unchanged', 'unchanged', 'unchanged'])

    // TRUST_PARENT on a sibling trusts their parent, so this repository too; a longer DO_NOT_TRUST wins.
    const other = repo()
    const parent = trustFile({ [join(dirname(other), 'sibling')]: 'TRUST_PARENT' })
    expect((await runCli(['init', 'gemini-cli'], { cwd: other, env: { SERVICE_SERVER: SERVER, GEMINI_CLI_TRUSTED_FOLDERS_PATH: parent } })).json.notes).toBeUndefined()
    const denied = trustFile({ [join(dirname(other), 'sibling')]: 'TRUST_PARENT', [other]: 'DO_NOT_TRUST' })
    expect((await runCli(['init', 'gemini-cli'], { cwd: other, env: { SERVICE_SERVER: SERVER, GEMINI_CLI_TRUSTED_FOLDERS_PATH: denied } })).json.notes).toHaveLength(1)
  })
})

describe('muster doctor with Gemini CLI wired', () => {
  const lines = async (dir: string, env: Record<string, string>) => {
    const r = await runCli(['doctor'], { cwd: dir, env: { CODEX_HOME: workdir(), ...env } })
    const all = r.stdout.trim().split('\n')
    return (check: string) => all.find((l) => l.slice(5).startsWith(`${check}:`)) ?? `(no ${check} line)`
  }

  test('its hooks and the folder trust: FAIL with the fix, then ok', async () => {
    const dir = repo()
    const file = trustFile()
    const env = { SERVICE_SERVER: SERVER, GEMINI_CLI_TRUSTED_FOLDERS_PATH: file }
    expect((await runCli(['init', 'gemini-cli'], { cwd: dir, env })).code).toBe(0)
    let line = await lines(dir, env)
    expect(line('hooks gemini-cli')).toStartWith('ok   hooks gemini-cli: .gemini/settings.json: SessionStart, BeforeAgent, BeforeTool')
    expect(line('gemini trust')).toBe(`FAIL gemini trust: Gemini CLI does not trust ${dir}: it runs none of the project's hooks there, and \`gemini -p\` does not start -- fix: run \`muster init gemini-cli --trust\` in ${dir} (adds it to ${file}), or trust the folder when Gemini CLI asks`)
    expect((await runCli(['init', 'gemini-cli', '--trust'], { cwd: dir, env })).code).toBe(0)
    line = await lines(dir, env)
    expect(line('gemini trust')).toBe(`ok   gemini trust: Gemini CLI trusts ${dir} (${file})`)
    // Without its BeforeTool hook no write is checked: doctor says which event is missing.
    const s = settingsOf(dir)
    delete s.hooks.BeforeTool
    writeFileSync(join(dir, '.gemini/settings.json'), JSON.stringify(s))
    expect((await lines(dir, env))('hooks gemini-cli')).toStartWith('FAIL hooks gemini-cli: .gemini/settings.json lacks BeforeTool')
  })
})

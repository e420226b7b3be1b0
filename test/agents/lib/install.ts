// The agent CLIs the suite drives, pinned, installed from the npm registry with
// `npm install --prefix` into a cache folder ignored by git:
// `<repo>/.cache/agents/<package>@<version>` (MUSTER_AGENTS_CACHE moves it). Several
// test processes may install at once: each installs into a temp dir beside the final one
// and renames it into place; the loser of the race drops its copy. An agent that cannot
// be installed throws: the suite fails loudly rather than skip what it cannot run.
import { existsSync, mkdirSync, renameSync, rmSync } from 'node:fs'
import { dirname, join } from 'node:path'

export interface AgentCli {
  package: string
  version: string
  /** The command the package installs under node_modules/.bin. */
  bin: string
}

/** Every agent CLI of the suite, by the name a driver asks for. Bump a version here, and the scenarios say whether Muster still holds. */
export const AGENT_CLIS = {
  'claude-code': { package: '@anthropic-ai/claude-code', version: '2.1.328', bin: 'claude' },
  codex: { package: '@openai/codex', version: '0.169.0', bin: 'codex' },
  // A Node launcher of a native binary, which unpacks its JS into COPILOT_PKG_CACHE_HOME on first run (lib/copilot.ts).
  'copilot-cli': { package: '@github/copilot', version: '1.0.102', bin: 'copilot' },
  'gemini-cli': { package: '@google/gemini-cli', version: '0.61.0', bin: 'gemini' },
  opencode: { package: 'opencode-ai', version: '1.18.33', bin: 'opencode' },
  cline: { package: 'cline', version: '3.0.65', bin: 'cline' },
} satisfies Record<string, AgentCli>

export type AgentName = keyof typeof AGENT_CLIS

const ROOT = join(import.meta.dir, '..', '..', '..')

export const cacheDir = () => process.env.MUSTER_AGENTS_CACHE || join(ROOT, '.cache', 'agents')

/** Where `cli` lives once installed. */
export const installDir = (cli: AgentCli) => join(cacheDir(), `${cli.package}@${cli.version}`)

const binPath = (dir: string, cli: AgentCli) => join(dir, 'node_modules', '.bin', cli.bin)

/** Runs `bin --version` and returns its output; throws unless it exits 0. */
function versionOf(bin: string): string {
  const r = Bun.spawnSync([bin, '--version'], { stdout: 'pipe', stderr: 'pipe', env: { PATH: process.env.PATH ?? '', HOME: process.env.HOME ?? '/tmp' } })
  if (r.exitCode !== 0) throw new Error(`${bin} --version exited ${r.exitCode}: ${r.stderr.toString().trim()}`)
  return r.stdout.toString().trim()
}

/** The path of `name`'s executable, installing the pinned version first when the cache lacks it. */
export async function ensureAgent(name: AgentName): Promise<string> {
  const cli: AgentCli = AGENT_CLIS[name]
  const dir = installDir(cli)
  if (existsSync(binPath(dir, cli))) return binPath(dir, cli)
  mkdirSync(dirname(dir), { recursive: true })
  const temp = `${dir}.tmp-${process.pid}-${Date.now()}`
  try {
    const proc = Bun.spawn(['npm', 'install', '--prefix', temp, '--no-audit', '--no-fund', '--no-save', '--loglevel=error', `${cli.package}@${cli.version}`], {
      stdout: 'pipe',
      stderr: 'pipe',
    })
    const [code, out, err] = await Promise.all([proc.exited, new Response(proc.stdout).text(), new Response(proc.stderr).text()])
    if (code !== 0) throw new Error(`npm install ${cli.package}@${cli.version} exited ${code}:\n${err || out}`)
    const got = versionOf(binPath(temp, cli))
    if (!got.includes(cli.version)) throw new Error(`${cli.package}@${cli.version} installed, but \`${cli.bin} --version\` says "${got}"`)
    try {
      renameSync(temp, dir)
    } catch (e) {
      // Another process installed it first: use theirs.
      if (!existsSync(binPath(dir, cli))) throw e
    }
  } catch (e) {
    throw new Error(`cannot install the agent CLI ${cli.package}@${cli.version} into ${dir}: ${(e as Error).message}`)
  } finally {
    rmSync(temp, { recursive: true, force: true })
  }
  return binPath(dir, cli)
}

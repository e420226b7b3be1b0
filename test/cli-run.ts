// Runs the CLI (`bun cli.ts`) as a subprocess in its own working directory, so
// each test has its own ./settings.json and identity, with SERVICE_* and
// MUSTER_SERVER/MUSTER_TOKEN under the test's control only, and a config
// directory of the test run's own (XDG_CONFIG_HOME) instead of the user's.
import { existsSync, mkdtempSync, readFileSync, realpathSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import type { Subprocess } from 'bun'
import { chooseIdentity } from '../cli/identity'

const CLI = join(import.meta.dir, '..', 'cli.ts')

export interface CliResult {
  code: number
  stdout: string
  bytes: Uint8Array
  stderr: string
  /** stdout parsed as JSON. */
  json: any
  /** stderr parsed as JSON (the server's {error, code}). */
  error: any
}

export interface CliOptions {
  cwd: string
  /** Run this compiled binary instead of `bun cli.ts`. */
  bin?: string
  env?: Record<string, string>
  stdin?: string | Uint8Array
}

/** Where identities of directories outside a repository go in these tests. */
export const CONFIG_HOME = mkdtempSync(join(tmpdir(), 'muster-cli-config-'))
/** The agents' own user settings that `muster init` writes (telemetry, Codex's trust): the test's, never the machine's. */
const AGENT_HOMES = { CLAUDE_CONFIG_DIR: join(CONFIG_HOME, 'claude'), CODEX_HOME: join(CONFIG_HOME, 'codex') }
// An identity chosen from the environment (agents.md): the test's own, never the runner's.
const INHERITED_NOT = /^(SERVICE_|MUSTER_SERVER$|MUSTER_TOKEN$|MUSTER_AGENT$|MUSTER_INSTANCE_TOKEN$|MUSTER_SESSION$|CLAUDE_ENV_FILE$)/

function cliEnv(extra: Record<string, string> = {}): Record<string, string> {
  const env: Record<string, string> = {}
  for (const [k, v] of Object.entries(process.env)) if (v !== undefined && !INHERITED_NOT.test(k)) env[k] = v
  return { ...env, XDG_CONFIG_HOME: CONFIG_HOME, ...AGENT_HOMES, ...extra }
}

/** The identity file the CLI keeps for `dir` (as run by runCli), parsed; null when there is none. */
export function identityOf(dir: string, configHome = CONFIG_HOME, env: Record<string, string> = {}): Record<string, any> | null {
  const { file } = chooseIdentity(dir, { XDG_CONFIG_HOME: configHome, ...env })
  return existsSync(file) ? JSON.parse(readFileSync(file, 'utf8')) : null
}

const tryJson = (text: string) => {
  try {
    return JSON.parse(text)
  } catch {
    return undefined
  }
}

const command = (opts: CliOptions) => (opts.bin ? [opts.bin] : [process.execPath, CLI])

export async function runCli(args: string[], opts: CliOptions): Promise<CliResult> {
  const proc = Bun.spawn([...command(opts), ...args], {
    cwd: opts.cwd,
    env: cliEnv(opts.env),
    stdin: opts.stdin === undefined ? 'ignore' : new Blob([opts.stdin as BlobPart]),
    stdout: 'pipe',
    stderr: 'pipe',
  })
  const [bytes, stderr, code] = await Promise.all([
    new Response(proc.stdout).bytes(),
    new Response(proc.stderr).text(),
    proc.exited,
  ])
  const stdout = new TextDecoder().decode(bytes)
  return { code, stdout, bytes, stderr, json: tryJson(stdout), error: tryJson(stderr) }
}

/** A long-running CLI (events subscribe): stdout lines and stderr collected as they arrive. */
export interface LiveCli {
  proc: Subprocess
  lines(): string[]
  stderr(): string
  stop(): Promise<number>
}

export function spawnCli(args: string[], opts: CliOptions): LiveCli {
  const proc = Bun.spawn([...command(opts), ...args], { cwd: opts.cwd, env: cliEnv(opts.env), stdout: 'pipe', stderr: 'pipe' })
  let out = ''
  let err = ''
  const pump = async (stream: ReadableStream<Uint8Array>, add: (s: string) => void) => {
    const decoder = new TextDecoder()
    for await (const chunk of stream) add(decoder.decode(chunk, { stream: true }))
  }
  void pump(proc.stdout as ReadableStream<Uint8Array>, (s) => (out += s))
  void pump(proc.stderr as ReadableStream<Uint8Array>, (s) => (err += s))
  return {
    proc,
    lines: () => out.split('\n').filter(Boolean),
    stderr: () => err,
    async stop() {
      if (proc.exitCode === null) proc.kill('SIGINT')
      return proc.exited
    },
  }
}

const workdirs: string[] = []

/** A fresh working directory, optionally with a ./settings.json. */
export function workdir(settings?: Record<string, unknown>): string {
  const dir = mkdtempSync(join(tmpdir(), 'muster-cli-'))
  workdirs.push(dir)
  if (settings) writeFileSync(join(dir, 'settings.json'), JSON.stringify(settings))
  return dir
}

export function removeWorkdirs(): void {
  for (const dir of workdirs.splice(0)) rmSync(dir, { recursive: true, force: true })
  // A later test file of the same run may still use it: the CLI makes it again when it writes there.
  rmSync(CONFIG_HOME, { recursive: true, force: true })
}

/** A scratch git repository (its real path: the git root as git prints it), removed by removeWorkdirs. */
export function gitWorkdir(): string {
  const dir = realpathSync(workdir())
  const init = Bun.spawnSync(['git', 'init', '-q', dir])
  if (init.exitCode !== 0) throw new Error(`git init: ${init.stderr.toString()}`)
  return dir
}

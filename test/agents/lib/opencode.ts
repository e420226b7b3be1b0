// Drives the real OpenCode: `opencode run "<prompt>"`, one process per session, which
// loads the repository's .opencode/plugin/muster.ts (muster init opencode), talks to the
// fake Anthropic API only (its built-in `anthropic` provider with options.baseURL, given
// in OPENCODE_CONFIG_CONTENT so the repository's opencode.json stays init's), and disposes
// its plugins on exit (the session's end). What OpenCode needs, learned the hard way:
// - it installs @opencode-ai/plugin with npm into every config directory it loads
//   (~/.config/opencode and the repository's .opencode) before it loads a plugin: about
//   20 s each from the registry. `seedPluginDeps` puts a copy installed once in the agents
//   cache there first, which OpenCode then takes as installed;
// - no models.dev fetch, no autoupdate, no share: the OPENCODE_DISABLE_* flags;
// - a model id of our own under the anthropic provider (its metadata from the config).
import { cpSync, existsSync, mkdirSync, renameSync, rmSync, writeFileSync } from 'node:fs'
import { dirname, join } from 'node:path'
import type { Subprocess } from 'bun'
import { AGENT_CLIS, cacheDir, ensureAgent } from './install'
import type { Turn } from './script'
import type { World } from './world'

export const OPENCODE_MODEL = 'claude-fake'

/** The plugin package OpenCode installs beside its config: the same version as OpenCode. */
const PLUGIN_DEPS = { dependencies: { '@opencode-ai/plugin': AGENT_CLIS.opencode.version } }
const depsDir = () => join(cacheDir(), `opencode-plugin-deps@${AGENT_CLIS.opencode.version}`)

/** Installs (once, into the agents cache) what OpenCode would install into each config directory. */
export async function ensurePluginDeps(): Promise<string> {
  const dir = depsDir()
  if (existsSync(join(dir, 'node_modules', '@opencode-ai', 'plugin', 'package.json'))) return dir
  mkdirSync(dirname(dir), { recursive: true })
  const temp = `${dir}.tmp-${process.pid}-${Date.now()}`
  mkdirSync(temp, { recursive: true })
  try {
    writeFileSync(join(temp, 'package.json'), JSON.stringify(PLUGIN_DEPS, null, 2) + '\n')
    const proc = Bun.spawn(['npm', 'install', '--no-audit', '--no-fund', '--loglevel=error'], { cwd: temp, stdout: 'pipe', stderr: 'pipe' })
    const [code, err] = await Promise.all([proc.exited, new Response(proc.stderr).text()])
    if (code !== 0) throw new Error(`npm install @opencode-ai/plugin exited ${code}: ${err}`)
    try {
      renameSync(temp, dir)
    } catch (e) {
      if (!existsSync(join(dir, 'node_modules'))) throw e
    }
  } finally {
    rmSync(temp, { recursive: true, force: true })
  }
  return dir
}

/** Copies the installed plugin package into an OpenCode config directory (hard links where the filesystem allows). */
export function seedPluginDeps(deps: string, configDir: string): void {
  mkdirSync(configDir, { recursive: true })
  for (const f of ['package.json', 'package-lock.json', 'node_modules']) {
    const from = join(deps, f)
    if (!existsSync(from) || existsSync(join(configDir, f))) continue
    const r = Bun.spawnSync(['cp', '-al', from, join(configDir, f)], { stderr: 'pipe' })
    if (r.exitCode !== 0) cpSync(from, join(configDir, f), { recursive: true })
  }
}

/** The inline config that keeps OpenCode on the fake model and lets it edit and run commands without asking. */
export function opencodeConfig(model: string): string {
  return JSON.stringify({
    provider: { anthropic: { options: { baseURL: `${model}/v1`, apiKey: 'sk-ant-fake-key-for-tests' }, models: { [OPENCODE_MODEL]: { name: 'fake', tool_call: true } } } },
    model: `anthropic/${OPENCODE_MODEL}`,
    small_model: `anthropic/${OPENCODE_MODEL}`,
    permission: { edit: 'allow', bash: 'allow' },
    autoupdate: false,
    share: 'disabled',
  })
}

export interface OpencodeRun {
  code: number
  stdout: string
  stderr: string
}

export interface OpencodeOptions {
  world: World
  /** The fake Anthropic API's URL. */
  model: string
  cwd: string
  prompt: string
  /** MUSTER_AGENT: the name the plugin registers the session under. */
  name?: string
  env?: Record<string, string>
  timeoutMs?: number
}

/** `opencode run "<prompt>"` in `cwd`, as a user types it: one process, one session. */
export async function opencodeRun(o: OpencodeOptions): Promise<OpencodeRun> {
  const { bin, env } = await prepared(o)
  return finished(Bun.spawn([bin, 'run', '--print-logs', o.prompt], { cwd: o.cwd, env, stdin: 'ignore', stdout: 'pipe', stderr: 'pipe' }), o.timeoutMs ?? 80_000)
}

/** The model's turns in OpenCode's own tools. */
export const read = (filePath: string): Turn => ({ tool: { name: 'read', input: { filePath } } })
export const write = (filePath: string, content: string): Turn => ({ tool: { name: 'write', input: { filePath, content } } })
export const edit = (filePath: string, oldString: string, newString: string): Turn => ({ tool: { name: 'edit', input: { filePath, oldString, newString } } })
export const bash = (command: string): Turn => ({ tool: { name: 'bash', input: { command, description: 'run a command' } } })

/** The environment `opencode` runs with: the world's, the fake model, no traffic elsewhere. */
async function prepared(o: Pick<OpencodeOptions, 'world' | 'model' | 'cwd' | 'name' | 'env'>): Promise<{ bin: string; env: Record<string, string> }> {
  const [bin, deps] = await Promise.all([ensureAgent('opencode'), ensurePluginDeps()])
  const env = o.world.env({
    OPENCODE_CONFIG_CONTENT: opencodeConfig(o.model),
    OPENCODE_DISABLE_MODELS_FETCH: '1',
    OPENCODE_DISABLE_AUTOUPDATE: '1',
    OPENCODE_DISABLE_SHARE: '1',
    OPENCODE_DISABLE_LSP_DOWNLOAD: '1',
    ...(o.name ? { MUSTER_AGENT: o.name } : {}),
    ...o.env,
  })
  seedPluginDeps(deps, join(env.HOME, '.config', 'opencode'))
  if (existsSync(join(o.cwd, '.opencode'))) seedPluginDeps(deps, join(o.cwd, '.opencode'))
  return { bin, env }
}

/** The process's exit code, killing it once `timeoutMs` have passed. */
async function exitWithin(proc: Subprocess, timeoutMs: number): Promise<number> {
  const timer = setTimeout(() => proc.kill('SIGKILL'), timeoutMs)
  try {
    return await proc.exited
  } finally {
    clearTimeout(timer)
  }
}

async function finished(proc: Subprocess<'ignore', 'pipe', 'pipe'>, timeoutMs: number): Promise<OpencodeRun> {
  const [stdout, stderr, code] = await Promise.all([new Response(proc.stdout).text(), new Response(proc.stderr).text(), exitWithin(proc, timeoutMs)])
  return { code, stdout, stderr }
}

/**
 * `opencode serve`: OpenCode's headless server, where sessions outlive a client (the TUI
 * and the desktop app run one). Its plugins live in this process: `run` attaches a client
 * for one prompt, `stop` shuts the server down (its plugins disposed).
 */
export class OpencodeServer {
  stderr = ''
  private constructor(
    private proc: Subprocess<'ignore', 'pipe', 'pipe'>,
    private bin: string,
    private env: Record<string, string>,
    private cwd: string,
    readonly url: string,
  ) {}

  static async start(o: Omit<OpencodeOptions, 'prompt' | 'timeoutMs'>): Promise<OpencodeServer> {
    const { bin, env } = await prepared(o)
    const proc = Bun.spawn([bin, 'serve', '--port', '0', '--print-logs'], { cwd: o.cwd, env, stdin: 'ignore', stdout: 'pipe', stderr: 'pipe' })
    const decoder = new TextDecoder()
    let out = ''
    const reader = proc.stdout.getReader()
    const deadline = Date.now() + 60_000
    let m: RegExpExecArray | null
    while (!(m = /listening on (http:\/\/\S+)/.exec(out))) {
      if (Date.now() > deadline) throw new Error(`opencode serve did not listen within 60 s: ${out}`)
      const { value, done } = await reader.read()
      if (done) throw new Error(`opencode serve exited before listening: ${out}`)
      out += decoder.decode(value, { stream: true })
    }
    reader.releaseLock()
    void proc.stdout.pipeTo(new WritableStream()).catch(() => {})
    const server = new OpencodeServer(proc, bin, env, o.cwd, m[1])
    void (async () => {
      for await (const chunk of proc.stderr) server.stderr += decoder.decode(chunk, { stream: true })
    })()
    return server
  }

  /** `opencode run --attach`: one prompt in this server, in a new session or (`continue`) the last one. */
  async run(prompt: string, o: { continue?: boolean; timeoutMs?: number } = {}): Promise<OpencodeRun> {
    const args = [this.bin, 'run', '--attach', this.url, '--dir', this.cwd, ...(o.continue ? ['--continue'] : []), prompt]
    return finished(Bun.spawn(args, { cwd: this.cwd, env: this.env, stdin: 'ignore', stdout: 'pipe', stderr: 'pipe' }), o.timeoutMs ?? 80_000)
  }

  /** Shuts the server down as a person at its terminal would (Ctrl-C), waiting for it to exit. */
  async stop(signal: 'SIGINT' | 'SIGTERM' = 'SIGINT', timeoutMs = 20_000): Promise<number> {
    if (this.proc.exitCode !== null) return this.proc.exitCode
    this.proc.kill(signal)
    return exitWithin(this.proc, timeoutMs)
  }

  /** Stops the server whatever state it is in (a test's cleanup). */
  kill() {
    if (this.proc.exitCode === null) this.proc.kill('SIGKILL')
  }
}

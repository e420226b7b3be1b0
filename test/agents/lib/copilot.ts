// Drives the real GitHub Copilot CLI: `copilot -p` (one prompt, one session: sessionStart,
// the turns, sessionEnd with reason `complete`) against a fake model through its BYOK
// provider settings (COPILOT_PROVIDER_BASE_URL, type `anthropic`: our fake Anthropic API),
// which need no GitHub sign-in. Repository hooks run in prompt mode only in a trusted folder:
// `--trust-folder` trusts the repository for that run. `--allow-all-tools` stands in for the
// person at the terminal (a Muster deny still stops the call: it comes from a hook).
import { join } from 'node:path'
import { ensureAgent, installDir, AGENT_CLIS } from './install'
import type { Turn } from './script'
import type { World } from './world'

export interface CopilotRun {
  code: number
  stdout: string
  stderr: string
}

/** The environment that keeps Copilot on the fake model and its unpacked JS in the agents cache (not re-unpacked per HOME). */
export function copilotEnv(model: string): Record<string, string> {
  return {
    COPILOT_PROVIDER_BASE_URL: model,
    COPILOT_PROVIDER_TYPE: 'anthropic',
    COPILOT_PROVIDER_API_KEY: 'sk-ant-fake-key-for-tests',
    COPILOT_MODEL: 'claude-sonnet-4',
    COPILOT_PKG_CACHE_HOME: join(installDir(AGENT_CLIS['copilot-cli']), 'pkg-cache'),
  }
}

/** Runs one prompt in `cwd` as MUSTER_AGENT `name`, to the end of the session. */
export async function copilot(o: { world: World; model: string; cwd: string; name: string; prompt: string; env?: Record<string, string>; timeoutMs?: number; allowAll?: boolean }): Promise<CopilotRun> {
  const bin = await ensureAgent('copilot-cli')
  const env = o.world.env({ ...copilotEnv(o.model), MUSTER_AGENT: o.name, ...o.env })
  const allow = o.allowAll === false ? [] : ['--allow-all-tools']
  const proc = Bun.spawn([bin, '-p', o.prompt, ...allow, '--no-auto-update', '--trust-folder', '--no-color'], { cwd: o.cwd, env, stdin: 'ignore', stdout: 'pipe', stderr: 'pipe' })
  const timer = setTimeout(() => proc.kill('SIGKILL'), o.timeoutMs ?? 80_000)
  const [code, stdout, stderr] = await Promise.all([proc.exited, new Response(proc.stdout).text(), new Response(proc.stderr).text()])
  clearTimeout(timer)
  return { code, stdout, stderr }
}

/** The model's turns in Copilot's own tools (their inputs as its tool schemas say). */
export const view = (path: string): Turn => ({ tool: { name: 'view', input: { path } } })
export const edit = (path: string, from: string, to: string): Turn => ({ tool: { name: 'edit', input: { path, old_str: from, new_str: to } } })
export const create = (path: string, text: string): Turn => ({ tool: { name: 'create', input: { path, file_text: text } } })
export const bash = (command: string): Turn => ({ tool: { name: 'bash', input: { command, description: 'run a command' } } })

// Drives the real Cline CLI (`cline --json "<prompt>"`, one task, then it exits) against a
// fake Chat Completions API (fake-chat.ts) and a real Muster server. What Cline needs:
// - a provider that takes a base URL: only `openai-compatible` (and `openai`) do; it speaks
//   Chat Completions. `cline auth -p openai-compatible -b <url>` saves it in the scratch HOME;
// - a model id without "gpt" or "codex" in it, so Cline offers its `editor` tool (those get
//   `apply_patch` instead);
// - CLINE_SESSION_BACKEND_MODE=local: otherwise the first run starts a hub daemon that
//   outlives the test;
// - CLINE_PLUGIN_IMPORT_TIMEOUT_MS raised: Cline loads plugins in a sandbox process and drops
//   them all (one line in its log) when that takes over 4 s, as it can on a loaded machine;
// - scratch HOME, no inherited keys, no telemetry, no update check.
// Hook files in .clinerules/hooks/ and plugins in .cline/plugins/ of the workspace run with no
// setting to turn on.
import { chmodSync, mkdirSync, mkdtempSync, realpathSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { ensureAgent } from './lib/install'
import type { LoggedRequest } from './lib/script'

const ROOT = join(import.meta.dir, '..', '..')

/** A model id Cline gives its `editor` tool (any id but a gpt or codex one). */
export const CLINE_MODEL = 'fake-coder'

export interface ClineWorld {
  bin: string
  home: string
  binDir: string
  env: Record<string, string>
  /** A scratch git repository with src/app.ts (its real path). */
  repo(): string
  cleanup(): void
}

export interface Run {
  code: number
  stdout: string
  stderr: string
}

/** The pinned Cline (lib/install.ts's table), installed into the agents cache when missing. */
export const installCline = () => ensureAgent('cline')

export async function clineWorld(o: { modelUrl: string; server: string }): Promise<ClineWorld> {
  const bin = await installCline()
  const base = realpathSync(mkdtempSync(join(tmpdir(), 'muster-cline-')))
  const home = join(base, 'home')
  const binDir = join(base, 'bin')
  mkdirSync(home, { recursive: true })
  mkdirSync(binDir)
  const muster = join(binDir, 'muster')
  writeFileSync(muster, `#!/bin/sh\nexec "${process.execPath}" "${join(ROOT, 'cli.ts')}" "$@"\n`)
  chmodSync(muster, 0o755)
  const env: Record<string, string> = {
    HOME: home,
    PATH: `${binDir}:${process.env.PATH ?? '/usr/bin:/bin'}`,
    LANG: 'C.UTF-8',
    SERVICE_SERVER: o.server,
    CLINE_SESSION_BACKEND_MODE: 'local',
    CLINE_TELEMETRY_DISABLED: '1',
    CLINE_NO_AUTO_UPDATE: '1',
    // Cline drops every plugin whose sandbox takes over 4 s to load (a loaded machine): no deny, no briefing.
    CLINE_PLUGIN_IMPORT_TIMEOUT_MS: '30000',
  }
  const auth = Bun.spawnSync([bin, 'auth', '-p', 'openai-compatible', '-k', 'fake-key', '-m', CLINE_MODEL, '-b', o.modelUrl], { cwd: home, env, stdout: 'pipe', stderr: 'pipe' })
  if (auth.exitCode !== 0) throw new Error(`cline auth exited ${auth.exitCode}: ${auth.stderr}${auth.stdout}`)
  const repos: string[] = []
  return {
    bin,
    home,
    binDir,
    env,
    repo() {
      const dir = realpathSync(mkdtempSync(join(tmpdir(), 'muster-cline-repo-')))
      repos.push(dir)
      mkdirSync(join(dir, 'src'))
      writeFileSync(join(dir, 'src', 'app.ts'), 'export const answer = 41\n')
      writeFileSync(join(dir, 'README.md'), '# scratch\n')
      const git = (...args: string[]) => Bun.spawnSync(['git', ...args], { cwd: dir, env: { ...env, GIT_AUTHOR_NAME: 't', GIT_AUTHOR_EMAIL: 't@t', GIT_COMMITTER_NAME: 't', GIT_COMMITTER_EMAIL: 't@t' } })
      git('init', '-q')
      git('add', '.')
      git('commit', '-qm', 'init')
      return dir
    },
    cleanup() {
      for (const d of repos) rmSync(d, { recursive: true, force: true })
      rmSync(base, { recursive: true, force: true })
    },
  }
}

/** Runs the CLI of this checkout (`muster …`) in `cwd` with the world's environment. */
export function muster(w: ClineWorld, cwd: string, args: string[], env: Record<string, string> = {}): Run {
  const r = Bun.spawnSync([join(w.binDir, 'muster'), ...args], { cwd, env: { ...w.env, ...env }, stdout: 'pipe', stderr: 'pipe' })
  return { code: r.exitCode ?? -1, stdout: r.stdout.toString(), stderr: r.stderr.toString() }
}

/** One task: `cline --json "<prompt>"` in `cwd`, as a user types it. */
export async function clineRun(
  w: ClineWorld,
  cwd: string,
  prompt: string,
  o: { env?: Record<string, string>; timeoutMs?: number; model?: string; spawned?: (p: { kill(signal?: number | NodeJS.Signals): void }) => void } = {},
): Promise<Run> {
  // Always the model: Cline saves a `-m` in its settings for the runs after.
  const p = Bun.spawn([w.bin, '--json', '-m', o.model ?? CLINE_MODEL, prompt], { cwd, env: { ...w.env, ...o.env }, stdin: 'ignore', stdout: 'pipe', stderr: 'pipe' })
  o.spawned?.(p)
  const timer = setTimeout(() => p.kill('SIGKILL'), o.timeoutMs ?? 90_000)
  const [stdout, stderr, code] = await Promise.all([new Response(p.stdout).text(), new Response(p.stderr).text(), p.exited])
  clearTimeout(timer)
  return { code, stdout, stderr }
}

/** The JSON lines of a run's output of `type` (run_result, hook_event, agent_event …). */
export const jsonLines = (r: Run, type: string): any[] =>
  r.stdout
    .split('\n')
    .filter((l) => l.startsWith('{'))
    .map((l) => {
      try {
        return JSON.parse(l)
      } catch {
        return null
      }
    })
    .filter((l) => l?.type === type)

/** What Cline sent back to the model for its tool calls in a request (`tool` messages). */
export const toolResults = (r: LoggedRequest | undefined): string[] =>
  ((r?.body?.messages ?? []) as any[]).filter((m) => m?.role === 'tool').map((m) => (typeof m.content === 'string' ? m.content : JSON.stringify(m.content)))

/** The hook context blocks Cline added to a request (user messages it built from hook output). */
export const hookContexts = (r: LoggedRequest | undefined): string[] =>
  ((r?.body?.messages ?? []) as any[]).filter((m) => m?.role === 'user' && typeof m.content === 'string' && m.content.includes('<hook_context')).map((m) => m.content)

/** Polls `check` until it holds (Cline runs its end-of-task hooks detached: they may finish after it exits). */
export async function eventually<T>(check: () => Promise<T | null | undefined | false>, ms = 15_000): Promise<T> {
  const until = Date.now() + ms
  for (;;) {
    const v = await check()
    if (v) return v
    if (Date.now() > until) throw new Error(`not so after ${ms} ms`)
    await Bun.sleep(150)
  }
}

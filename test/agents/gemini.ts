// Drives the real Gemini CLI (`gemini -p`, its headless mode) against a fake Gemini API
// (fake-gemini.ts) and a real Muster server. What Gemini CLI needs, learned from its source
// and by running it:
// - GOOGLE_GEMINI_BASE_URL and GEMINI_API_KEY, with the API-key auth chosen in the user's
//   settings (security.auth.selectedType = "gemini-api-key"): the key alone is refused in
//   headless mode ("Invalid auth method selected");
// - a model named with -m: with none, each prompt first goes to a routing side request;
// - the folder trusted (~/.gemini/trustedFolders.json: muster init gemini-cli --trust),
//   or headless mode refuses to start and project hooks never run;
// - its shell tool runs `bash -c` with the CLI's own PATH: `muster` on that PATH is enough;
// - scratch HOME, no inherited keys, no telemetry, no update check.
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { ensureAgent } from './lib/install'
import { runMuster, runProcess, scratchRepo, writeMusterShim, type Run } from './lib/scratch'
import type { LoggedRequest } from './lib/script'

/** A model Gemini CLI knows (the fake answers for any). */
export const GEMINI_MODEL = 'gemini-2.5-pro'

/** The pinned Gemini CLI (lib/install.ts's table), installed into the agents cache when missing. */
export const installGemini = () => ensureAgent('gemini-cli')

export interface GeminiWorld {
  bin: string
  home: string
  /** A directory holding a `muster` that runs this checkout's CLI. */
  binDir: string
  /** The environment `gemini` runs with: nothing inherited but PATH and the scratch dirs. */
  env: Record<string, string>
  /** A scratch git repository (its real path, as git prints its root). */
  repo(): string
  cleanup(): void
}

/** A scratch HOME whose Gemini CLI settings point at the fake model server with an API key. */
export async function geminiWorld(o: { modelUrl: string; server: string }): Promise<GeminiWorld> {
  const bin = await installGemini()
  const base = mkdtempSync(join(tmpdir(), 'muster-gemini-world-'))
  const home = join(base, 'home')
  const binDir = join(base, 'bin')
  mkdirSync(join(home, '.gemini'), { recursive: true })
  mkdirSync(binDir)
  writeMusterShim(binDir)
  writeFileSync(
    join(home, '.gemini', 'settings.json'),
    JSON.stringify(
      {
        security: { auth: { selectedType: 'gemini-api-key' } },
        general: { enableAutoUpdate: false, enableAutoUpdateNotification: false },
        privacy: { usageStatisticsEnabled: false },
        telemetry: { enabled: false },
      },
      null,
      2,
    ),
  )
  const env: Record<string, string> = {
    HOME: home,
    PATH: `${binDir}:${process.env.PATH ?? '/usr/bin:/bin'}`,
    GOOGLE_GEMINI_BASE_URL: o.modelUrl,
    GEMINI_API_KEY: 'fake',
    SERVICE_SERVER: o.server,
    LANG: 'C.UTF-8',
    TERM: 'dumb',
    NO_COLOR: '1',
  }
  const repos: string[] = []
  return {
    bin,
    home,
    binDir,
    env,
    repo() {
      const dir = scratchRepo('muster-gemini-repo-', env)
      repos.push(dir)
      return dir
    },
    cleanup() {
      for (const d of repos) rmSync(d, { recursive: true, force: true })
      rmSync(base, { recursive: true, force: true })
    },
  }
}

/** Runs the CLI of this checkout (`muster …`) in `cwd` with the world's environment. */
export function muster(w: GeminiWorld, cwd: string, args: string[], env: Record<string, string> = {}): Run {
  return runMuster(w.binDir, cwd, args, { ...w.env, ...env })
}

/** `gemini -p` in `cwd`: one headless run, tools approved (--approval-mode yolo), as a script runs it. */
export async function geminiRun(w: GeminiWorld, cwd: string, prompt: string, o: { env?: Record<string, string>; args?: string[]; timeoutMs?: number } = {}): Promise<Run> {
  const args = [w.bin, '-m', GEMINI_MODEL, '--approval-mode', 'yolo', ...(o.args ?? []), '-p', prompt]
  return runProcess(args, cwd, { ...w.env, ...o.env }, o.timeoutMs)
}

/** The function responses Gemini CLI sent back to the model in a request (a tool's output, a deny reason, hook context). */
export const responses = (r: LoggedRequest | undefined): string[] =>
  ((r?.body?.contents ?? []) as any[]).flatMap((c) => (Array.isArray(c?.parts) ? c.parts : [])).filter((p: any) => p?.functionResponse).map((p: any) => JSON.stringify(p.functionResponse.response ?? {}))

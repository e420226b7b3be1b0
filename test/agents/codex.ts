// Drives the real Codex CLI (`codex exec`) against a fake OpenAI Responses API
// (fake-openai.ts) and a real Muster server. What Codex needs, learned the hard way:
// - a model name it knows (an unknown one gets fallback metadata and no apply_patch tool);
// - a model_provider with base_url and wire_api = "responses" in a scratch CODEX_HOME;
// - the project trusted, and each project hook trusted (muster init codex --trust does both);
// - commands run through `bash -lc`, which resets PATH from the login profile: `muster` must
//   be on the PATH a login shell gets (here: the scratch HOME's .bash_profile);
// - scratch HOME and CODEX_HOME, no inherited keys, no telemetry, no update check.
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { cacheDir, ensureAgent } from './lib/install'
import { join } from 'node:path'
import { runMuster, runProcess, scratchRepo, writeMusterShim, type Run } from './lib/scratch'
import type { LoggedRequest } from './lib/script'

export type { Run } from './lib/scratch'

/** A model slug Codex 0.169 has metadata for (so it offers the apply_patch tool). */
export const CODEX_MODEL = 'gpt-5.5'

/** The pinned Codex (lib/install.ts's table), installed into the agents cache when missing. */
export const installCodex = () => ensureAgent('codex')

export interface CodexWorld {
  bin: string
  home: string
  codexHome: string
  /** A directory holding a `muster` that runs this checkout's CLI. */
  binDir: string
  /** The environment `codex exec` runs with: nothing inherited but PATH and the scratch dirs. */
  env: Record<string, string>
  /** A scratch git repository (its real path, as git prints its root). */
  repo(): string
  cleanup(): void
}

/** Scratch HOME and CODEX_HOME with a provider pointing at the fake model server. */
export async function codexWorld(o: { modelUrl: string; server: string }): Promise<CodexWorld> {
  const bin = await installCodex()
  // Not under /tmp: Codex refuses to put its helper binaries in a temporary directory.
  mkdirSync(cacheDir(), { recursive: true })
  const base = mkdtempSync(join(cacheDir(), 'codex-world-'))
  const home = join(base, 'home')
  const codexHome = join(home, '.codex')
  const binDir = join(base, 'bin')
  mkdirSync(codexHome, { recursive: true })
  mkdirSync(binDir)
  writeMusterShim(binDir)
  // bash -lc resets PATH from the login profile: the documented fix, in the scratch HOME.
  writeFileSync(join(home, '.bash_profile'), `export PATH="${binDir}:$PATH"\n`)
  writeFileSync(
    join(codexHome, 'config.toml'),
    [
      `model = "${CODEX_MODEL}"`,
      'model_provider = "fake"',
      'check_for_update_on_startup = false',
      '',
      '[model_providers.fake]',
      'name = "fake"',
      `base_url = "${o.modelUrl}"`,
      'wire_api = "responses"',
      'env_key = "FAKE_OPENAI_API_KEY"',
      'request_max_retries = 0',
      'stream_max_retries = 0',
      '',
      '[analytics]',
      'enabled = false',
      '',
      '[otel]',
      'exporter = "none"',
      '',
    ].join('\n'),
  )
  const env: Record<string, string> = {
    HOME: home,
    CODEX_HOME: codexHome,
    PATH: `${binDir}:${process.env.PATH ?? '/usr/bin:/bin'}`,
    FAKE_OPENAI_API_KEY: 'fake',
    SERVICE_SERVER: o.server,
    LANG: 'C.UTF-8',
  }
  const repos: string[] = []
  return {
    bin,
    home,
    codexHome,
    binDir,
    env,
    repo() {
      const dir = scratchRepo('muster-codex-repo-', env)
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
export function muster(w: CodexWorld, cwd: string, args: string[], env: Record<string, string> = {}): Run {
  return runMuster(w.binDir, cwd, args, { ...w.env, ...env })
}

/** `codex exec` in `cwd`: a plain run, as a user types it (plus the sandbox when given). */
export async function codexExec(w: CodexWorld, cwd: string, prompt: string, o: { env?: Record<string, string>; sandbox?: string; flags?: string[]; timeoutMs?: number } = {}): Promise<Run> {
  const args = [w.bin, 'exec', ...(o.sandbox ? ['--sandbox', o.sandbox] : []), ...(o.flags ?? []), prompt]
  return runProcess(args, cwd, { ...w.env, ...o.env }, o.timeoutMs)
}

/** The tool outputs Codex sent back to the model in a request (function and custom tools). */
export const outputs = (r: LoggedRequest | undefined): string[] =>
  ((r?.body?.input ?? []) as any[]).filter((i) => i?.type === 'function_call_output' || i?.type === 'custom_tool_call_output').map((i) => (typeof i.output === 'string' ? i.output : JSON.stringify(i.output)))

export const patchAdd = (path: string, line: string) => `*** Begin Patch\n*** Add File: ${path}\n+${line}\n*** End Patch\n`
/** An update whose header is indented: Codex's parser trims it and applies the patch. */
export const patchUpdate = (path: string, from: string, to: string) => `*** Begin Patch\n  *** Update File: ${path}\n@@\n-${from}\n+${to}\n*** End Patch\n`

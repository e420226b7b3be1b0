// What the drivers of agents run one process per prompt (codex.ts, gemini.ts) share: a
// `muster` shim that runs this checkout's CLI, scratch git repositories, and running a
// process with a time limit.
import { chmodSync, mkdtempSync, realpathSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'

const ROOT = join(import.meta.dir, '..', '..', '..')

export interface Run {
  code: number
  stdout: string
  stderr: string
}

/** Writes `<binDir>/muster`, running this checkout's CLI with the Bun running the tests. */
export function writeMusterShim(binDir: string): void {
  const muster = join(binDir, 'muster')
  writeFileSync(muster, `#!/bin/sh\nexec "${process.execPath}" "${join(ROOT, 'cli.ts')}" "$@"\n`)
  chmodSync(muster, 0o755)
}

/** A fresh git repository with one commit (README.md), as its real path (what git prints as its root). */
export function scratchRepo(prefix: string, env: Record<string, string>): string {
  const dir = realpathSync(mkdtempSync(join(tmpdir(), prefix)))
  const git = (...args: string[]) => Bun.spawnSync(['git', ...args], { cwd: dir, env: { ...env, GIT_AUTHOR_NAME: 't', GIT_AUTHOR_EMAIL: 't@t', GIT_COMMITTER_NAME: 't', GIT_COMMITTER_EMAIL: 't@t' } })
  git('init', '-q')
  writeFileSync(join(dir, 'README.md'), '# scratch\n')
  git('add', '.')
  git('commit', '-qm', 'init')
  return dir
}

/** The shim's `muster …` in `cwd`, to the end. */
export function runMuster(binDir: string, cwd: string, args: string[], env: Record<string, string>): Run {
  const r = Bun.spawnSync([join(binDir, 'muster'), ...args], { cwd, env, stdout: 'pipe', stderr: 'pipe' })
  return { code: r.exitCode ?? -1, stdout: r.stdout.toString(), stderr: r.stderr.toString() }
}

/** Runs `args` in `cwd` with no stdin, killed after `timeoutMs`. */
export async function runProcess(args: string[], cwd: string, env: Record<string, string>, timeoutMs = 90_000): Promise<Run> {
  const p = Bun.spawn(args, { cwd, env, stdin: 'ignore', stdout: 'pipe', stderr: 'pipe' })
  const timer = setTimeout(() => p.kill('SIGKILL'), timeoutMs)
  const [stdout, stderr, code] = await Promise.all([new Response(p.stdout).text(), new Response(p.stderr).text(), p.exited])
  clearTimeout(timer)
  return { code, stdout, stderr }
}

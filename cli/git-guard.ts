// `muster init git` and `muster guard pre-commit|pre-push`: git hooks that refuse a
// commit or push touching files another instance holds exclusively, naming holder and
// reason (`git commit --no-verify` / `git push --no-verify` is the person's way past).
// The hooks go where git looks for them (core.hooksPath respected) and beside what is
// there: our block is put into an existing shell hook after its first line, or an
// existing hook of another kind is kept as `<hook>.pre-muster` and run after ours.
import type { Command } from 'commander'
import { chmodSync, lstatSync, mkdirSync, readFileSync, renameSync, writeFileSync } from 'node:fs'
import { basename, join, resolve } from 'node:path'
import { request, resolveConfig } from './client'
import { Exit, ServerError, UsageError, printJson } from './output'
import { literal, type Conflict } from './reservations'

export const GIT_HOOKS = ['pre-commit', 'pre-push'] as const
type GitHook = (typeof GIT_HOOKS)[number]

const BEGIN = '# muster:begin'
const END = '# muster:end'
const CHAINED = '.pre-muster'
/** At most this many paths per check request (the route's limit). */
const BATCH = 100

/** `git args…` in `cwd`: its stdout, or null when it fails. */
export function git(args: string[], cwd = process.cwd()): string | null {
  try {
    const r = Bun.spawnSync(['git', ...args], { cwd, stdout: 'pipe', stderr: 'ignore' })
    return r.exitCode === 0 ? r.stdout.toString() : null
  } catch {
    return null
  }
}

/** Where git runs this repository's hooks from (core.hooksPath when set), absolute. */
export function hooksDir(cwd = process.cwd()): string | null {
  const dir = git(['rev-parse', '--git-path', 'hooks'], cwd)?.trim()
  return dir ? resolve(cwd, dir) : null
}

/**
 * Our block in a hook. pre-push's stdin (the refs being pushed) goes to the guard and is
 * then given back, so the rest of the hook reads it as if the block were not there.
 */
export function guardBlock(hook: GitHook, server: string): string {
  const what = hook === 'pre-commit' ? 'commit' : 'push'
  const run = `muster guard ${hook} --server '${server.replace(/'/g, `'\\''`)}' "$@"`
  const body =
    hook === 'pre-commit'
      ? [`  ${run} || exit 1`]
      : ['  muster_in=$(mktemp) && cat > "$muster_in"', `  ${run} < "$muster_in" || { rm -f "$muster_in"; exit 1; }`, '  exec < "$muster_in"; rm -f "$muster_in"']
  return [
    `${BEGIN} (muster init git: refuses a ${what} touching files another agent holds; git ${what} --no-verify skips it)`,
    'if command -v muster >/dev/null 2>&1; then',
    ...body,
    'else',
    `  echo "muster: not on PATH, so the ${hook} guard did not run" >&2`,
    'fi',
    END,
  ].join('\n')
}

/** Whether a hook's text has our block. */
export const isGuarded = (text: string) => text.includes(BEGIN) && text.includes(END)

export interface PlannedHook {
  path: string
  action: 'create' | 'update' | 'unchanged'
  content: string
  /** An existing hook of another kind, kept under this name and run after ours. */
  chained?: string
}

const isShell = (firstLine: string) => /^#!.*\b(sh|bash|dash|zsh|ksh)\b/.test(firstLine)

/** What `init git` writes for `hook` in `dir`, merged with what is there. */
export function planHook(dir: string, hook: GitHook, server: string): PlannedHook {
  const path = join(dir, hook)
  const block = guardBlock(hook, server)
  const link = lstatExists(path) ? lstatSync(path) : null
  if (!link) return { path, action: 'create', content: `#!/bin/sh\n${block}\n` }
  const current = link.isSymbolicLink() ? '' : readFileSync(path, 'utf8')
  const start = current.indexOf(BEGIN)
  const end = current.indexOf(END)
  let content: string
  if (start !== -1 && end > start) content = current.slice(0, start) + block + current.slice(end + END.length)
  else if (!link.isSymbolicLink() && isShell(current.split('\n')[0])) {
    const nl = current.indexOf('\n')
    content = nl === -1 ? `${current}\n${block}\n` : `${current.slice(0, nl + 1)}${block}\n${current.slice(nl + 1)}`
  } else {
    const chained = `${hook}${CHAINED}`
    if (lstatExists(join(dir, chained))) throw new UsageError(`${path} is not a shell script and ${join(dir, chained)} is taken: move one of them away, then run init git again`)
    return { path, action: 'update', chained: join(dir, chained), content: `#!/bin/sh\n${block}\nexec "$(dirname "$0")/${chained}" "$@"\n` }
  }
  return { path, action: content === current ? 'unchanged' : 'update', content }
}

function lstatExists(path: string): boolean {
  try {
    lstatSync(path)
    return true
  } catch {
    return false
  }
}

export function writeHooks(dir: string, planned: PlannedHook[]): void {
  mkdirSync(dir, { recursive: true })
  for (const p of planned) {
    if (p.action === 'unchanged') continue
    if (p.chained) renameSync(p.path, p.chained)
    writeFileSync(p.path, p.content)
    chmodSync(p.path, 0o755)
  }
}

const split = (out: string | null) => (out ?? '').split('\0').filter(Boolean)

/** The files the commit being made touches (renames as both names). */
export const stagedFiles = (cwd?: string) => split(git(['diff', '--cached', '--name-only', '--no-renames', '-z'], cwd))

/** The files the commits being pushed touch: each `<local ref> <local sha> <remote ref> <remote sha>` line of pre-push's stdin. */
export function pushedFiles(stdin: string, remote: string, cwd?: string): string[] {
  const files = new Set<string>()
  for (const line of stdin.split('\n')) {
    const [, local, , theirs] = line.trim().split(/\s+/)
    if (!local || /^0+$/.test(local)) continue // a deleted ref pushes no files
    const known = theirs && !/^0+$/.test(theirs) && git(['cat-file', '-e', `${theirs}^{commit}`], cwd) !== null
    const not = known ? [theirs] : remote ? [`--remotes=${remote}`] : ['--remotes']
    for (const f of split(git(['log', '--format=', '--name-only', '--no-renames', '-z', local, '--not', ...not], cwd))) files.add(f)
  }
  return [...files]
}

/** What the person reads when the guard refuses. */
export function refusal(hook: GitHook, project: string, conflicts: Conflict[]): string {
  const what = hook === 'pre-commit' ? 'commit' : 'push'
  const lines = conflicts.map((c) => {
    const until = c.expires_at ? `until ${c.expires_at}` : 'with no expiry'
    const why = c.reason ? `reason "${c.reason}"` : 'no reason given'
    return `  ${c.path}: held as "${c.held_path}" by ${c.instance_name || c.instance_id} (${c.instance_status}), ${why}, ${until}`
  })
  const holders = [...new Set(conflicts.map((c) => c.instance_name || c.instance_id))]
  return [
    `muster: this ${what} touches ${conflicts.length === 1 ? 'a file' : 'files'} another agent holds in ${project}:`,
    ...lines,
    `Ask the holder (${holders.map((h) => `muster send ${h} --subject "…"`).join(', ')}) or wait for the release;`,
    `to ${what} anyway: git ${what} --no-verify`,
  ].join('\n')
}

/** The conflicts of `files` in `project` with what others hold exclusively (the caller's own reservations never count). */
async function conflictsOf(project: string, files: string[]): Promise<Conflict[]> {
  const out: Conflict[] = []
  for (let i = 0; i < files.length; i += BATCH) {
    try {
      await request('POST', '/api/reservations/check', { json: { project, paths: files.slice(i, i + BATCH).map(literal) } })
    } catch (err) {
      if (!(err instanceof ServerError) || err.status !== 409) throw err
      out.push(...(err.body as { conflicts: Conflict[] }).conflicts)
    }
  }
  return out
}

async function guard(hook: GitHook, args: string[], o: { failClosed?: boolean }): Promise<void> {
  const root = git(['rev-parse', '--show-toplevel'])?.trim()
  if (!root) throw new UsageError(`muster guard ${hook}: not inside a git work tree`)
  const project = process.env.MUSTER_PROJECT || basename(root)
  const files = hook === 'pre-commit' ? stagedFiles(root) : pushedFiles(await Bun.stdin.text(), args[0] ?? '', root)
  if (!files.length) return
  let conflicts: Conflict[]
  try {
    resolveConfig()
    conflicts = await conflictsOf(project, files)
  } catch (err) {
    // The guard must not stop a person's work because the server is away, unless asked.
    process.stderr.write(`muster guard ${hook}: ${(err as Error).message}; ${o.failClosed ? 'refusing (--fail-closed)' : 'not checked'}\n`)
    if (o.failClosed) throw new Exit(1)
    return
  }
  if (!conflicts.length) return
  process.stderr.write(refusal(hook, project, conflicts) + '\n')
  throw new Exit(1)
}

export function gitGuardCommands(program: Command): void {
  program
    .command('guard')
    .description('what the git hooks of `muster init git` run: exit 1 naming holder and reason when the commit (pre-commit) or push (pre-push, refs on stdin) touches files another instance holds exclusively')
    .argument('<hook>', 'pre-commit | pre-push')
    .argument('[args...]', 'the hook\'s own arguments (pre-push: remote name and URL)')
    .option('--fail-closed', 'refuse when the server cannot be reached; default: say so and let the commit or push go on')
    .action((hook: string, args: string[], o: { failClosed?: boolean }) => {
      if (!GIT_HOOKS.includes(hook as GitHook)) throw new UsageError(`unknown hook "${hook}": expected pre-commit or pre-push`)
      return guard(hook as GitHook, args, o)
    })
}

/** `muster init git`: the pre-commit and pre-push guards in the repository's hooks directory. */
export function initGit(o: { dryRun?: boolean }): void {
  const dir = hooksDir()
  if (!dir) throw new UsageError('muster init git: not inside a git repository')
  const server = resolveConfig().server
  const planned = GIT_HOOKS.map((h) => planHook(dir, h, server))
  if (o.dryRun) return printJson({ dry_run: true, hooks_dir: dir, files: planned })
  writeHooks(dir, planned)
  printJson({
    hooks_dir: dir,
    files: planned.map((p) => ({ path: p.path, action: p.action === 'unchanged' ? p.action : `${p.action}d`, ...(p.chained ? { chained: p.chained } : {}) })),
  })
}

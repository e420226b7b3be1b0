// Which files a tool call of a coding agent is about to write, as paths relative to the
// session's root: Claude Code's Write/Edit/MultiEdit (file_path) and NotebookEdit
// (notebook_path), Codex's apply_patch (the patch names its files) and Codex's
// Write/Edit aliases, and a shell tool's command as lib/shell reads it. Pure functions:
// the edit check (services/hook-edits.ts) decides.
import { isAbsolute, relative, resolve } from 'node:path'
import { shellWrites, type ShellPatch } from '../lib/shell/writes'
import { patternProblem } from '../lib/overlap'
import { MAX_PATHS } from './reservations'

const FILE_PATH_TOOLS = new Set(['Write', 'Edit', 'MultiEdit'])
/**
 * `*** Add File: P`, `*** Update File: P`, `*** Delete File: P`, `*** Move to: P` (apply_patch's
 * envelope). Codex's own parser trims each line before it looks for these, so an indented
 * header is a header: a patch Codex applies must be a patch Muster checks. The name is the
 * rest of the line, trimmed after the match: a lazy `(.+?)\s*$` backtracks over every run of
 * spaces, quadratic in a padded line.
 */
const PATCH_LINE = /^[ \t]*\*\*\* (?:Add File|Update File|Delete File|Move to): (.*)$/gm

/**
 * Shell tools: Claude Code's `Bash`; Codex sends each of its shell tools (`shell`,
 * `shell_command`, `exec_command`, `local_shell`) to hooks as `Bash` with
 * `{command}`, and the others are kept for the Codex versions that sent their own names.
 */
const SHELL_TOOLS = new Set(['Bash', 'shell', 'shell_command', 'exec_command', 'local_shell', 'container.exec'])

/** True for the tools whose calls are checked against reservations. */
export const writesFiles = (tool: string) => FILE_PATH_TOOLS.has(tool) || tool === 'NotebookEdit' || tool === 'apply_patch' || SHELL_TOOLS.has(tool)

/** The file names a tool call writes, as the agent gave them (absolute or relative to its cwd). */
export function namedFiles(tool: string, input: unknown): string[] {
  if (!input || typeof input !== 'object') return []
  const fields = input as Record<string, unknown>
  const one = (v: unknown) => (typeof v === 'string' && v.trim() !== '' ? [v] : [])
  if (FILE_PATH_TOOLS.has(tool)) return one(fields.file_path)
  if (tool === 'NotebookEdit') return one(fields.notebook_path)
  if (tool === 'apply_patch') return patchFiles(fields)
  return []
}

/**
 * The files an apply_patch envelope names, from any string field of its input (Codex sends it
 * as `command`); reading stops one past MAX_PATHS, as such a call is not checked anyway.
 */
function patchFiles(value: unknown, out: string[] = [], depth = 0): string[] {
  if (out.length > MAX_PATHS) return out
  if (typeof value === 'string') {
    if (!value.includes('*** ')) return out
    const lines = new RegExp(PATCH_LINE)
    for (let m = lines.exec(value); m && out.length <= MAX_PATHS; m = lines.exec(value)) {
      const name = m[1].trimEnd()
      if (name !== '') out.push(name)
    }
  } else if (value && typeof value === 'object' && depth < 4) {
    for (const v of Object.values(value)) patchFiles(v, out, depth + 1)
  }
  return out
}

/**
 * `file` relative to `root` (a relative file is taken from `cwd`), with '/' separators;
 * null when it lies outside the root (the root itself included): such a path is not checked.
 */
export function underRoot(root: string, cwd: string, file: string): string | null {
  const abs = isAbsolute(file) ? resolve(file) : resolve(cwd || root, file)
  const rel = relative(resolve(root), abs)
  if (rel === '' || rel === '..' || rel.startsWith('../') || isAbsolute(rel)) return null
  return rel.split('\\').join('/')
}

/** A file name as a reservation pattern that matches only that file: glob characters escaped (`app/[id]/page.tsx`). */
export const literalPattern = (path: string) => path.replace(/[\\*?[\]{}()!@+]/g, '\\$&')

/** The longest file name read as given (an absolute name: the root's header limit and a pattern's); longer is refused unread. */
const MAX_NAME = 4096 + 1024

/** What a tool call writes: its root-relative files, or why they cannot be checked (the call is then left alone). */
export type EditedFiles = { files: string[]; named: number; problem: string | null }

/**
 * The distinct root-relative files a tool call writes, in the order named. A call naming
 * more files than a reservation may hold, or a file whose pattern breaks a reservation's
 * limits (lib/overlap.ts LIMITS), is not checked at all: `problem` says why, before any
 * overlap work is done.
 */
export function editedFiles(tool: string, input: unknown, root: string, cwd: string): EditedFiles {
  const named = namedFiles(tool, input)
  const refused = (problem: string): EditedFiles => ({ files: [], named: named.length, problem })
  if (named.length > MAX_PATHS) return refused(`the call names more than ${MAX_PATHS} files; at most ${MAX_PATHS} are checked, as a reservation holds`)
  const out = new Set<string>()
  for (const file of named) {
    if (file.length > MAX_NAME) return refused(`a file name of ${file.length} characters; at most ${MAX_NAME}`)
    const rel = underRoot(root, cwd, file)
    if (rel === null) continue
    const problem = patternProblem(literalPattern(rel))
    if (problem) return refused(problem)
    out.add(rel)
  }
  return { files: [...out], named: named.length, problem: null }
}

/** A path a call may write that is checked but never reserved: a directory's whole tree, or a file written in one reading only. */
export interface CheckedPath {
  /** As shown to the model. */
  file: string
  pattern: string
}

/** What a tool call writes, root-relative: the files it plainly writes, and the paths only checked (or why none are checked). */
export type EditTargets = EditedFiles & { checked: CheckedPath[] }

/** The command text of a shell tool's input: `command` (a string, or Codex's argv), or `cmd` (Codex's exec_command). */
function shellCommand(input: unknown): string | string[] | null {
  if (!input || typeof input !== 'object') return null
  const { command, cmd } = input as Record<string, unknown>
  const text = command ?? cmd
  if (typeof text === 'string') return text
  if (Array.isArray(text) && text.every((a) => typeof a === 'string')) return text as string[]
  return null
}

/** The files a tool call writes and the paths to check besides (a shell command's trees and maybes), relative to `root`. */
export function editTargets(tool: string, input: unknown, root: string, cwd: string): EditTargets {
  if (!SHELL_TOOLS.has(tool)) return { ...editedFiles(tool, input, root, cwd), checked: [] }
  const command = shellCommand(input)
  const files = new Set<string>()
  const checked: CheckedPath[] = []
  if (command === null) return { files: [], checked, named: 0, problem: null }
  const patches: ShellPatch[] = []
  for (const w of shellWrites(command, cwd || root, (p) => patches.push(p))) {
    const rel = w.path === resolve(root) ? '' : underRoot(root, cwd, w.path)
    if (rel === null) continue
    if (w.tree) {
      // The root's own tree is every file of the project.
      if (rel !== '') checked.push({ file: rel, pattern: literalPattern(rel) })
      checked.push({ file: rel === '' ? '.' : rel, pattern: rel === '' ? '**' : `${literalPattern(rel)}/**` })
    } else if (rel !== '' && w.maybe) checked.push({ file: rel, pattern: literalPattern(rel) })
    else if (rel !== '') files.add(rel)
  }
  // `apply_patch <<'EOF'` through the shell: Codex applies it as its patch tool, so its files are read as that tool's.
  for (const p of patches)
    for (const f of patchFiles(p.text)) {
      const rel = underRoot(root, p.cwd, f.trim())
      if (rel !== null) files.add(rel)
    }
  const kept = checked.filter((c) => !files.has(c.file) || c.pattern !== literalPattern(c.file))
  // The limits of an edit tool's files (editedFiles) hold here too: past them, nothing is checked.
  const named = files.size + kept.length
  const refused = (problem: string): EditTargets => ({ files: [], checked: [], named, problem })
  if (named > MAX_PATHS) return refused(`the command writes more than ${MAX_PATHS} paths; at most ${MAX_PATHS} are checked, as a reservation holds`)
  for (const pattern of [...[...files].map(literalPattern), ...kept.map((c) => c.pattern)]) {
    const problem = patternProblem(pattern)
    if (problem) return refused(problem)
  }
  return { files: [...files], checked: kept, named, problem: null }
}

// Which files a tool call of a coding agent is about to write, as paths relative to the
// session's root: the files the adapter read from the agent's tool (services/hooks/agents),
// the files an apply_patch envelope names, and a shell command's writes as lib/shell reads
// them. Pure functions: the edit check (services/hooks/edits.ts) decides.
import { isAbsolute, relative, resolve } from 'node:path'
import { shellWrites, type ShellPatch } from '../../lib/shell/writes'
import { patternProblem } from '../../lib/overlap'
import { MAX_PATHS } from '../reservations'
import type { ToolCall } from './types'

/**
 * `*** Add File: P`, `*** Update File: P`, `*** Delete File: P`, `*** Move to: P` (apply_patch's
 * envelope). Codex's own parser trims each line before it looks for these, so an indented
 * header is a header: a patch Codex applies must be a patch Muster checks. The name is the
 * rest of the line, trimmed after the match: a lazy `(.+?)\s*$` backtracks over every run of
 * spaces, quadratic in a padded line.
 */
const PATCH_LINE = /^[ \t]*\*\*\* (?:Add File|Update File|Delete File|Move to): (.*)$/gm

/** True when the call may write files: it is checked against reservations. */
export const writesFiles = (call: ToolCall | undefined): call is ToolCall =>
  !!call && ((call.files?.length ?? 0) > 0 || call.patch !== undefined || call.shell !== undefined || call.tooMany === true)

/** The file names a tool call writes, as the agent gave them (absolute or relative to its cwd). */
export function namedFiles(call: ToolCall): string[] {
  const named = (call.files ?? []).filter((f) => typeof f === 'string' && f.trim() !== '')
  return call.patch === undefined ? named : patchFiles(call.patch, named)
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
  // The usual case, an absolute name under an absolute root, both already normal: a prefix
  // test answers as resolve and relative would (they cost a good part of a hook's check).
  if (isNormalAbsolute(file) && isNormalAbsolute(root)) {
    if (!file.startsWith(root) || file[root.length] !== '/') return null
    const rel = file.slice(root.length + 1)
    return rel.includes('\\') ? rel.split('\\').join('/') : rel
  }
  const abs = isAbsolute(file) ? resolve(file) : resolve(cwd || root, file)
  const rel = relative(resolve(root), abs)
  if (rel === '' || rel === '..' || rel.startsWith('../') || isAbsolute(rel)) return null
  return rel.split('\\').join('/')
}

/** What resolve() would change in an absolute name: an empty, `.` or `..` segment, a trailing `/` (the root `/` too). */
const NOT_NORMAL = /\/\/|\/\.\.?(?:\/|$)|\/$/
const isNormalAbsolute = (path: string) => path[0] === '/' && !NOT_NORMAL.test(path)

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
export function editedFiles(call: ToolCall, root: string, cwd: string): EditedFiles {
  const named = namedFiles(call)
  const refused = (problem: string): EditedFiles => ({ files: [], named: named.length, problem })
  if (named.length > MAX_PATHS || call.tooMany) return refused(`the call names more than ${MAX_PATHS} files; at most ${MAX_PATHS} are checked, as a reservation holds`)
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

/** The files a tool call writes and the paths to check besides (a shell command's trees and maybes), relative to `root`. */
export function editTargets(call: ToolCall, root: string, cwd: string): EditTargets {
  const edited = editedFiles(call, root, cwd)
  const command = call.shell
  if (command === undefined || edited.problem) return { ...edited, checked: [] }
  const files = new Set<string>(edited.files)
  const checked: CheckedPath[] = []
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

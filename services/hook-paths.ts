// Which files a tool call of a coding agent is about to write, as paths relative to the
// session's root: Claude Code's Write/Edit/MultiEdit (file_path) and NotebookEdit
// (notebook_path), Codex's apply_patch (the patch names its files) and Codex's
// Write/Edit aliases. Pure functions: the edit check (services/hook-edits.ts) decides.
import { isAbsolute, relative, resolve } from 'node:path'
import { patternProblem } from '../lib/overlap'
import { MAX_PATHS } from './reservations'

const FILE_PATH_TOOLS = new Set(['Write', 'Edit', 'MultiEdit'])
/**
 * `*** Add File: P`, `*** Update File: P`, `*** Delete File: P`, `*** Move to: P` (apply_patch's
 * envelope). The name is the rest of the line, trimmed after the match: a lazy `(.+?)\s*$`
 * backtracks over every run of spaces, quadratic in a padded line.
 */
const PATCH_LINE = /^\*\*\* (?:Add File|Update File|Delete File|Move to): (.*)$/gm

/** True for the tools whose calls are checked against reservations. */
export const writesFiles = (tool: string) => FILE_PATH_TOOLS.has(tool) || tool === 'NotebookEdit' || tool === 'apply_patch'

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

// The files a shell command writes, read from its text in the forms that say so
// plainly: output redirections (`>`, `>>`, `&>`, `>|`, `<>`, here-documents into a
// file), and the commands of ./commands.ts, across `&&`, `||`, `;`, pipes, subshells
// and `cd DIR` prefixes, each path made absolute against the working directory the
// shell would have there. A path the text does not pin down (a variable, a glob, a
// `cd` to an unknown place) is left out: what cannot be read is not reported.
import { isAbsolute, resolve } from 'node:path'
import { commandWrites, withoutAssignments } from './commands'
import { lex, type Token, type Word } from './lex'

export interface ShellWrite {
  /** Absolute. */
  path: string
  /** The path and everything under it (`rm -r dir`, `git checkout -- dir`). */
  tree: boolean
  /** Written only in one reading of the command (`cp a b` when b is a directory). */
  maybe: boolean
}

/** Redirections that open their file for writing; `>&WORD` does too unless WORD is a descriptor. */
const WRITING = new Set(['>', '>>', '>|', '&>', '&>>', '<>'])
/** Devices and descriptors: written to, never a file of the project. */
const DEVICE = /^\/(dev|proc\/self\/fd|proc\/\d+\/fd)(\/|$)/
/** How deep `sh -c '…'` scripts are followed. */
const MAX_DEPTH = 4
/**
 * How much of a command is read: a decision must not hold up the others, and what a
 * longer command writes beyond it (past a long here-document, say) is not read.
 */
export const MAX_TEXT = 64 * 1024

/** Codex's patch tool, which its shell tools run themselves when the model calls it there. */
const PATCHERS = new Set(['apply_patch', 'applypatch'])

/** A plain word as an absolute path from `cwd` (null: unknown there). */
function place(word: Word, cwd: string | null): string | null {
  if (!word.plain || word.text === '') return null
  if (isAbsolute(word.text)) return resolve(word.text)
  return cwd === null ? null : resolve(cwd, word.text)
}

/** A patch the command hands to `apply_patch` (Codex applies it itself), and the directory its paths are relative to. */
export interface ShellPatch {
  text: string
  cwd: string
}

/**
 * The writes of `command` (text, or an argv as Codex's `shell` tool gives it), run in
 * `cwd`. The patches it gives `apply_patch` (`apply_patch <<'EOF' … EOF`, as an argument,
 * or `<<< '…'`) go to `onPatch`: their files are named inside, in apply_patch's own format.
 */
export function shellWrites(command: string | string[], cwd: string, onPatch: (p: ShellPatch) => void = () => {}): ShellWrite[] {
  const out = new Map<string, ShellWrite>()
  const add: Add = (path, tree, maybe) => {
    if (path === null || DEVICE.test(path)) return
    const had = out.get(path)
    // The strongest reading wins: a plain write of a path beats a maybe.
    if (!had) out.set(path, { path, tree, maybe })
    else out.set(path, { path, tree: had.tree || tree, maybe: had.maybe && maybe })
  }
  try {
    const found: Found = { add, patch: onPatch }
    if (Array.isArray(command)) simple(command.map((text) => ({ text: text.slice(0, MAX_TEXT), plain: true })), [], cwd, found, 0)
    else script(command.slice(0, MAX_TEXT), cwd, found, 0)
  } catch {
    // Nesting deeper than the stack (`"$("$(…`): what was found so far is what can be read.
  }
  return [...out.values()]
}

type Add = (path: string | null, tree: boolean, maybe: boolean) => void
/** Where a command's findings go: its writes, and its patches. */
type Found = { add: Add; patch: (p: ShellPatch) => void }
type Redir = { op: string; fd: string | null; target: Word }

/** Reads a script: its commands in order, the working directory carried across them (not out of a subshell). */
function script(text: string, cwd: string, found: Found, depth: number): void {
  const tokens = lex(text)
  const stack: (string | null)[] = []
  let dir: string | null = cwd
  let words: Word[] = []
  let redirs: Redir[] = []
  let inPipe = false
  const flush = (next: Token | null) => {
    const piped = inPipe || (next?.t === 'op' && next.op === '|')
    dir = simple(words, redirs, dir, found, depth, piped)
    words = []
    redirs = []
    inPipe = next?.t === 'op' && next.op === '|'
  }
  for (let i = 0; i < tokens.length; i++) {
    const tok = tokens[i]
    if (tok.t === 'word') words.push(tok)
    else if (tok.t === 'redir') {
      const target = tokens[i + 1]
      if (target?.t === 'word') {
        redirs.push({ op: tok.op, fd: tok.fd, target })
        i++
      }
    } else {
      flush(tok)
      if (tok.op === '(') stack.push(dir)
      else if (tok.op === ')') dir = stack.length ? stack.pop()! : dir
    }
  }
  flush(null)
}

/**
 * One simple command: its redirections and what it writes, each from `dir`. Answers the
 * working directory after it (a `cd` changes it; one in a pipeline runs in a subshell).
 */
function simple(words: Word[], redirs: Redir[], dir: string | null, found: Found, depth: number, piped = false): string | null {
  const { add } = found
  for (const r of redirs) {
    const dup = r.op === '>&' && /^(\d+|-)$/.test(r.target.text)
    if (WRITING.has(r.op) || (r.op === '>&' && !dup)) add(place(r.target, dir), false, false)
  }
  // Reserved words that start a compound command leave a simple command after them.
  let argv = words
  while (argv.length && argv[0].plain && ['!', '{', '}', 'then', 'do', 'else', 'elif', 'if', 'while', 'until', 'time', 'fi', 'done', 'esac'].includes(argv[0].text)) argv = argv.slice(1)
  argv = withoutAssignments(argv)
  if (!argv.length) return dir
  const name = argv[0].text
  if (argv[0].plain && (name === 'cd' || name === 'pushd')) {
    if (piped) return dir
    const target = argv.slice(1).filter((w) => w.text !== '-P' && w.text !== '-L' && w.text !== '--')
    return target.length === 1 ? place(target[0], dir) : null
  }
  if (argv[0].plain && name === 'popd') return piped ? dir : null
  if (argv[0].plain && PATCHERS.has(name) && dir !== null) {
    const given = argv[1]?.plain ? argv[1].text : redirs.find((r) => r.op === '<<<' && r.target.plain)?.target.text
    const text = given ?? redirs.find((r) => (r.op === '<<' || r.op === '<<-') && r.target.body !== undefined)?.target.body
    if (text !== undefined) found.patch({ text, cwd: dir })
    return dir
  }
  const writes = commandWrites(argv)
  let base = dir
  for (const d of writes.dirs) base = place(d, base)
  for (const t of writes.targets) add(place(t.word, base), t.tree, t.maybe)
  if (writes.script !== null && depth < MAX_DEPTH && base !== null) script(writes.script, base, found, depth + 1)
  return dir
}

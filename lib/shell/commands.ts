// Which of a simple command's arguments it writes, for the commands that say so plainly:
// `tee`, `sed -i`, `perl -i`, `cp`/`mv`/`install` targets, `rm`, `touch`, `truncate`,
// `dd of=`, `git checkout -- P`, `git restore P`, `git rm`, `git mv`, through `sudo`/
// `env`/`command`/`nohup`/`nice`/`timeout`/`time`/`exec`; a `sh -c SCRIPT` hands its
// script back to be read in turn. Any other command writes nothing that can be read here.
import type { Word } from './lex'

export interface Target {
  word: Word
  /** The path and everything under it (`rm -r dir`, `git checkout -- dir`). */
  tree: boolean
  /** Written only in one reading of the command (`cp a b` when b is a directory). */
  maybe: boolean
}

export interface CommandWrites {
  targets: Target[]
  /** Directories the paths are relative to, applied in turn (`git -C DIR`, `env -C DIR`). */
  dirs: Word[]
  /** A script the command runs (`bash -lc '…'`), to be read as a command of its own. */
  script: string | null
}

interface Spec {
  /** Short options that take a value (`-t DIR`, `-tDIR`). */
  short?: string
  /** Long options that take a value (`--target-directory DIR`); `--x=v` always carries its own. */
  long?: string[]
}

interface Parsed {
  /** Each option given, short by its letter and long by its name, with its value when it takes one. */
  opts: Map<string, string | true>
  args: Word[]
}

/** Options and operands of `argv` (after the command name); `--` ends the options. */
function parse(argv: Word[], spec: Spec): Parsed {
  const opts = new Map<string, string | true>()
  const args: Word[] = []
  for (let i = 0; i < argv.length; i++) {
    const w = argv[i]
    const a = w.text
    if (a === '--') {
      args.push(...argv.slice(i + 1))
      break
    }
    if (a.startsWith('--')) {
      const eq = a.indexOf('=')
      const name = a.slice(2, eq === -1 ? undefined : eq)
      if (eq !== -1) opts.set(name, a.slice(eq + 1))
      else if (spec.long?.includes(name)) opts.set(name, argv[++i]?.text ?? '')
      else opts.set(name, true)
    } else if (a.startsWith('-') && a.length > 1) {
      for (let j = 1; j < a.length; j++) {
        if (spec.short?.includes(a[j])) {
          opts.set(a[j], j + 1 < a.length ? a.slice(j + 1) : (argv[++i]?.text ?? ''))
          break
        }
        opts.set(a[j], true)
      }
    } else args.push(w)
  }
  return { opts, args }
}

const file = (word: Word, tree = false, maybe = false): Target => ({ word, tree, maybe })
const join = (dir: Word, name: Word): Word => ({ text: `${dir.text.replace(/\/+$/, '')}/${name.text.replace(/\/+$/, '').split('/').pop()}`, plain: dir.plain && name.plain })
const none = (): CommandWrites => ({ targets: [], dirs: [], script: null })
const only = (targets: Target[]): CommandWrites => ({ targets, dirs: [], script: null })

/** `cp`/`mv`/`install`: the destination (or each file's place in a target directory); `mv` also empties its sources. */
function copy(name: string, argv: Word[]): CommandWrites {
  const spec: Spec =
    name === 'install'
      ? { short: 'mogSt', long: ['mode', 'owner', 'group', 'suffix', 'target-directory', 'strip-program'] }
      : { short: 'St', long: ['suffix', 'target-directory'] }
  const { opts, args } = parse(argv, spec)
  if (name === 'install' && (opts.has('d') || opts.has('directory'))) return none()
  const recursive = name === 'cp' && ['r', 'R', 'a', 'recursive', 'archive'].some((o) => opts.has(o))
  const dir = opts.get('t') ?? opts.get('target-directory')
  const moved = name === 'mv' ? args : []
  let sources = args
  const targets: Target[] = []
  if (typeof dir === 'string') {
    const d = { text: dir, plain: true }
    for (const src of sources) targets.push(file(join(d, src), recursive))
  } else if (args.length >= 2) {
    const dest = args[args.length - 1]
    sources = args.slice(0, -1)
    if (opts.has('T') || opts.has('no-target-directory')) targets.push(file(dest, recursive))
    else if (sources.length > 1 || dest.text.endsWith('/')) for (const src of sources) targets.push(file(join(dest, src), recursive))
    else targets.push(file(dest, recursive), file(join(dest, sources[0]), recursive, true))
    if (name === 'mv') moved.splice(moved.length - 1, 1)
  } else return none()
  for (const src of moved) targets.push(file(src, true))
  return only(targets)
}

/** How an in-place editor's options read: which letters give the program, which take a value. */
interface Editor {
  /** Letters whose value is the program (`-e 's/a/b/'`): then no operand is the program. */
  program: string
  /** Letters that take a value: attached, or the next word when nothing follows them. */
  valued: string
  /** Letters whose value can only be attached (perl's `-l0`, `-F,`). */
  attached: string
  /** Long options whose value is the program; `--in-place[=SUF]` is always in place. */
  long: string[]
  /** Options only before the first operand (perl), or anywhere (sed). */
  optionsFirst: boolean
}

const SED: Editor = { program: 'ef', valued: 'l', attached: '', long: ['expression', 'file'], optionsFirst: false }
const PERL: Editor = { program: 'eE', valued: 'MmI', attached: 'xFlC0', long: [], optionsFirst: true }

/** `sed -i` / `perl -i`: the files after the program (GNU `-iSUF`, BSD `-i ''`); nothing unless in place. */
function inPlace(argv: Word[], e: Editor): CommandWrites {
  let editing = false
  let program = false
  const files: Word[] = []
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i].text
    if (a === '--') {
      files.push(...argv.slice(i + 1))
      break
    }
    if (a.startsWith('--') && !(e.optionsFirst && files.length)) {
      const name = a.slice(2).split('=')[0]
      if (name === 'in-place') editing = true
      else if (e.long.includes(name)) (program = true), (i += a.includes('=') ? 0 : 1)
    } else if (a.startsWith('-') && a.length > 1 && !(e.optionsFirst && files.length)) {
      for (let j = 1; j < a.length; j++) {
        const c = a[j]
        const last = j === a.length - 1
        if (c === 'i') {
          editing = true
          if (last && argv[i + 1]?.text === '') i++ // BSD: `-i ''`, the suffix apart
          break // the rest is the backup suffix
        }
        if (e.program.includes(c) || e.valued.includes(c)) {
          program ||= e.program.includes(c)
          if (last) i++
          break
        }
        if (e.attached.includes(c)) break
      }
    } else files.push(argv[i])
  }
  if (!editing) return none()
  return only((program ? files : files.slice(1)).map((w) => file(w)))
}

/** `git [-C DIR] checkout … -- P…`, `git restore [--worktree] P…`: work-tree files put back; `git rm P…` (not `--cached`), `git mv` as `mv`. */
function git(argv: Word[]): CommandWrites {
  const dirs: Word[] = []
  let i = 0
  for (; i < argv.length; i++) {
    const a = argv[i].text
    if (a === '-C') dirs.push(argv[++i] ?? { text: '', plain: false })
    else if (a === '-c' || a === '--git-dir' || a === '--work-tree' || a === '--namespace') i++
    else if (!a.startsWith('-')) break
  }
  const sub = argv[i]?.text
  const rest = argv.slice(i + 1)
  let paths: Word[] = []
  if (sub === 'checkout') {
    const dash = rest.findIndex((w) => w.text === '--')
    if (dash !== -1) paths = rest.slice(dash + 1)
  } else if (sub === 'restore') {
    const { opts, args } = parse(rest, { short: 's', long: ['source', 'conflict'] })
    if (opts.has('pathspec-from-file')) return none()
    const staged = opts.has('S') || opts.has('staged')
    const worktree = opts.has('W') || opts.has('worktree')
    if (!staged || worktree) paths = args
  } else if (sub === 'rm') {
    const { opts, args } = parse(rest, {})
    if (opts.has('cached') || opts.has('pathspec-from-file')) return none()
    paths = args
  } else if (sub === 'mv') {
    return { ...copy('mv', rest.filter((w) => !['-f', '-k', '-n', '-v', '--force', '--dry-run', '--verbose'].includes(w.text))), dirs }
  }
  // Pathspec magic (`:(glob)…`, `:/`) is not a file name.
  return { targets: paths.filter((w) => !w.text.startsWith(':')).map((w) => file(w, true)), dirs, script: null }
}

const SHELLS = new Set(['sh', 'bash', 'zsh', 'dash', 'ksh', 'mksh'])

/** Wrappers that run the rest of their arguments as a command: how many leading arguments are theirs. */
function wrapped(name: string, argv: Word[]): { rest: Word[]; dirs: Word[] } | null {
  const opts = (short: string, long: string[] = []) => {
    let i = 0
    for (; i < argv.length; i++) {
      const a = argv[i].text
      if (a === '--') return i + 1
      if (!a.startsWith('-') || a === '-') break
      if (a.startsWith('--')) {
        if (!a.includes('=') && long.includes(a.slice(2))) i++
      } else if (a.length === 2 && short.includes(a[1])) i++
    }
    return i
  }
  switch (name) {
    case 'sudo':
      return { rest: argv.slice(opts('ugCDhprtUT', ['user', 'group', 'chdir', 'host', 'prompt', 'role', 'type', 'other-user', 'command-timeout'])), dirs: [] }
    case 'nohup':
    case 'time':
    case 'builtin':
      return { rest: argv.slice(opts('')), dirs: [] }
    case 'command':
      return argv.some((w) => w.text === '-v' || w.text === '-V') ? null : { rest: argv.slice(opts('')), dirs: [] }
    case 'exec':
      return { rest: argv.slice(opts('a')), dirs: [] }
    case 'nice':
      return { rest: argv.slice(opts('n', ['adjustment'])), dirs: [] }
    case 'stdbuf':
      return { rest: argv.slice(opts('ioe', ['input', 'output', 'error'])), dirs: [] }
    case 'timeout': {
      const i = opts('sk', ['signal', 'kill-after'])
      return { rest: argv.slice(i + 1), dirs: [] }
    }
    case 'env': {
      const dirs: Word[] = []
      let i = 0
      for (; i < argv.length; i++) {
        const a = argv[i].text
        if (a === '-C' || a === '--chdir') dirs.push(argv[++i] ?? { text: '', plain: false })
        else if (a.startsWith('--chdir=')) dirs.push({ text: a.slice(8), plain: argv[i].plain })
        else if (a === '-u' || a === '--unset') i++
        else if (a === '-S' || a.startsWith('--split-string')) return null
        else if (a === '-' || a.startsWith('-')) continue
        else if (ASSIGNMENT.test(a)) continue
        else break
      }
      return { rest: argv.slice(i), dirs }
    }
  }
  return null
}

const ASSIGNMENT = /^[A-Za-z_]\w*(\[[^\]]*\])?\+?=/

/** `argv` without the `NAME=value` words before its command. */
export function withoutAssignments(argv: Word[]): Word[] {
  let i = 0
  while (i < argv.length && ASSIGNMENT.test(argv[i].text)) i++
  return argv.slice(i)
}

/** What the simple command `argv` (its name first, assignments taken off) writes. */
export function commandWrites(argv: Word[]): CommandWrites {
  if (!argv.length || !argv[0].plain) return none()
  const name = argv[0].text.split('/').pop()!
  const args = argv.slice(1)
  const inner = wrapped(name, args)
  if (inner) {
    const found = commandWrites(withoutAssignments(inner.rest))
    return { ...found, dirs: [...inner.dirs, ...found.dirs] }
  }
  if (SHELLS.has(name)) {
    for (let i = 0; i < args.length; i++) {
      const a = args[i].text
      if (a === '-o' || a === '-O' || a === '+O' || a === '+o') i++
      else if (/^-[a-zA-Z]*c[a-zA-Z]*$/.test(a)) return args[i + 1]?.plain ? { ...none(), script: args[i + 1].text } : none()
      else if (!a.startsWith('-') && !a.startsWith('+')) break
    }
    return none()
  }
  switch (name) {
    case 'tee':
      return only(parse(args, {}).args.map((w) => file(w)))
    case 'rm': {
      const { opts, args: files } = parse(args, {})
      const tree = ['r', 'R', 'recursive'].some((o) => opts.has(o))
      return only(files.map((w) => file(w, tree)))
    }
    case 'touch':
      return only(parse(args, { short: 'drt', long: ['date', 'reference', 'time'] }).args.map((w) => file(w)))
    case 'truncate':
      return only(parse(args, { short: 'sr', long: ['size', 'reference'] }).args.map((w) => file(w)))
    case 'dd':
      return only(args.filter((w) => w.text.startsWith('of=')).map((w) => file({ text: w.text.slice(3), plain: w.plain })))
    case 'cp':
    case 'mv':
    case 'install':
      return copy(name, args)
    case 'sed':
    case 'gsed':
      return inPlace(args, SED)
    case 'perl':
      return inPlace(args, PERL)
    case 'git':
      return git(args)
  }
  return none()
}

// What the docs name, checked against the repository: links and anchors, server
// flags, CLI commands and their options, environment variables, routes and file
// paths. Read statically (the route files, lib/config.ts, the CLI's command tree),
// so a tree that is mid-edit elsewhere still gets its docs checked.
import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs'
import { dirname, join, relative, resolve } from 'node:path'
import type { Command } from 'commander'

export const ROOT = join(import.meta.dir, '..')

export interface Finding {
  file: string
  line: number
  problem: string
}

export interface Doc {
  file: string
  text: string
  lines: string[]
}

/** README.md, CHANGELOG.md and every Markdown file under docs/. */
export function readDocs(): Doc[] {
  const files = ['README.md', 'CHANGELOG.md']
  const walk = (dir: string) => {
    for (const name of readdirSync(join(ROOT, dir)).sort()) {
      const path = join(dir, name)
      if (statSync(join(ROOT, path)).isDirectory()) walk(path)
      else if (name.endsWith('.md')) files.push(path)
    }
  }
  if (existsSync(join(ROOT, 'docs'))) walk('docs')
  return files.map((file) => {
    const text = readFileSync(join(ROOT, file), 'utf8')
    return { file, text, lines: text.split('\n') }
  })
}

/** GitHub's anchor of a heading: lower case, punctuation dropped, spaces to hyphens; repeats get -1, -2. */
export function anchorsOf(text: string): Set<string> {
  const seen = new Map<string, number>()
  const out = new Set<string>()
  let fenced = false
  for (const line of text.split('\n')) {
    if (line.startsWith('```')) fenced = !fenced
    const m = !fenced && /^#{1,6}\s+(.*?)\s*#*\s*$/.exec(line)
    if (!m) continue
    const base = m[1]!
      .replace(/<[^>]+>/g, '')
      .toLowerCase()
      .replace(/[^\p{L}\p{N}\s_-]/gu, '')
      .replace(/\s/g, '-')
    const n = seen.get(base) ?? 0
    seen.set(base, n + 1)
    out.add(n === 0 ? base : `${base}-${n}`)
  }
  return out
}

const at = (doc: Doc, index: number) => doc.text.slice(0, index).split('\n').length

/** Every `[text](target)` that is not a web or mail address resolves to a file, and its #anchor to a heading there. */
export function checkLinks(docs: Doc[]): Finding[] {
  const out: Finding[] = []
  for (const doc of docs) {
    for (const m of doc.text.matchAll(/\]\(([^)\s]+)\)/g)) {
      const target = m[1]!
      if (/^(https?|mailto):/.test(target)) continue
      const [path, anchor] = target.split('#') as [string, string | undefined]
      const file = path === '' ? join(ROOT, doc.file) : resolve(ROOT, dirname(doc.file), path)
      const line = at(doc, m.index!)
      if (!file.startsWith(ROOT + '/') || !existsSync(file)) {
        out.push({ file: doc.file, line, problem: `link to ${target}: no such file in the repository` })
        continue
      }
      if (anchor !== undefined && !(statSync(file).isFile() && anchorsOf(readFileSync(file, 'utf8')).has(anchor)))
        out.push({ file: doc.file, line, problem: `link to ${target}: no heading #${anchor} in ${relative(ROOT, file)}` })
    }
  }
  return out
}

/** Inline code spans (one may wrap onto the next line, as in Markdown) and the lines of fenced blocks, each with its line number. */
export function codeOf(doc: Doc): { code: string; line: number; fenced: boolean }[] {
  const out: { code: string; line: number; fenced: boolean }[] = []
  let fenced = false
  let block: { text: string; line: number }[] = []
  const flush = () => {
    const joined = block.map((b) => b.text).join('\n')
    const lineAt = (offset: number) => block[0]!.line + joined.slice(0, offset).split('\n').length - 1
    for (const m of joined.matchAll(/`([^`]+)`/g)) out.push({ code: m[1]!.replace(/\n/g, ' '), line: lineAt(m.index!), fenced: false })
    block = []
  }
  doc.lines.forEach((text, i) => {
    if (text.startsWith('```')) {
      if (!fenced && block.length) flush()
      fenced = !fenced
      return
    }
    if (fenced) out.push({ code: text, line: i + 1, fenced: true })
    else if (text.trim() === '') block.length && flush()
    else block.push({ text, line: i + 1 })
  })
  if (block.length) flush()
  return out
}

// ---- flags and commands ----

/** The server's flags, as lib/config.ts declares them, with --version and --help. */
export function serverFlags(): Set<string> {
  const source = readFileSync(join(ROOT, 'lib/config.ts'), 'utf8')
  return new Set([...source.matchAll(/flag:\s*'(--[a-z0-9-]+)'/g)].map((m) => m[1]!).concat(['--version', '--help']))
}

export interface CliTree {
  /** Command paths below `muster` ('state get'), each with its long options. */
  commands: Map<string, Set<string>>
  /** Options every command takes (taken out of argv before parsing, or the program's own). */
  globals: Set<string>
}

export function cliTree(program: Command): CliTree {
  const commands = new Map<string, Set<string>>()
  const walk = (cmd: Command, path: string) => {
    commands.set(path, new Set(cmd.options.flatMap((o) => [o.long, o.negate ? o.long : undefined]).filter((x): x is string => !!x)))
    for (const c of cmd.commands) {
      for (const name of [c.name(), ...c.aliases()]) walk(c, path ? `${path} ${name}` : name)
    }
  }
  walk(program, '')
  const globalsSource = readFileSync(join(ROOT, 'cli/globals.ts'), 'utf8')
  const globals = new Set([
    ...commands.get('')!,
    ...[...globalsSource.matchAll(/'(--?[a-z][a-z0-9-]*)'/g)].map((m) => m[1]!),
    '--help',
    '--version',
  ])
  return { commands, globals }
}

/** What runs a command segment: the CLI, the server, another program, or none (a bare flag in prose). */
export type Program = 'muster' | 'server' | 'other' | 'none'

/**
 * A code span or code line cut into command segments (at unescaped `|`, `;`, `&&`),
 * each with the program that runs it and its words after the program name.
 */
export function segmentsOf(code: string): { program: Program; words: string[] }[] {
  return code
    .replace(/\\\|/g, '\u0000')
    .split(/\|\|?|;|&&|\$\(/)
    .map((segment) => {
      const words = segment.replace(/\s#.*$/, '').replace(/\u0000/g, '|').replace(/^[\s#]*(\$\s+)?/, '').split(/\s+/).filter(Boolean)
      // Leading environment assignments (`MUSTER_AGENT=ada muster register ada`) and sudo run the program after them.
      while (words.length && (/^[A-Z_][A-Z0-9_]*=/.test(words[0]!) || words[0] === 'sudo' || words[0] === 'export')) {
        if (words.shift() === 'sudo' && words[0] === '-u') words.splice(0, 2)
      }
      const first = words[0] ?? ''
      if (first === 'muster' || first.endsWith('/muster')) return { program: 'muster' as const, words: words.slice(1) }
      if (/(^|\/)muster-server$/.test(first)) return { program: 'server' as const, words: words.slice(1) }
      if (first === 'bun' && words[1] === 'app.ts') return { program: 'server' as const, words: words.slice(2) }
      if (first === 'npm' && words[1] === 'start') return { program: 'server' as const, words: words.slice(2) }
      if (first.startsWith('-') || first === '') return { program: 'none' as const, words }
      return { program: 'other' as const, words: words.slice(1) }
    })
}

const FLAG = /^(--[a-zA-Z][a-zA-Z0-9-]*)/

/** A command path of `muster …` must exist, and each flag must be an option of that command or a global one. */
export function checkCli(words: string[], tree: CliTree): string[] {
  const problems: string[] = []
  let path = ''
  let i = 0
  for (; i < words.length; i++) {
    const next = path ? `${path} ${words[i]}` : words[i]!
    if (!tree.commands.has(next)) break
    path = next
  }
  const first = words[i]
  // A word that reads like a command name but is none (`muster deploy`); placeholders and values pass.
  const hasSubcommands = path === '' || [...tree.commands.keys()].some((k) => k.startsWith(`${path} `))
  if (hasSubcommands && first && /^[a-z][a-z-]*$/.test(first)) return [`\`muster ${path ? `${path} ` : ''}${first}\`: no such command`]
  const own = tree.commands.get(path)!
  for (const w of words.slice(i)) {
    const flag = FLAG.exec(w.replace(/^\[/, ''))?.[1]
    if (flag && !own.has(flag) && !tree.globals.has(flag)) problems.push(`\`muster ${path}\` has no option ${flag}`)
  }
  return problems
}

// ---- environment variables ----

/** Every SERVICE_* and MUSTER_* name that the code (not the docs) mentions. */
export function envNamesInCode(): Set<string> {
  return namesInCode(/\b(?:SERVICE|MUSTER)_[A-Z0-9_]+\b/g)
}

/** Every match of `pattern` in the code: sources, scripts and configuration, not the docs. */
export function namesInCode(pattern: RegExp): Set<string> {
  const names = new Set<string>()
  const walk = (dir: string) => {
    for (const name of readdirSync(join(ROOT, dir))) {
      if (['node_modules', '.git', 'docs', 'muster-data', 'dist'].includes(name)) continue
      const path = join(dir, name)
      const full = join(ROOT, path)
      if (statSync(full).isDirectory()) walk(path)
      else if (/\.(ts|js|json|toml|sh)$|^Dockerfile$|^run$/.test(name))
        for (const m of readFileSync(full, 'utf8').matchAll(pattern)) names.add(m[0])
    }
  }
  walk('.')
  return names
}

// ---- routes ----

export interface Route {
  method: string
  segments: string[]
}

/** The routes the route files declare (`.get('/api/x/:id', …)`), `ws` as GET, `all` as any method. */
export function declaredRoutes(): Route[] {
  const out: Route[] = []
  for (const dir of ['routes', 'http']) {
    for (const name of readdirSync(join(ROOT, dir))) {
      if (!name.endsWith('.ts')) continue
      const source = readFileSync(join(ROOT, dir, name), 'utf8')
      for (const m of source.matchAll(/\.(get|post|put|delete|patch|head|all|ws)\(\s*['`](\/[^'`$]*)['`]/g))
        out.push({ method: m[1] === 'ws' ? 'GET' : m[1]!.toUpperCase(), segments: m[2]!.split('/').filter(Boolean) })
    }
  }
  return out
}

/** A documented path (`/api/state/{key…}`, `/api/tasks/12/retry`) against a declared one (`/api/state/*`, `/api/tasks/:id/retry`). */
export function pathMatches(doc: string[], route: string[]): boolean {
  if (route.length === 0) return doc.length === 0
  const [r, ...rest] = route
  if (r === '*') return doc.length >= 1
  if (doc.length === 0) return false
  const [d, ...drest] = doc
  const docParam = /^\{.*\}$/.test(d!)
  if (r!.startsWith(':')) return pathMatches(drest, rest)
  return !docParam && d === r && pathMatches(drest, rest)
}

const METHODS = ['GET', 'POST', 'PUT', 'PATCH', 'DELETE', 'HEAD']
const CHECKED_PREFIX = /^\/(api\/|v1\/(logs|metrics)$|mcp$|metrics$|health$|livez$|readyz$|openapi\.json$|docs$)/

/** `METHOD /path` in prose or code, and `| METHOD | \`/path\` |` table rows. */
export function routesNamed(doc: Doc): { method: string; path: string; line: number }[] {
  const out: { method: string; path: string; line: number }[] = []
  const clean = (path: string) => path.replace(/[?#].*$/, '').replace(/[.,:;)]+$/, '').replace(/\[.*$/, '')
  doc.lines.forEach((text, i) => {
    const row = /^\|\s*([A-Z]+)\b[^|]*\|([^|]*)\|/.exec(text)
    if (row && METHODS.includes(row[1]!))
      for (const p of row[2]!.matchAll(/`?(\/[^\s`,]+)`?/g)) out.push({ method: row[1]!, path: clean(p[1]!), line: i + 1 })
    for (const m of text.matchAll(/\b(GET|POST|PUT|PATCH|DELETE|HEAD)(?:\/(?:GET|POST|PUT|PATCH|DELETE|HEAD))*\s+`?(\/[^\s`]*)/g)) {
      for (const method of m[0].split(/\s+/)[0]!.split('/')) out.push({ method, path: clean(m[2]!), line: i + 1 })
    }
  })
  return out.filter((r) => CHECKED_PREFIX.test(r.path))
}

/** `a|b` in the last segment names both; a trailing `…` names any route below. */
export function routeExists(method: string, path: string, routes: Route[]): boolean {
  const wanted = method === 'HEAD' ? 'GET' : method
  const candidates = routes.filter((r) => (r.method === wanted || r.method === 'ALL') && !(r.method === 'ALL' && r.segments.join('/') === 'api/*'))
  const open = path.endsWith('…')
  const segments = path.replace(/…$/, '').replace(/\\\|/g, '|').split('/').filter(Boolean)
  const last = segments.pop() ?? ''
  return last.split('|').every((alt) => {
    const doc = [...segments, alt].filter(Boolean)
    return candidates.some((r) =>
      open ? r.segments.length >= doc.length && pathMatches(doc, r.segments.slice(0, doc.length)) : pathMatches(doc, r.segments),
    )
  })
}

// ---- files ----

/** Top-level names of the repository: a span starting with one of them is a path in it. */
export function topLevel(): Set<string> {
  const tracked = Bun.spawnSync(['git', 'ls-files'], { cwd: ROOT }).stdout.toString().split('\n')
  return new Set([...tracked.map((p) => p.split('/')[0]!).filter(Boolean), 'docs'])
}

/** Words of code spans that name a repository path (`routes/state.ts`, `bench/run.ts`, `test/fixtures/hooks/`). */
export function pathsNamed(code: string, top: Set<string>): string[] {
  return code
    .split(/[\s=,()"']+/)
    .map((w) => w.replace(/[.,:;]+$/, ''))
    .filter((w) => w.includes('/') && !/[<>*{}…$]/.test(w) && !w.startsWith('/') && !/^\w+:/.test(w))
    .filter((w) => top.has(w.split('/')[0]!))
}

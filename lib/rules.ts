// The validation rule engine: pure functions, no I/O. Rules are checked and
// normalised here (for PUT, propose, import and templates alike) and evaluated
// against a file's content per the spec's validation semantics.
//
// Patterns come from agents, so they run on RE2 (re2js): matching is linear in
// the input whatever the pattern, and no pattern can backtrack catastrophically.
// The price is RE2's dialect: no backreferences and no lookaround; such patterns
// are refused with 400 when the rule is written.
import { isObject } from './values'
import { Lru } from './lru'
import type { RE2JS } from 're2js'
import { invalid } from './errors'
import { caselessText, requiredLiterals, type Literals } from './literals'

export const SEVERITIES = ['error', 'warning'] as const
export const MATCH_TYPES = ['regex', 'missing', 'custom'] as const
export const SOURCES = ['local', 'learned', 'external'] as const
export const STATUSES = ['accepted', 'proposed', 'rejected'] as const
export const GLOBAL_PROJECT = '_global'

export type Severity = (typeof SEVERITIES)[number]
export type MatchType = (typeof MATCH_TYPES)[number]
export type Source = (typeof SOURCES)[number]
export type Status = (typeof STATUSES)[number]

/** A rule as written: checked, with every default filled in. */
export interface RuleDraft {
  project: string
  rule_id: string
  severity: Severity
  match_type: MatchType
  pattern: string
  message: string
  applies_to: string[]
  stack: string
  proposed_by: string
  context: string
}

/** A stored rule. */
export interface Rule extends RuleDraft {
  source: Source
  status: Status
  created_at: string
  updated_at: string
}

export interface Violation {
  rule_id: string
  severity: Severity
  message: string
  /** 1-based; regex and custom rules only. */
  line?: number
  match?: string
}

export interface Subject {
  content: string
  filename?: string
  stack?: string
}

const MAX_PATTERN = 4096
const MAX_ID = 256

// ---- custom checks ------------------------------------------------------------

/** Built-in checks by name: each is a literal text flagged on every line that contains it. */
const CUSTOM_CHECKS: Record<string, { needle: string; message: string }> = {
  'no-console-log': { needle: 'console.log(', message: 'console.log( call found' },
}

export const customCheck = (rule: Pick<RuleDraft, 'match_type' | 'pattern'>) =>
  rule.match_type === 'custom' ? CUSTOM_CHECKS[rule.pattern] : undefined

// ---- compiled caches ------------------------------------------------------------

interface Compiled {
  re: RE2JS
  /** Whether a search of a block of lines can rule out every line in it (see regexViolations). */
  wholeSearch: boolean
  /** Texts one of which every match holds (lib/literals.ts), or null. */
  literals: Literals | null
}

// The matchers are required with the first pattern or glob compiled, not when the server starts.
const re2 = (): typeof RE2JS => (require('re2js') as typeof import('re2js')).RE2JS
const picomatch = (glob: string, options: import('picomatch').PicomatchOptions) => (require('picomatch') as typeof import('picomatch'))(glob, options)

const patterns = new Lru<string, Compiled | string>(2000)
const globs = new Lru<string, (path: string) => boolean>(2000)

// \A, \z and a flag group turning multi-line off make a match depend on the text around the line.
const TEXT_ANCHORED = /\\[Az]|\(\?[a-zA-Z]*-[a-zA-Z]*m/

/** The compiled pattern, or the RE2 error message for one that does not compile. */
function compileCached(pattern: string): Compiled | string {
  return patterns.getOr(pattern, () => {
    try {
      // MULTILINE: ^ and $ mean line start and end, the same on a single line as in the whole content.
      const RE2 = re2()
      return { re: RE2.compile(pattern, RE2.MULTILINE), wholeSearch: !TEXT_ANCHORED.test(pattern), literals: requiredLiterals(pattern) }
    } catch (err) {
      // re2js reports the pattern with the (?m) it was compiled under; show the agent's own.
      return String((err as Error).message ?? err).replace(/^error parsing regexp: /, '').replace('`(?m)', '`')
    }
  })
}

/** Why a pattern cannot be used as a regex, or null when it compiles. */
export function patternError(pattern: string): string | null {
  const c = compileCached(pattern)
  return typeof c === 'string' ? c : null
}

function compiled(pattern: string): Compiled {
  const c = compileCached(pattern)
  // Rules are checked when written; one that slipped through (older data) fails loudly, not silently.
  if (typeof c === 'string') throw invalid(`invalid pattern "${pattern}": ${c}`)
  return c
}

function globMatcher(glob: string): (path: string) => boolean {
  // dot: the default "*" must cover dotfiles (.env) too.
  return globs.getOr(glob, () => picomatch(glob, { dot: true }))
}

// ---- checking rules -------------------------------------------------------------

type Raw = Record<string, unknown>


function text(raw: Raw, field: string, where: string, def = ''): string {
  const v = raw[field]
  if (v === undefined || v === null) return def
  if (typeof v !== 'string') throw invalid(`${where}invalid ${field}: expected a string`)
  return v
}

function oneOf<T extends string>(raw: Raw, field: string, allowed: readonly T[], where: string): T {
  const v = text(raw, field, where, allowed[0])
  if (v === '') return allowed[0]
  if (!allowed.includes(v as T)) throw invalid(`${where}invalid ${field}: expected ${allowed.join(', ')}`)
  return v as T
}

/**
 * Checks one rule object and fills in the defaults. `project` set means the
 * project is given by the URL (PUT) or the caller (template apply) and any in the
 * object is ignored; otherwise the object must name it. `index` names the rule in
 * messages when it is part of a list.
 */
export function checkRule(raw: unknown, opts: { project?: string; index?: number } = {}): RuleDraft {
  const where = opts.index === undefined ? '' : `rule ${opts.index}: `
  if (!isObject(raw)) throw invalid(`${where}expected a rule object`)
  const project = opts.project ?? text(raw, 'project', where).trim()
  if (!project) throw invalid(`${where}project is required`)
  const rule_id = text(raw, 'rule_id', where).trim()
  if (!rule_id) throw invalid(`${where}rule_id is required`)
  if (rule_id.length > MAX_ID) throw invalid(`${where}rule_id is longer than ${MAX_ID} characters`)
  const pattern = text(raw, 'pattern', where)
  if (pattern === '') throw invalid(`${where}pattern is required`)
  if (pattern.length > MAX_PATTERN) throw invalid(`${where}pattern is longer than ${MAX_PATTERN} characters`)
  const severity = oneOf(raw, 'severity', SEVERITIES, where)
  const match_type = oneOf(raw, 'match_type', MATCH_TYPES, where)
  let applies_to = ['*']
  if (raw.applies_to !== undefined && raw.applies_to !== null) {
    if (!Array.isArray(raw.applies_to) || raw.applies_to.some((g) => typeof g !== 'string' || g === ''))
      throw invalid(`${where}invalid applies_to: expected an array of non-empty glob strings`)
    // An empty list would silently disable the rule for every named file; it means the default.
    if (raw.applies_to.length) applies_to = raw.applies_to as string[]
  }
  const draft: RuleDraft = {
    project,
    rule_id,
    severity,
    match_type,
    pattern,
    message: text(raw, 'message', where),
    applies_to,
    stack: text(raw, 'stack', where).trim(),
    proposed_by: text(raw, 'proposed_by', where),
    context: text(raw, 'context', where),
  }
  if (!customCheck(draft)) {
    const error = patternError(pattern)
    if (error) throw invalid(`${where}invalid pattern "${pattern}": ${error} (RE2 syntax: no backreferences or lookaround)`)
  }
  return draft
}

/** Checks a list of rules: each as checkRule, no duplicate project + rule_id, and (unless allowEmpty) at least one. */
export function checkRules(raw: unknown, opts: { project?: string; allowEmpty?: boolean } = {}): RuleDraft[] {
  if (!Array.isArray(raw)) throw invalid('expected an array of rules')
  if (raw.length === 0 && !opts.allowEmpty) throw invalid('expected at least one rule')
  const seen = new Map<string, number>()
  return raw.map((r, index) => {
    const draft = checkRule(r, { project: opts.project, index })
    const key = `${draft.project}\u0000${draft.rule_id}`
    const first = seen.get(key)
    if (first !== undefined) throw invalid(`rule ${index}: duplicate rule_id "${draft.rule_id}" (also rule ${first})`)
    seen.set(key, index)
    return draft
  })
}

// ---- evaluation -------------------------------------------------------------------

export function defaultMessage(rule: Pick<RuleDraft, 'match_type' | 'pattern'>): string {
  const check = customCheck(rule)
  if (check) return check.message
  if (rule.match_type === 'missing') return `required pattern "${rule.pattern}" not found`
  return `forbidden pattern "${rule.pattern}" found`
}

/** Semantics 2 and 3: does the rule run for this request? */
export function applies(rule: Pick<RuleDraft, 'stack' | 'applies_to'>, subject: Pick<Subject, 'filename' | 'stack'>): boolean {
  if (subject.stack && rule.stack && rule.stack !== subject.stack) return false
  if (!subject.filename) return true
  const path = subject.filename.replace(/\\/g, '/')
  const base = path.slice(path.lastIndexOf('/') + 1)
  return rule.applies_to.some((g) => {
    const m = globMatcher(g)
    return m(path) || m(base)
  })
}

/** The content split into lines (LF, CRLF or CR); a final line break does not start another line; "" has none. */
export class Lines {
  readonly text: string
  readonly lines: string[]
  /** Offset in `text` where each line starts. */
  private starts: number[]

  constructor(content: string) {
    this.text = content.includes('\r') ? content.replace(/\r\n?/g, '\n') : content
    this.lines = this.text === '' ? [] : this.text.split('\n')
    if (this.lines.length > 1 && this.lines[this.lines.length - 1] === '') this.lines.pop()
    this.starts = new Array(this.lines.length)
    let at = 0
    for (let i = 0; i < this.lines.length; i++) (this.starts[i] = at), (at += this.lines[i].length + 1)
  }

  /** Index of the line holding text offset `offset`. */
  lineAt(offset: number): number {
    let lo = 0
    let hi = this.lines.length - 1
    while (lo < hi) {
      const mid = (lo + hi + 1) >> 1
      if (this.starts[mid] <= offset) lo = mid
      else hi = mid - 1
    }
    return lo
  }

  private lowered: string | null | undefined

  /** The text lower-cased offset for offset, for caseless literals (lib/literals.ts), or null when that is not possible. */
  lower(): string | null {
    if (this.lowered === undefined) this.lowered = caselessText(this.text)
    return this.lowered
  }

  /** Offset where line `i` starts. */
  start(i: number): number {
    return this.starts[i]
  }

  /** Lines from..to-1 as one text, joined by \n. */
  block(from: number, to: number): string {
    const end = to < this.lines.length ? this.starts[to] - 1 : this.text.length
    return this.text.slice(this.starts[from], end)
  }
}

/** Lines per block in the block pre-check of line rules. */
const BLOCK = 64

/** At most this many violations in one answer; `count` still tells the true total. */
export const MAX_VIOLATIONS = 10_000

/** The violations found, the first `max` of them kept. */
class Sink {
  readonly list: Violation[] = []
  count = 0
  constructor(readonly max: number) {}
  /** Whether the next violation is kept (else only counted: no need to build it). */
  get keeps(): boolean {
    return this.list.length < this.max
  }
  add(v: Violation | null): void {
    this.count++
    if (v && this.keeps) this.list.push(v)
  }
}

/**
 * Indices of the lines holding any of `needles` in `haystack` (the text, or its
 * lower-cased copy of the same length), ascending. A needle holds no line break, so
 * each occurrence lies in one line.
 */
function linesHolding(lines: Lines, needles: readonly string[], haystack = lines.text): number[] {
  const found: number[] = []
  for (const needle of needles) {
    for (let at = haystack.indexOf(needle); at >= 0; ) {
      const i = lines.lineAt(at)
      found.push(i)
      at = i + 1 < lines.lines.length ? haystack.indexOf(needle, lines.start(i + 1)) : -1
    }
  }
  return needles.length > 1 ? [...new Set(found)].sort((a, b) => a - b) : found
}

/** Adds the violation of line `i` when the rule matches it, with the line's first match. */
function checkLine(rule: RuleDraft, c: Compiled, lines: Lines, i: number, message: string, out: Sink): void {
  const line = lines.lines[i]
  if (!c.re.test(line)) return
  if (!out.keeps) return out.add(null)
  const m = c.re.matcher(line)
  m.find()
  out.add({ rule_id: rule.rule_id, severity: rule.severity, message, line: i + 1, match: m.group() ?? '' })
}

/** One violation per matching line (not per match), with the line's first match. */
function regexViolations(rule: RuleDraft, lines: Lines, message: string, out: Sink): void {
  const check = customCheck(rule)
  if (check) {
    for (const i of linesHolding(lines, [check.needle]))
      out.add(out.keeps ? { rule_id: rule.rule_id, severity: rule.severity, message, line: i + 1, match: check.needle } : null)
    return
  }
  const c = compiled(rule.pattern)
  // Only lines holding one of the pattern's required texts can match: found natively, checked by RE2.
  const haystack = searchable(lines, c.literals)
  if (haystack !== null) {
    for (const i of linesHolding(lines, c.literals!.texts, haystack)) checkLine(rule, c, lines, i, message, out)
    return
  }
  const count = lines.lines.length
  // One search of the whole content settles the common case: the rule matches nowhere.
  if (c.wholeSearch && !c.re.test(lines.text)) return
  for (let from = 0; from < count; from += BLOCK) {
    const to = Math.min(from + BLOCK, count)
    // A match inside a line is also a match of the (multi-line) block holding it, so one
    // search rules out a block of lines that cannot match: most blocks, for lint rules.
    if (c.wholeSearch && to - from > 1 && !c.re.test(lines.block(from, to))) continue
    for (let i = from; i < to; i++) checkLine(rule, c, lines, i, message, out)
  }
}

/** Where to look for `literals`: the text, its lower-cased copy for caseless ones, or null when they cannot be used. */
function searchable(lines: Lines, literals: Literals | null): string | null {
  if (!literals) return null
  return literals.caseless ? lines.lower() : lines.text
}

/** Whether a `missing` rule's pattern occurs anywhere: not when none of its required texts does. */
function occurs(pattern: string, lines: Lines): boolean {
  const c = compiled(pattern)
  const haystack = searchable(lines, c.literals)
  if (haystack !== null && !c.literals!.texts.some((t) => haystack.includes(t))) return false
  return c.re.test(lines.text)
}

export interface Findings {
  /** The first `max` violations, in rule order, then line order. */
  violations: Violation[]
  /** How many there are in all. */
  count: number
  truncated: boolean
}

/** Runs the rules that apply to the subject (semantics 2-7); rules are expected to be accepted and de-duplicated by the caller. */
export function findings(rules: readonly RuleDraft[], subject: Subject, max = MAX_VIOLATIONS, prepared?: Lines): Findings {
  const lines = prepared ?? new Lines(subject.content)
  const out = new Sink(max)
  for (const rule of rules) {
    if (!applies(rule, subject)) continue
    const message = rule.message || defaultMessage(rule)
    if (rule.match_type === 'missing') {
      if (!occurs(rule.pattern, lines)) out.add({ rule_id: rule.rule_id, severity: rule.severity, message })
    } else {
      regexViolations(rule, lines, message, out)
    }
  }
  return { violations: out.list, count: out.count, truncated: out.count > out.list.length }
}

/** Every violation, uncapped (the engine's own tests and benchmarks). */
export const evaluate = (rules: readonly RuleDraft[], subject: Subject, prepared?: Lines): Violation[] =>
  findings(rules, subject, Infinity, prepared).violations

/**
 * A worst-case estimate of the matching work: RE2 simulates the pattern's program
 * over the text, so the time is at most about program size × characters (~40 ns
 * per unit measured; `(.*a){1000}` over 4 KB of "a" takes 0.9 s). Custom checks
 * are a plain text search.
 */
export function matchingCost(rules: readonly RuleDraft[], subject: Subject): number {
  let size = 0
  for (const rule of rules) {
    if (customCheck(rule) || !applies(rule, subject)) continue
    size += compiled(rule.pattern).re.programSize()
  }
  return size * subject.content.length
}

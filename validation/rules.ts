// The validation rule engine: pure functions, no I/O. Rules are checked and
// normalised here (for PUT, propose, import and templates alike) and evaluated
// against a file's content per the spec's validation semantics.
//
// Patterns come from agents, so their meaning is RE2's (re2js): matching is linear
// in the input whatever the pattern, and no pattern can backtrack catastrophically.
// The price is RE2's dialect: no backreferences and no lookaround; such patterns
// are refused with 400 when the rule is written. Those that can be restated
// exactly for the native engine and are proven to search in linear time there
// (validation/native-regex.ts) run natively, much faster; the rest run on RE2.
//
// A validation is one pass over the content for every rule's required texts
// (validation/literal-scan.ts), then each rule only on the lines that can match.
import { isObject } from '../lib/values'
import { Lru } from '../lib/lru'
import type { RE2JS } from 're2js'
import { invalid } from '../lib/errors'
import { requiredLiterals, type Literals } from './literals'
import { linesHolding } from './literal-scan'
import { nativeRegex, type Native } from './native-regex'
import { Lines } from './text-lines'

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
  /** The same pattern on the native engine, when that is exact and provably linear (validation/native-regex.ts). */
  native: RegExp | null
  /** The pattern is this text and nothing else, one of `literals`: the lines holding it are its matches. */
  plain: string | null
  /** Whether a search of a block of lines can rule out every line in it (see regexViolations). */
  wholeSearch: boolean
  /** Texts one of which every match holds (validation/literals.ts), or null. */
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
      const re = RE2.compile(pattern, RE2.MULTILINE)
      const native = nativeOrNull(pattern)
      const literals = requiredLiterals(pattern)
      const plain = native?.text && !literals?.caseless && literals?.texts.length === 1 && literals.texts[0] === native.text ? native.text : null
      return { re, native: native?.re ?? null, plain, wholeSearch: !TEXT_ANCHORED.test(pattern), literals }
    } catch (err) {
      // re2js reports the pattern with the (?m) it was compiled under; show the agent's own.
      return String((err as Error).message ?? err).replace(/^error parsing regexp: /, '').replace('`(?m)', '`')
    }
  })
}

/** The native form of an RE2-valid pattern; a restatement it gets wrong (a bug) leaves the pattern on RE2. */
function nativeOrNull(pattern: string): Native | null {
  try {
    return nativeRegex(pattern)
  } catch {
    return null
  }
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

/** At most this many violations in one answer; `count` still tells the true total. */
export const MAX_VIOLATIONS = 10_000

/** Lines per block in the block pre-check of line rules left to RE2. */
const BLOCK = 64

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

/** What one rule needs to report a line. */
interface LineRule {
  rule: RuleDraft
  message: string
  out: Sink
}

const violation = ({ rule, message }: LineRule, i: number, match: string): Violation => ({ rule_id: rule.rule_id, severity: rule.severity, message, line: i + 1, match })

/**
 * The native engine searches the whole text (its pattern never matches across a
 * line, validation/native-regex.ts): each match is its line's first, and the search
 * goes on from the next line that may match, `candidates` when given.
 */
function nativeViolations(r: LineRule, re: RegExp, lines: Lines, candidates: readonly number[] | null): void {
  const text = lines.text
  for (let k = 0, from = candidates ? candidates[0] : 0; from !== undefined && from < lines.count; ) {
    re.lastIndex = lines.start(from)
    let line: number
    if (r.out.keeps) {
      const m = re.exec(text)
      if (!m || (line = lines.lineAt(m.index, from)) < 0) return
      r.out.add(violation(r, line, m[0]))
    } else {
      // Only counted: test() builds no match; the match's end lies in the same line.
      if (!re.test(text) || (line = lines.lineAt(re.lastIndex, from)) < 0) return
      r.out.add(null)
    }
    if (!candidates) from = line + 1
    else {
      while (k < candidates.length && candidates[k] <= line) k++
      from = candidates[k]
    }
  }
}

/** A plain text (a custom check's too) matches exactly the lines holding it: no matching needed. */
function plainViolations(r: LineRule, text: string, holding: readonly number[]): void {
  for (const i of holding) r.out.add(r.out.keeps ? violation(r, i, text) : null)
}

/** Adds the violation of line `i` when RE2 matches it, with the line's first match. */
function checkLine(r: LineRule, c: Compiled, lines: Lines, i: number): void {
  const line = lines.line(i)
  if (!c.re.test(line)) return
  if (!r.out.keeps) return r.out.add(null)
  const m = c.re.matcher(line)
  m.find()
  r.out.add(violation(r, i, m.group() ?? ''))
}

/** One violation per matching line (not per match), with the line's first match; `candidates` are the only lines that can match, when known. */
function regexViolations(r: LineRule, lines: Lines, candidates: readonly number[] | null): void {
  const check = customCheck(r.rule)
  if (check) return plainViolations(r, check.needle, candidates!)
  const c = compiled(r.rule.pattern)
  if (c.plain !== null) return plainViolations(r, c.plain, candidates!)
  if (c.native) return nativeViolations(r, c.native, lines, candidates)
  if (candidates) {
    for (const i of candidates) checkLine(r, c, lines, i)
    return
  }
  const count = lines.count
  // One search of the whole content settles the common case: the rule matches nowhere.
  if (c.wholeSearch && !c.re.test(lines.text)) return
  for (let from = 0; from < count; from += BLOCK) {
    const to = Math.min(from + BLOCK, count)
    // A match inside a line is also a match of the (multi-line) block holding it, so one
    // search rules out a block of lines that cannot match: most blocks, for lint rules.
    if (c.wholeSearch && to - from > 1 && !c.re.test(lines.block(from, to))) continue
    for (let i = from; i < to; i++) checkLine(r, c, lines, i)
  }
}

/** The texts one of which every match of the rule holds, or null. */
function literalsOf(rule: RuleDraft): Literals | null {
  const check = customCheck(rule)
  return check ? { texts: [check.needle], caseless: false } : compiled(rule.pattern).literals
}

export interface Findings {
  /** The first `max` violations, in rule order, then line order. */
  violations: Violation[]
  /** How many there are in all. */
  count: number
  truncated: boolean
}

/** Runs the rules that apply to the subject (semantics 2-7); rules are expected to be accepted and de-duplicated by the caller. */
export function findings(rules: readonly RuleDraft[], subject: Subject, max = MAX_VIOLATIONS): Findings {
  const lines = new Lines(subject.content)
  const active = rules.filter((rule) => applies(rule, subject))
  // One pass over the content finds the lines holding any rule's required texts.
  const literals = active.map(literalsOf)
  const holding = linesHolding(lines, literals.filter((l) => l !== null))
  let next = 0
  const out = new Sink(max)
  active.forEach((rule, i) => {
    const candidates = literals[i] ? holding[next++] : null
    const message = rule.message || defaultMessage(rule)
    if (rule.match_type !== 'missing') return regexViolations({ rule, message, out }, lines, candidates)
    // A required pattern none of whose texts occurs cannot occur; RE2 settles the rest (over the whole content, as specified).
    if (candidates?.length === 0 || !compiled(rule.pattern).re.test(lines.text)) out.add({ rule_id: rule.rule_id, severity: rule.severity, message })
  })
  return { violations: out.list, count: out.count, truncated: out.count > out.list.length }
}

/** Every violation, uncapped (the engine's own tests and benchmarks). */
export const evaluate = (rules: readonly RuleDraft[], subject: Subject): Violation[] => findings(rules, subject, Infinity).violations

/**
 * A worst-case estimate of the matching work: RE2 simulates the pattern's program
 * over the text, so the time is at most about program size × characters, times a
 * constant (docs/how-it-works.md gives the measured one). Custom checks
 * are a plain text search. Patterns run natively are proven linear too
 * (validation/regex-linear.ts), with a factor of the same order and far cheaper steps:
 * the estimate stays a safe bound for them.
 */
export function matchingCost(rules: readonly RuleDraft[], subject: Subject): number {
  let size = 0
  for (const rule of rules) {
    if (customCheck(rule) || !applies(rule, subject)) continue
    size += compiled(rule.pattern).re.programSize()
  }
  return size * subject.content.length
}

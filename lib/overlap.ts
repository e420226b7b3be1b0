// Do two path globs (picomatch syntax) share a file path? Exact for `*`, `?`,
// `[…]`, `**` and `{a,b}`; anything rarer (extglobs, POSIX classes, huge brace
// expansions) is widened to a pattern that matches more, so a real overlap is
// never missed. The rule, as docs/coordination.md states it:
//   1. Braces are expanded first (at most MAX_EXPANSIONS alternatives per
//      pattern; beyond that the whole pattern counts as `**`).
//   2. Each alternative is split at `/`; a segment that is exactly `**` matches
//      zero or more path segments, any other segment exactly one.
//   3. Two alternatives overlap when their segment sequences can be aligned
//      (each `**` absorbing any run of the other's segments) so that every pair
//      of aligned segments has a common string; two patterns overlap when any
//      of their alternatives do.
//   4. Segments are compared exactly: literal characters, `?` (one character),
//      `*` (any run) and classes `[a-z]`, `[^x]` (as in picomatch, only `^`
//      negates: `[!a]` is the class of `!` and `a`). Since picomatch also lets
//      a bracket expression match its own text literally, each class counts as
//      either (more alternatives for rule 1). Dotfiles count as matched
//      (picomatch's `dot: true`), which only widens the answer.
//   5. A pair whose decision would take more than MAX_STEPS steps counts as
//      overlapping (wider, never a missed overlap). Ordinary patterns take a
//      handful of steps and only contrived ones within LIMITS reach the cap;
//      it makes the worst case of one pair a constant, not a product of lengths.
//      A pair whose segment alignment alone has more cells than MAX_STEPS (only
//      paths past LIMITS.segments can) counts as overlapping without being built.
//   6. Paths and patterns are compared in Unicode NFC (é as one code point or
//      two is one file name), and for a case-insensitive project (store/projects.ts)
//      without regard to case: each character as its lower case, a class with its
//      ASCII letters in both cases, a negated class or one naming non-ASCII
//      characters as any character (wider).
// Pure: no I/O. The cost of a pair is counted in steps: one per pair of
// alternatives, one per cell of the segment alignment, one per state of a
// segment intersection; two segments that
// both hold a `*` meet in linear time (their ends decide), a segment without `*`
// against one with a `*` in at most (n+1)(m+1) states.

import { literalPath } from './path-prefix'

export const MAX_EXPANSIONS = 256
export const MAX_PATTERN_LENGTH = 1024
/** The size and shape a reservation or check pattern may have (400 beyond, naming the limit). */
export const LIMITS = {
  /** characters in a pattern */
  length: MAX_PATTERN_LENGTH,
  /** path segments (parts between `/`) */
  segments: 64,
  /** characters in one segment (a file name's usual maximum) */
  segmentLength: 255,
  /** `*`, `?` and `[…]` in one segment */
  wildcards: 16,
  /** `**` segments */
  globstars: 16,
  /** alternatives after expanding braces and reading each class both ways */
  expansions: MAX_EXPANSIONS,
} as const
/** The most steps one pair's decision may take before it counts as an overlap. */
export const MAX_STEPS = 1 << 16

/** One character position of a segment: a set of characters, or `*` (any run). */
type Atom = { star: true } | { star: false; ranges: [number, number][]; negated: boolean }
/** A path segment: `**` (globstar) or a sequence of atoms. */
type Segment = 'globstar' | Atom[]
type CharAtom = Atom & { star: false }
/** A pattern after brace expansion: alternatives, each a list of segments. */
export type Compiled = Segment[][]

const ANY: Atom = { star: false, ranges: [], negated: true }
const STAR: Atom = { star: true }

/** Why a pattern is refused as a reservation path or check path, or null when it is fine. */
export function patternProblem(pattern: string): string | null {
  if (pattern.trim() === '') return 'a pattern must not be empty'
  if (pattern.length > MAX_PATTERN_LENGTH) return `a pattern is at most ${MAX_PATTERN_LENGTH} characters`
  if (pattern.startsWith('/')) return `"${pattern}" must be relative to the project root (no leading /)`
  if (pattern.startsWith('!')) return `"${pattern}": negated patterns cannot be reserved`
  if (pattern.split('/').includes('..')) return `"${pattern}" must not contain a .. segment`
  return limitProblem(pattern)
}

const short = (p: string) => (p.length > 60 ? `"${p.slice(0, 57)}..."` : `"${p}"`)

/** What makes a pattern more than its segments' text: wildcards, classes, braces, escapes. */
const WILD = /[*?[\]{}\\]/

/** Which of LIMITS a pattern exceeds (cheap checks first: the text is at most LIMITS.length long here). */
function limitProblem(pattern: string): string | null {
  const segments = pattern.split('/')
  if (segments.length > LIMITS.segments) return `${short(pattern)} has ${segments.length} path segments; at most ${LIMITS.segments}`
  // No wildcard, class or brace: the segments' lengths are all that is left to check.
  if (!WILD.test(pattern)) {
    const long = segments.find((seg) => seg.length > LIMITS.segmentLength)
    return long === undefined ? null : `${short(pattern)} has a segment of ${long.length} characters; at most ${LIMITS.segmentLength}`
  }
  if (segments.filter((s) => s === '**').length > LIMITS.globstars) return `${short(pattern)} has more than ${LIMITS.globstars} ** segments`
  for (const seg of segments) {
    if (seg.length > LIMITS.segmentLength) return `${short(pattern)} has a segment of ${seg.length} characters; at most ${LIMITS.segmentLength}`
    const wildcards = seg === '**' ? 0 : wildcardCount(seg)
    if (wildcards > LIMITS.wildcards) return `${short(pattern)} has ${wildcards} wildcards (*, ?, [...]) in one segment; at most ${LIMITS.wildcards}`
  }
  const alts = expandBraces(pattern, LIMITS.expansions)?.flatMap((alt) => classReadings(alt, LIMITS.expansions) ?? [null])
  if (!alts || alts.length > LIMITS.expansions || alts.includes(null))
    return `${short(pattern)} expands to more than ${LIMITS.expansions} alternatives (braces, and each [...] read two ways)`
  return null
}

/** `*` runs, `?` and bracket expressions in one segment (escaped characters are literal). */
function wildcardCount(seg: string): number {
  let n = 0
  for (let i = 0; i < seg.length; i++) {
    const c = seg[i]
    if (c === '\\') i++
    else if (c === '*') {
      n++
      while (seg[i + 1] === '*') i++
    } else if (c === '?') n++
    else if (c === '[') {
      const end = classEnd(seg, i)
      if (end > 0) (n++, (i = end))
    }
  }
  return n
}

/** Expands `{a,b}` and `{1..3}` groups (nested too); null when there would be more than `max` alternatives. */
export function expandBraces(pattern: string, max = MAX_EXPANSIONS): string[] | null {
  const open = findBraceGroup(pattern)
  if (!open) return [pattern]
  const { start, end, parts } = open
  const out: string[] = []
  for (const part of parts) {
    const rest = expandBraces(pattern.slice(0, start) + part + pattern.slice(end + 1), max)
    if (!rest) return null
    out.push(...rest)
    if (out.length > max) return null
  }
  return out
}

/** The first top-level `{…}` group that has a `,` or a `..` range, with its alternatives. */
function findBraceGroup(p: string): { start: number; end: number; parts: string[] } | null {
  for (let i = 0; i < p.length; i++) {
    if (p[i] === '\\') {
      i++
      continue
    }
    if (p[i] === '[') {
      const close = classEnd(p, i)
      if (close > 0) i = close
      continue
    }
    if (p[i] !== '{') continue
    let depth = 0
    const commas: number[] = []
    let j = i
    for (; j < p.length; j++) {
      const c = p[j]
      if (c === '\\') j++
      else if (c === '{') depth++
      else if (c === '}' && --depth === 0) break
      else if (c === ',' && depth === 1) commas.push(j)
    }
    if (j >= p.length) return null // unbalanced: the rest is literal
    const body = p.slice(i + 1, j)
    if (commas.length) {
      const bounds = [i, ...commas, j]
      return { start: i, end: j, parts: bounds.slice(1).map((b, k) => p.slice(bounds[k] + 1, b)) }
    }
    const range = /^(-?\d+)\.\.(-?\d+)$/.exec(body) ?? /^([a-zA-Z])\.\.([a-zA-Z])$/.exec(body)
    if (range) {
      const numeric = /\d/.test(range[1])
      const [a, b] = numeric ? [Number(range[1]), Number(range[2])] : [range[1].charCodeAt(0), range[2].charCodeAt(0)]
      if (Math.abs(b - a) >= MAX_EXPANSIONS) return { start: i, end: j, parts: new Array(MAX_EXPANSIONS + 1).fill('') }
      const parts: string[] = []
      for (let v = a; a <= b ? v <= b : v >= b; v += a <= b ? 1 : -1) parts.push(numeric ? String(v) : String.fromCharCode(v))
      return { start: i, end: j, parts }
    }
    // `{x}` without a comma or range is literal in picomatch: keep looking after it.
  }
  return null
}

/** Index of the `]` closing the class opened at `i`, or -1 when `[` is literal. */
function classEnd(p: string, i: number): number {
  let j = i + 1
  if (p[j] === '!' || p[j] === '^') j++
  if (p[j] === ']') j++ // a leading ] is a member
  for (; j < p.length; j++) {
    if (p[j] === '\\') j++
    else if (p[j] === '[' && p[j + 1] === ':') {
      const close = p.indexOf(':]', j + 2)
      if (close > 0) j = close + 1
    } else if (p[j] === ']') return j
    else if (p[j] === '/') return -1
  }
  return -1
}

const EXTGLOB = /[@!+*?]\(/

/** Compiling for a case-insensitive project (rule 6): set by compile() around its work. */
let caseless = false

/** A character as rule 6 compares it: its lower case (when that is one code unit) for a case-insensitive project. */
function fold(code: number): number {
  if (!caseless) return code
  if (code < 128) return code >= 65 && code <= 90 ? code + 32 : code
  const lower = String.fromCharCode(code).toLowerCase()
  return lower.length === 1 ? lower.charCodeAt(0) : code
}

const char = (code: number): Atom => {
  const c = fold(code)
  return { star: false, ranges: [[c, c]], negated: false }
}

/** One segment's atoms; a segment picomatch would read as an extglob becomes `**` (wider). */
function compileSegment(seg: string): Segment {
  if (seg === '**') return 'globstar'
  if (EXTGLOB.test(seg.replace(/\\./g, ''))) return 'globstar'
  const atoms: Atom[] = []
  for (let i = 0; i < seg.length; i++) {
    const c = seg[i]
    if (c === '\\' && i + 1 < seg.length) atoms.push(char(seg.charCodeAt(++i)))
    else if (c === '*') {
      if (atoms.at(-1) !== STAR) atoms.push(STAR)
    } else if (c === '?') atoms.push(ANY)
    else if (c === '[' && classEnd(seg, i) > 0) {
      const end = classEnd(seg, i)
      atoms.push(compileClass(seg.slice(i + 1, end)))
      i = end
    } else atoms.push(char(seg.charCodeAt(i)))
  }
  return atoms
}

/** `a-z0`, `^x`: ranges of char codes. POSIX classes widen to any character. */
function compileClass(body: string): Atom {
  let negated = false
  if (body[0] === '^') (negated = true), (body = body.slice(1))
  const ranges: [number, number][] = []
  for (let i = 0; i < body.length; i++) {
    if (body[i] === '[' && body[i + 1] === ':') return ANY
    let lo = body.charCodeAt(i)
    if (body[i] === '\\' && i + 1 < body.length) lo = body.charCodeAt(++i)
    if (body[i + 1] === '-' && i + 2 < body.length) {
      let hi = body.charCodeAt(i + 2)
      i += 2
      if (body[i] === '\\' && i + 1 < body.length) hi = body.charCodeAt(++i)
      ranges.push([Math.min(lo, hi), Math.max(lo, hi)])
    } else ranges.push([lo, lo])
  }
  if (caseless) {
    // Rule 6: which characters a negated class leaves out in another case is not worth
    // deciding, nor the case pairs beyond ASCII: any character (wider, never a missed overlap).
    if (negated || ranges.some(([, hi]) => hi > 127)) return ANY
    for (const [lo, hi] of [...ranges]) {
      const from = Math.max(lo, 65)
      const to = Math.min(hi, 90)
      if (from <= to) ranges.push([from + 32, to + 32])
    }
  }
  return { star: false, ranges, negated }
}

/** Splits an expanded alternative into segments: `./` and empty segments (`a//b`, a trailing `/`) drop out. */
function segmentsOf(alt: string): Segment[] {
  const parts = alt.split('/').filter((s) => s !== '' && s !== '.')
  const out: Segment[] = []
  for (const p of parts) {
    const seg = compileSegment(p)
    if (seg === 'globstar' && out.at(-1) === 'globstar') continue
    out.push(seg)
  }
  return out
}

/** The alternative readings of bracket expressions: each as a class, or as its literal text. */
export function classReadings(alt: string, max = MAX_EXPANSIONS): string[] | null {
  let out = ['']
  let from = 0
  for (let i = 0; i < alt.length; i++) {
    if (alt[i] === '\\') {
      i++
      continue
    }
    if (alt[i] !== '[') continue
    const end = classEnd(alt, i)
    if (end < 0) continue
    const before = alt.slice(from, i)
    const text = alt.slice(i, end + 1)
    const literal = text.replace(/[\\[\]*?{}()!@+^-]/g, '\\$&')
    out = out.flatMap((o) => [o + before + text, o + before + literal])
    if (out.length > max) return null
    from = end + 1
    i = end
  }
  return out.map((o) => o + alt.slice(from))
}

export function compile(pattern: string, caseInsensitive = false): Compiled {
  const alts = expandBraces(pattern.normalize('NFC'))?.flatMap((alt) => classReadings(alt) ?? [null])
  if (!alts || alts.length > MAX_EXPANSIONS || alts.includes(null)) return [['globstar']]
  caseless = caseInsensitive
  try {
    return (alts as string[]).map(segmentsOf)
  } finally {
    caseless = false
  }
}

/** Do two character atoms (neither `*`) accept a common character? */
function atomsMeet(a: Atom & { star: false }, b: Atom & { star: false }): boolean {
  if (a.negated && b.negated) return true // two finite exclusions never cover every character
  if (!a.negated && !b.negated) {
    // Two literal characters, the common case, without allocating.
    if (a.ranges.length === 1 && b.ranges.length === 1) return a.ranges[0][0] <= b.ranges[0][1] && b.ranges[0][0] <= a.ranges[0][1]
    return a.ranges.some(([l1, h1]) => b.ranges.some(([l2, h2]) => l1 <= h2 && l2 <= h1))
  }
  const [pos, neg] = a.negated ? [b, a] : [a, b]
  // Some character of `pos` that `neg` does not exclude?
  return pos.ranges.some(([lo, hi]) => {
    let from = lo
    for (const [nl, nh] of [...neg.ranges].sort((x, y) => x[0] - y[0])) {
      if (nh < from || nl > hi) continue
      if (nl > from) return true
      from = nh + 1
      if (from > hi) return false
    }
    return from <= hi
  })
}

/**
 * Is there a string both segments match? When both hold a `*`, their ends decide
 * (endsMeet). Otherwise one side has a fixed length m: run the other side's
 * automaton over it, a row of n+1 states per character, (n+1)(m+1) steps at most.
 */
export function segmentsMeet(a: Atom[], b: Atom[]): boolean {
  const aStar = a.some(isStar)
  if (aStar && b.some(isStar)) return endsMeet(a, b)
  return aStar ? againstFixed(a, b as CharAtom[]) : againstFixed(b, a as CharAtom[])
}

/** Does some string of `fixed`'s characters match `glob`? States: how many atoms of `glob` are consumed. */
function againstFixed(glob: Atom[], fixed: CharAtom[]): boolean {
  const n = glob.length
  // Each atom but `*` takes one character: a glob needing more than `fixed` has never meets it.
  let needs = 0
  for (let i = 0; i < n; i++) if (!glob[i].star) needs++
  step()
  if (needs > fixed.length) return false
  let cur = new Uint8Array(n + 1)
  let next = new Uint8Array(n + 1)
  cur[0] = 1
  // A `*` may match nothing: being before it is being after it too.
  const close = (row: Uint8Array) => {
    for (let i = 0; i < n; i++) if (row[i] && glob[i].star) row[i + 1] = 1
  }
  close(cur)
  for (let k = 0; k < fixed.length; k++) {
    const c = fixed[k]
    // A row's steps at once, before its work: past the budget it stops as step() does.
    if ((steps += n + 1) > budget) throw ((steps = budget + 1), OVER)
    next.fill(0)
    let any = false
    for (let i = 0; i < n; i++) {
      if (!cur[i]) continue
      const g = glob[i]
      if (g.star) (next[i] = 1), (any = true)
      else if (atomsMeet(g, c)) (next[i + 1] = 1), (any = true)
    }
    if (!any) return false
    close(next)
    const t = cur
    cur = next
    next = t
  }
  return cur[n] === 1
}

const isStar = (x: Atom) => x.star

/**
 * Two segments that both hold a `*`: some string matches both exactly when their
 * leading atoms before the first `*` meet position by position, and so do their
 * trailing atoms after the last `*`. (Then take the longer head, the middle atoms of
 * one, the middle atoms of the other and the longer tail: each side's stars absorb
 * what the other side put there.) Linear, where the product automaton is quadratic.
 */
function endsMeet(a: Atom[], b: Atom[]): boolean {
  // Each loop stops at the first `*` on either side, which both have.
  for (let i = 0; !a[i].star && !b[i].star; i++) {
    step()
    if (!atomsMeet(a[i] as CharAtom, b[i] as CharAtom)) return false
  }
  for (let i = a.length - 1, j = b.length - 1; !a[i].star && !b[j].star; i--, j--) {
    step()
    if (!atomsMeet(a[i] as CharAtom, b[j] as CharAtom)) return false
  }
  return true
}

/** Steps of the running pair's decision (overlapCost); past its budget the decision stops and counts as an overlap. */
let steps = 0
let budget = Infinity
const OVER = Symbol('over budget')
function step(): void {
  if (++steps > budget) throw OVER
}

/**
 * Can two segment sequences match one path? `**` absorbs zero or more segments of the
 * other side. Cell (i, j): the first i segments of `a` and j of `b` can match one run
 * of path segments; filled row by row, one step per cell reached.
 */
function pathsMeet(a: Segment[], b: Segment[]): boolean {
  const w = b.length + 1
  // A table past the step budget could not be filled within it anyway: no allocation that
  // grows with the product of two lengths (within LIMITS it holds at most 65 × 65 cells).
  if ((a.length + 1) * w > MAX_STEPS) throw ((steps = budget + 1), OVER)
  const reach = new Uint8Array((a.length + 1) * w)
  reach[0] = 1
  for (let i = 0; i <= a.length; i++)
    for (let j = 0; j <= b.length; j++) {
      const key = i * w + j
      if (!reach[key]) continue
      step()
      if (i === a.length && j === b.length) return true
      const x = a[i]
      const y = b[j]
      if (x === 'globstar') {
        reach[key + w] = 1
        if (j < b.length) reach[key + 1] = 1
      }
      if (y === 'globstar') {
        reach[key + 1] = 1
        if (i < a.length) reach[key + w] = 1
      }
      if (x && y && x !== 'globstar' && y !== 'globstar' && segmentsMeet(x, y)) reach[key + w + 1] = 1
    }
  return false
}

/** Compiled patterns of recent calls (a grant checks against every held pattern of its project): as given, and case-insensitive. */
const caches = [new Map<string, Compiled>(), new Map<string, Compiled>()]
const CACHE_MAX = 20_000

function compiled(pattern: string, caseInsensitive: boolean): Compiled {
  const cache = caches[caseInsensitive ? 1 : 0]
  let c = cache.get(pattern)
  if (!c) {
    if (cache.size >= CACHE_MAX) cache.delete(cache.keys().next().value!)
    cache.set(pattern, (c = compile(pattern, caseInsensitive)))
  }
  return c
}

/** The leading segments of an alternative that are plain literals (no wildcard, no class). */
function literalHead(alt: Segment[]): string[] {
  const out: string[] = []
  for (const seg of alt) {
    if (seg === 'globstar' || seg.some((a) => a.star || a.negated || a.ranges.length !== 1 || a.ranges[0][0] !== a.ranges[0][1])) break
    out.push(String.fromCharCode(...seg.map((a) => (a as { ranges: [number, number][] }).ranges[0][0])))
  }
  return out
}

/** Differing literal segments at the same depth rule an overlap out at once (most pairs of a big project). */
function headsClash(a: string[], b: string[]): boolean {
  for (let i = 0; i < a.length && i < b.length; i++) if (a[i] !== b[i]) return true
  return false
}

const heads = new WeakMap<Segment[], string[]>()
const headOf = (alt: Segment[]) => {
  let h = heads.get(alt)
  if (!h) heads.set(alt, (h = literalHead(alt)))
  return h
}

/** True when some file path could match both patterns (never false for a real overlap); `caseInsensitive`: rule 6. */
export function overlaps(a: string, b: string, caseInsensitive = false): boolean {
  return overlapCost(a, b, caseInsensitive).overlaps
}

/** The decision with the steps it took (at most MAX_STEPS + 1: then it is an overlap by rule 5). */
export function overlapCost(a: string, b: string, caseInsensitive = false): { overlaps: boolean; steps: number } {
  // Two literal paths (every edit a hook checks against its own reservation) match one file
  // each: printable ASCII, nothing a glob reads, no `.` or empty segment, so each character
  // compiles to itself (rule 6: its lower case in a case-insensitive project). They meet when
  // they are that same file. Compiling them costs kilobytes a check.
  if (literalPath(a) && literalPath(b)) return { overlaps: caseInsensitive ? a.toLowerCase() === b.toLowerCase() : a === b, steps: 1 }
  const ca = compiled(a, caseInsensitive)
  const cb = compiled(b, caseInsensitive)
  steps = 0
  budget = MAX_STEPS
  try {
    const out = ca.some((x) => cb.some((y) => (step(), !headsClash(headOf(x), headOf(y)) && pathsMeet(x, y))))
    return { overlaps: out, steps }
  } catch (e) {
    if (e === OVER) return { overlaps: true, steps }
    throw e
  } finally {
    budget = Infinity
  }
}

// Do two path globs (picomatch syntax) share a file path? Exact for `*`, `?`,
// `[…]`, `**` and `{a,b}`; anything rarer (extglobs, POSIX classes, huge brace
// expansions) is widened to a pattern that matches more, so a real overlap is
// never missed. The rule, as the README states it:
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
// Pure: no I/O. Everything is polynomial in the pattern lengths.

export const MAX_EXPANSIONS = 256
export const MAX_PATTERN_LENGTH = 1024

/** One character position of a segment: a set of characters, or `*` (any run). */
type Atom = { star: true } | { star: false; ranges: [number, number][]; negated: boolean }
/** A path segment: `**` (globstar) or a sequence of atoms. */
type Segment = 'globstar' | Atom[]
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
  return null
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

/** One segment's atoms; a segment picomatch would read as an extglob becomes `**` (wider). */
function compileSegment(seg: string): Segment {
  if (seg === '**') return 'globstar'
  if (EXTGLOB.test(seg.replace(/\\./g, ''))) return 'globstar'
  const atoms: Atom[] = []
  for (let i = 0; i < seg.length; i++) {
    const c = seg[i]
    if (c === '\\' && i + 1 < seg.length) {
      const code = seg.charCodeAt(++i)
      atoms.push({ star: false, ranges: [[code, code]], negated: false })
    } else if (c === '*') {
      if (atoms.at(-1) !== STAR) atoms.push(STAR)
    } else if (c === '?') atoms.push(ANY)
    else if (c === '[' && classEnd(seg, i) > 0) {
      const end = classEnd(seg, i)
      atoms.push(compileClass(seg.slice(i + 1, end)))
      i = end
    } else {
      const code = seg.charCodeAt(i)
      atoms.push({ star: false, ranges: [[code, code]], negated: false })
    }
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

export function compile(pattern: string): Compiled {
  const alts = expandBraces(pattern)?.flatMap((alt) => classReadings(alt) ?? [null])
  if (!alts || alts.length > MAX_EXPANSIONS || alts.includes(null)) return [['globstar']]
  return (alts as string[]).map(segmentsOf)
}

/** Do two character atoms (neither `*`) accept a common character? */
function atomsMeet(a: Atom & { star: false }, b: Atom & { star: false }): boolean {
  if (a.negated && b.negated) return true // two finite exclusions never cover every character
  if (!a.negated && !b.negated) return a.ranges.some(([l1, h1]) => b.ranges.some(([l2, h2]) => l1 <= h2 && l2 <= h1))
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
 * Is there a string both segments match? Reachability in the product of the two
 * patterns' automata: state (i, j) = atoms consumed; a `*` may match nothing or
 * keep consuming while the other side takes one character.
 */
export function segmentsMeet(a: Atom[], b: Atom[]): boolean {
  const w = b.length + 1
  const seen = new Uint8Array((a.length + 1) * w)
  const stack: number[] = [0]
  while (stack.length) {
    const key = stack.pop()!
    const i = Math.floor(key / w)
    const j = key % w
    if (i === a.length && j === b.length) return true
    if (seen[key]) continue
    seen[key] = 1
    const x = a[i]
    const y = b[j]
    if (x?.star) stack.push(key + w)
    if (y?.star) stack.push(key + 1)
    if (x && y) {
      if (x.star && !y.star) stack.push(key + 1)
      else if (!x.star && y.star) stack.push(key + w)
      else if (!x.star && !y.star && atomsMeet(x, y)) stack.push(key + w + 1)
    }
  }
  return false
}

/** Can two segment sequences match one path? `**` absorbs zero or more segments of the other side. */
function pathsMeet(a: Segment[], b: Segment[]): boolean {
  const w = b.length + 1
  // 0 unknown, 1 no, 2 yes
  const memo = new Uint8Array((a.length + 1) * w)
  const go = (i: number, j: number): boolean => {
    const key = i * w + j
    if (memo[key]) return memo[key] === 2
    let out: boolean
    if (i === a.length && j === b.length) out = true
    else if (a[i] === 'globstar') out = go(i + 1, j) || (j < b.length && go(i, j + 1))
    else if (b[j] === 'globstar') out = go(i, j + 1) || (i < a.length && go(i + 1, j))
    else if (i === a.length || j === b.length) out = false
    else out = segmentsMeet(a[i] as Atom[], b[j] as Atom[]) && go(i + 1, j + 1)
    memo[key] = out ? 2 : 1
    return out
  }
  return go(0, 0)
}

/** Compiled patterns of recent calls: a grant checks against every held pattern of its project. */
const cache = new Map<string, Compiled>()
const CACHE_MAX = 20_000

function compiled(pattern: string): Compiled {
  let c = cache.get(pattern)
  if (!c) {
    if (cache.size >= CACHE_MAX) cache.delete(cache.keys().next().value!)
    cache.set(pattern, (c = compile(pattern)))
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

/** True when some file path could match both patterns (never false for a real overlap). */
export function overlaps(a: string, b: string): boolean {
  const ca = compiled(a)
  const cb = compiled(b)
  return ca.some((x) => cb.some((y) => !headsClash(headOf(x), headOf(y)) && pathsMeet(x, y)))
}

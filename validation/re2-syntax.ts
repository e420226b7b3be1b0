// A reader for the part of RE2's syntax whose meaning on one line is plain enough
// to restate for another engine (validation/native-regex.ts). It returns null for
// anything else (Unicode and POSIX classes, flags other than a leading one, octal,
// \Q…\E, case folding beyond ASCII…): such patterns simply stay on RE2. The
// pattern has already been compiled by RE2, so errors need no reporting here.
//
// Character sets are explicit code point ranges, with RE2's own meaning of \d, \w
// and \s and of (?i) folding, so no difference between the engines' class or
// case tables can leak through.

/** Sorted, disjoint, non-adjacent code point ranges, flattened: [lo0, hi0, lo1, hi1, …]. */
export type Ranges = number[]

export type Node =
  | { k: 'set'; r: Ranges }
  /** ^ and $ (also \A and \z: on a single line they are the same), \b and \B. */
  | { k: 'assert'; a: '^' | '$' | 'b' | 'B' }
  | { k: 'cat'; xs: Node[] }
  | { k: 'alt'; xs: Node[] }
  | { k: 'rep'; x: Node; min: number; max: number; lazy: boolean }

const MAX_CP = 0x10ffff
const DIGIT: Ranges = [0x30, 0x39]
const WORD: Ranges = [0x30, 0x39, 0x41, 0x5a, 0x5f, 0x5f, 0x61, 0x7a]
// RE2's \s: no \v, nothing beyond ASCII.
const SPACE: Ranges = [0x09, 0x0a, 0x0c, 0x0d, 0x20, 0x20]
const ESCAPES: Record<string, number> = { a: 7, f: 12, t: 9, n: 10, r: 13, v: 11 }

export function normalize(r: Ranges): Ranges {
  const pairs: [number, number][] = []
  for (let i = 0; i < r.length; i += 2) pairs.push([r[i], r[i + 1]])
  pairs.sort((a, b) => a[0] - b[0])
  const out: Ranges = []
  for (const [lo, hi] of pairs) {
    if (out.length && lo <= out[out.length - 1] + 1) out[out.length - 1] = Math.max(out[out.length - 1], hi)
    else out.push(lo, hi)
  }
  return out
}

export function negate(r: Ranges): Ranges {
  const out: Ranges = []
  let next = 0
  for (let i = 0; i < r.length; i += 2) {
    if (r[i] > next) out.push(next, r[i] - 1)
    next = r[i + 1] + 1
  }
  if (next <= MAX_CP) out.push(next, MAX_CP)
  return out
}

/**
 * RE2's (?i) orbit of an ASCII code point: its other case, and for k and s the
 * Kelvin sign and long s, which fold to them (checked against RE2 in the tests).
 */
function foldAscii(cp: number): Ranges {
  const c = String.fromCharCode(cp)
  const lower = c.toLowerCase().charCodeAt(0)
  const upper = c.toUpperCase().charCodeAt(0)
  const r = [cp, cp, lower, lower, upper, upper]
  if (lower === 0x6b) r.push(0x212a, 0x212a)
  if (lower === 0x73) r.push(0x17f, 0x17f)
  return r
}

/**
 * A set as it can match within a line: without \n. A line never holds one, so
 * this changes nothing line by line, and a search of the whole text can then
 * never match across a line break.
 */
function line(r: Ranges): Node {
  const out: Ranges = []
  for (let i = 0; i < r.length; i += 2) {
    if (r[i] <= 10 && r[i + 1] >= 10) {
      if (r[i] < 10) out.push(r[i], 9)
      if (r[i + 1] > 10) out.push(11, r[i + 1])
    } else out.push(r[i], r[i + 1])
  }
  return { k: 'set', r: out }
}

class Unsupported extends Error {}
const no = (): never => {
  throw new Unsupported()
}

/** The pattern as read by RE2 with the MULTILINE flag, or null when it is outside the subset. */
export function parseRe2(pattern: string): Node | null {
  try {
    return new Reader(pattern).pattern()
  } catch (err) {
    if (err instanceof Unsupported) return null
    throw err
  }
}

class Reader {
  private readonly cps: number[]
  private at = 0
  private fold = false

  constructor(pattern: string) {
    this.cps = Array.from(pattern, (c) => c.codePointAt(0)!)
  }

  pattern(): Node {
    const flags = /^\(\?([ims]*)(?:-([ims]*))?\)/.exec(String.fromCodePoint(...this.cps.slice(0, 12)))
    if (flags) {
      this.fold = flags[1].includes('i') && !flags[2]?.includes('i')
      this.at = flags[0].length
    }
    const node = this.alternation()
    if (this.at < this.cps.length) no()
    return node
  }

  private peek(offset = 0): string {
    const cp = this.cps[this.at + offset]
    return cp === undefined ? '' : String.fromCodePoint(cp)
  }

  private alternation(): Node {
    const xs = [this.sequence()]
    while (this.peek() === '|') this.at++, xs.push(this.sequence())
    return xs.length === 1 ? xs[0] : { k: 'alt', xs }
  }

  private sequence(): Node {
    const xs: Node[] = []
    for (let c = this.peek(); c !== '' && c !== '|' && c !== ')'; c = this.peek()) {
      const atom = this.atom()
      const rep = this.repeat()
      if (!rep) {
        xs.push(atom)
        continue
      }
      // A repeated assertion, or a repeat of a repeat, is not worth restating.
      if (atom.k === 'assert' || this.repeat(true)) no()
      xs.push({ k: 'rep', x: atom, ...rep })
    }
    return xs.length === 1 ? xs[0] : { k: 'cat', xs }
  }

  /** The repeat operator here, if any (consumed unless `look`). */
  private repeat(look = false): { min: number; max: number; lazy: boolean } | null {
    const c = this.peek()
    let min: number
    let max: number
    let len = 1
    if (c === '*') (min = 0), (max = Infinity)
    else if (c === '+') (min = 1), (max = Infinity)
    else if (c === '?') (min = 0), (max = 1)
    else if (c === '{') {
      // As in RE2, a brace that does not open a valid count is a literal.
      const m = /^\{(\d+)(?:(,)(\d*))?\}/.exec(String.fromCodePoint(...this.cps.slice(this.at, this.at + 16)))
      if (!m) return null
      min = Number(m[1])
      max = m[2] === undefined ? min : m[3] === '' ? Infinity : Number(m[3])
      len = m[0].length
    } else return null
    if (look) return { min, max, lazy: false }
    this.at += len
    const lazy = this.peek() === '?'
    if (lazy) this.at++
    return { min, max, lazy }
  }

  private atom(): Node {
    const c = this.peek()
    this.at++
    switch (c) {
      case '(':
        return this.group()
      case '[':
        return this.charClass()
      case '.':
        return line([0, MAX_CP])
      case '^':
        return { k: 'assert', a: '^' }
      case '$':
        return { k: 'assert', a: '$' }
      case '\\':
        return this.escape(false)
      case '*':
      case '+':
      case '?':
        return no()
      case '{':
        // A valid count here has nothing to repeat (RE2 refuses it); otherwise a literal.
        this.at--
        if (this.repeat(true)) no()
        this.at++
        return this.literal(0x7b)
      default:
        return this.literal(this.cps[this.at - 1])
    }
  }

  private group(): Node {
    if (this.peek() === '?') {
      const head = String.fromCodePoint(...this.cps.slice(this.at, this.at + 3))
      if (head.startsWith('?:')) this.at += 2
      else if (head === '?P<' || (head.startsWith('?<') && head !== '?<=' && head !== '?<!')) {
        // A named group: the name does not matter here.
        while (this.peek() !== '>' && this.peek() !== '') this.at++
        this.at++
      } else no() // flags inside the pattern, or syntax RE2 refuses
    }
    const node = this.alternation()
    if (this.peek() !== ')') no()
    this.at++
    return node
  }

  private literal(cp: number): Node {
    if (!this.fold) return line([cp, cp])
    if (cp >= 0x80) no() // folding outside ASCII would need RE2's tables
    return line(normalize(foldAscii(cp)))
  }

  /** After a backslash: a set or an assertion. */
  private escape(inClass: boolean): Node {
    const c = this.peek()
    this.at++
    const perl = { d: DIGIT, w: WORD, s: SPACE }[c.toLowerCase()]
    if (perl) {
      const negated = c !== c.toLowerCase()
      // (?i) adds the Kelvin sign and long s to \w; the negated classes are left to RE2.
      if (negated && this.fold) no()
      const r = this.fold && c === 'w' ? normalize([...WORD, 0x17f, 0x17f, 0x212a, 0x212a]) : perl
      return line(negated ? negate(r) : r)
    }
    if (!inClass) {
      if (c === 'A') return { k: 'assert', a: '^' }
      if (c === 'z') return { k: 'assert', a: '$' }
      if (c === 'b' || c === 'B') return { k: 'assert', a: c }
    }
    this.at--
    return this.literal(this.escapedChar())
  }

  private hex(): number {
    const rest = String.fromCodePoint(...this.cps.slice(this.at, this.at + 10))
    const m = /^\{([0-9A-Fa-f]{1,6})\}/.exec(rest) ?? /^([0-9A-Fa-f]{2})/.exec(rest)
    if (!m) return no()
    this.at += m[0].length
    const cp = parseInt(m[1], 16)
    return cp > MAX_CP ? no() : cp
  }

  private charClass(): Node {
    const negated = this.peek() === '^'
    if (negated) this.at++
    if (negated && this.fold) no()
    const r: Ranges = []
    // A ] first is a member; - is a member wherever it cannot make a range (RE2's Perl mode).
    for (let first = true; first || this.peek() !== ']'; first = false) {
      if (this.peek() === '') no()
      if (this.peek() === '[' && this.peek(1) === ':') no() // POSIX class
      if (this.peek() === '\\') {
        const e = this.peek(1).toLowerCase()
        if (e === 'd' || e === 'w' || e === 's') {
          this.at++
          r.push(...(this.escape(true) as { r: Ranges }).r)
          continue
        }
      }
      const lo = this.classChar()
      let hi = lo
      if (this.peek() === '-' && this.peek(1) !== ']' && this.peek(1) !== '') {
        this.at++
        hi = this.classChar()
      }
      if (!this.fold) r.push(lo, hi)
      else {
        if (hi >= 0x80) no()
        for (let cp = lo; cp <= hi; cp++) r.push(...foldAscii(cp))
      }
    }
    this.at++
    const set = normalize(r)
    return line(negated ? negate(set) : set)
  }

  private classChar(): number {
    if (this.peek() !== '\\') return this.cps[this.at++]
    this.at++
    return this.escapedChar()
  }

  /** After a backslash, a single character: a control code, \x code or punctuation. */
  private escapedChar(): number {
    const c = this.peek()
    this.at++
    if (c in ESCAPES) return ESCAPES[c]
    if (c === 'x') return this.hex()
    // Escaped punctuation is itself; other letters and digits are classes, octal or errors.
    if (c !== '' && c.codePointAt(0)! < 0x80 && !/[0-9A-Za-z]/.test(c)) return c.codePointAt(0)!
    return no()
  }

}

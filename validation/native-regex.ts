// RE2 patterns restated for the JavaScript engine, when that is both exact and
// safe. The native engine is much faster than re2js, but it backtracks: a
// pattern runs on it only when validation/regex-linear.ts proves its search linear.
// Everything else stays on RE2.
//
// The restated pattern is meant for a search of the whole (LF-only) text that
// finds what a match of each line alone finds: its sets never hold \n (see
// validation/re2-syntax.ts), so no match crosses a line, and ^ $ \A \z become "at a line
// start / end" by lookaround, whatever other line terminators JavaScript knows.
// Leftmost-first matching is the same in both engines (RE2 follows Perl's
// backtracking order), except for repeats of what can match empty, which
// JavaScript cuts short: those stay on RE2 too.
import { parseRe2, type Node, type Ranges } from './re2-syntax'
import { linearSearch, nullable } from './regex-linear'

export interface Native {
  /** Global and Unicode; equivalent to the pattern line by line. */
  re: RegExp
  /** The text the pattern matches when it is nothing but that text, else null. */
  text: string | null
}

/** The pattern for the native engine, or null when RE2 must run it. */
export function nativeRegex(pattern: string): Native | null {
  const node = parseRe2(pattern)
  if (!node || repeatsEmpty(node) || !linearSearch(node)) return null
  return { re: new RegExp(emit(node), 'gu'), text: plainText(node) }
}

function plainText(node: Node): string | null {
  const sets = node.k === 'cat' ? node.xs : [node]
  if (!sets.length || sets.some((x) => x.k !== 'set' || x.r.length !== 2 || x.r[0] !== x.r[1])) return null
  return String.fromCodePoint(...sets.map((x) => (x as { r: Ranges }).r[0]))
}

function repeatsEmpty(node: Node): boolean {
  switch (node.k) {
    case 'cat':
    case 'alt':
      return node.xs.some(repeatsEmpty)
    case 'rep':
      return nullable(node.x) || repeatsEmpty(node.x)
    default:
      return false
  }
}

const ASSERTIONS = { '^': '(?<![^\\n])', $: '(?![^\\n])', b: '\\b', B: '\\B' }

function emit(node: Node): string {
  switch (node.k) {
    case 'set':
      return emitSet(node.r)
    case 'assert':
      return ASSERTIONS[node.a]
    case 'cat':
      return node.xs.map((x) => (x.k === 'alt' ? `(?:${emit(x)})` : emit(x))).join('')
    case 'alt':
      return node.xs.map(emit).join('|')
    case 'rep': {
      const { min, max } = node
      const count = max === Infinity ? (min === 0 ? '*' : min === 1 ? '+' : `{${min},}`) : min === 0 && max === 1 ? '?' : min === max ? `{${min}}` : `{${min},${max}}`
      // A single set is repeated bare: the engine has a fast loop for a repeated class.
      const body = node.x.k === 'set' ? emit(node.x) : `(?:${emit(node.x)})`
      return `${body}${count}${node.lazy ? '?' : ''}`
    }
  }
}

const char = (cp: number) => (/[0-9A-Za-z]/.test(String.fromCharCode(cp)) && cp < 0x80 ? String.fromCharCode(cp) : `\\u{${cp.toString(16)}}`)

function emitSet(r: Ranges): string {
  if (r.length === 2 && r[0] === r[1]) return char(r[0])
  let out = '['
  for (let i = 0; i < r.length; i += 2) out += r[i] === r[i + 1] ? char(r[i]) : `${char(r[i])}-${char(r[i + 1])}`
  return out + ']'
}

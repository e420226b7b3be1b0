// Finds the lines holding the required texts (validation/literals.ts) of every rule in
// one pass: a single alternation of all the texts, run by the native engine, in
// place of one indexOf sweep of the whole content per text. Literal text cannot
// backtrack, so this is safe for any content.
import type { Literals } from './literals'
import type { Lines } from './text-lines'
import { Lru } from '../lib/lru'

interface Scanner {
  re: RegExp
  /** Each given set's entries. */
  sets: number[][]
  /** Entry by exact text, and by folded text for caseless ones. */
  exact: Map<string, number>
  caseless: Map<string, number>
  /** Entry lengths, longest first. */
  lengths: number[]
  entries: number
  /** The entries found by each text the alternation reported (few distinct ones recur). */
  byHit: Map<string, number[]>
}

const scanners = new Lru<string, Scanner>(100)

const escape = (text: string) => text.replace(/[\\^$.*+?()[\]{}|/]/g, '\\$&')
// The caseless texts are ASCII (validation/literals.ts); RE2 also folds the Kelvin sign to k and long s to s.
const FOLDS: Record<string, string> = { k: 'kK\u212a', s: 'sS\u017f' }
const foldedPattern = (text: string) =>
  [...text].map((c) => (/[a-z]/.test(c) ? `[${FOLDS[c] ?? c + c.toUpperCase()}]` : escape(c))).join('')
const fold = (text: string) => text.toLowerCase().replace(/\u017f/g, 's')

function scanner(sets: readonly Literals[]): Scanner {
  const key = JSON.stringify(sets.map((s) => [s.caseless, s.texts]))
  return scanners.getOr(key, () => {
    const exact = new Map<string, number>()
    const caseless = new Map<string, number>()
    const sources: [string, string][] = []
    const ids = sets.map((set) =>
      set.texts.map((text) => {
        const table = set.caseless ? caseless : exact
        let id = table.get(text)
        if (id === undefined) {
          table.set(text, (id = sources.length))
          sources.push([text, set.caseless ? foldedPattern(text) : escape(text)])
        }
        return id
      }),
    )
    // Longest first: the alternation then reports the longest text starting at each
    // offset, and every other one starting there is a prefix of it.
    const ordered = [...sources].sort((a, b) => b[0].length - a[0].length)
    return {
      re: new RegExp(ordered.map((s) => s[1]).join('|'), 'g'),
      sets: ids,
      exact,
      caseless,
      lengths: [...new Set(ordered.map((s) => s[0].length))],
      entries: sources.length,
      byHit: new Map(),
    }
  })
}

/** For each set of texts, the lines (ascending, each once) holding at least one of them. */
export function linesHolding(lines: Lines, sets: readonly Literals[]): number[][] {
  if (!sets.length || lines.count === 0) return sets.map(() => [])
  const s = scanner(sets)
  const found: number[][] = Array.from({ length: s.entries }, () => [])
  const { re } = s
  const text = lines.text
  re.lastIndex = 0
  let line = 0
  for (let m = re.exec(text); m; m = re.exec(text)) {
    line = lines.lineAt(m.index, line)
    for (const id of entriesOf(s, m[0])) {
      const list = found[id]
      if (list[list.length - 1] !== line) list.push(line)
    }
    // Texts can overlap: look again from the next offset.
    re.lastIndex = m.index + 1
  }
  return s.sets.map((ids) => (ids.length === 1 ? found[ids[0]] : union(ids.map((id) => found[id]))))
}

/** The entries starting where the alternation reported `hit`: it is the longest, so the others are its prefixes. */
function entriesOf(s: Scanner, hit: string): number[] {
  let ids = s.byHit.get(hit)
  if (ids) return ids
  ids = []
  for (const length of s.lengths) {
    if (length > hit.length) continue
    const head = hit.slice(0, length)
    const exact = s.exact.get(head)
    const caseless = s.caseless.get(fold(head))
    if (exact !== undefined) ids.push(exact)
    if (caseless !== undefined) ids.push(caseless)
  }
  if (s.byHit.size < 10_000) s.byHit.set(hit, ids)
  return ids
}

function union(lists: number[][]): number[] {
  return [...new Set(lists.flat())].sort((a, b) => a - b)
}

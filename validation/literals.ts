// Required literals of a regex: texts of which at least one must occur in any
// match. A rule whose literals occur nowhere cannot match, and only lines that hold
// one can: a native indexOf (fast) finds them, and RE2 (slow, but safe) checks
// only those. Conservative by design: any construct not understood here gives null
// (no shortcut), never a wrong answer.

/** Characters that are syntax, not text, outside a class. */
const META = new Set(['\\', '^', '$', '.', '|', '?', '*', '+', '(', ')', '[', ']', '{', '}'])
const QUANTIFIERS = new Set(['*', '?', '+', '{'])
/** Shorter literals prune too little to be worth the search. */
const MIN_LITERAL = 2

/** Splits at top-level `|`, or null when the pattern's brackets are not understood. */
function branches(pattern: string): string[] | null {
  const out: string[] = []
  let depth = 0
  let start = 0
  for (let i = 0; i < pattern.length; i++) {
    const c = pattern[i]
    if (c === '\\') i++
    else if (c === '[') {
      // Skip the class; a ']' right after '[' or '[^' is a member.
      i += pattern[i + 1] === '^' ? 2 : 1
      if (pattern[i] === ']') i++
      while (i < pattern.length && pattern[i] !== ']') i += pattern[i] === '\\' ? 2 : 1
      if (i >= pattern.length) return null
    } else if (c === '(') depth++
    else if (c === ')') depth--
    else if (c === '|' && depth === 0) out.push(pattern.slice(start, i)), (start = i + 1)
    if (depth < 0) return null
  }
  if (depth !== 0) return null
  out.push(pattern.slice(start))
  return out
}

/** The best of two requirements: the one whose shortest text is longer prunes more. */
const better = (a: string[] | null, b: string[] | null) => (!a ? b : !b ? a : Math.min(...b.map((t) => t.length)) > Math.min(...a.map((t) => t.length)) ? b : a)

/** Texts one of which every match of `branch` holds: its longest run of plain text, or the requirement of a group in it; or null. */
function branchRequirement(branch: string): string[] | null {
  let best: string[] | null = null
  let run = ''
  const end = () => {
    if (run.length >= MIN_LITERAL) best = better(best, [run])
    run = ''
  }
  for (let i = 0; i < branch.length; ) {
    const c = branch[i]
    let text: string | null = null
    let group: string | null = null
    let next = i + 1
    if (c === '\\') {
      const e = branch[i + 1]
      if (e === undefined) return null
      // Escaped punctuation is itself; letters and digits are classes, anchors or codes.
      if (!/[A-Za-z0-9]/.test(e)) text = e
      next = i + 2
    } else if (c === '(') {
      let depth = 0
      for (; next <= branch.length; next++) {
        const g = branch[next - 1]
        if (g === '\\') next++
        else if (g === '(') depth++
        else if (g === ')' && --depth === 0) break
      }
      group = branch.slice(i + 1, next - 1)
    } else if (c === '[') {
      next = i + (branch[i + 1] === '^' ? 2 : 1)
      if (branch[next] === ']') next++
      while (next < branch.length && branch[next] !== ']') next += branch[next] === '\\' ? 2 : 1
      next++
    } else if (!META.has(c)) text = c
    const quantified = QUANTIFIERS.has(branch[next])
    if (text !== null && !quantified) run += text
    else end()
    // A group that must occur (not quantified) requires what its content requires.
    if (group !== null && !quantified) best = better(best, alternatives(group))
    if (quantified) {
      // Skip the quantifier (with a {n,m} body and a lazy '?').
      if (branch[next] === '{') {
        const close = branch.indexOf('}', next)
        if (close < 0) return null
        next = close + 1
      } else next++
      if (branch[next] === '?') next++
    }
    i = next
  }
  end()
  return best
}

/** The union of the branches' requirements, or null when one branch has none. */
function alternatives(pattern: string): string[] | null {
  const parts = branches(pattern)
  if (!parts) return null
  const out: string[] = []
  for (const part of parts) {
    const texts = branchRequirement(part)
    if (!texts) return null
    out.push(...texts)
  }
  return [...new Set(out)]
}

export interface Literals {
  texts: string[]
  /** The pattern starts with (?i): the texts are lower case, to be looked for in lower-cased content. */
  caseless: boolean
}

/**
 * For a pattern matched line by line: texts of which every match contains one, or
 * null when no such set is known (flags other than a leading (?i), a branch without
 * a long enough run of plain text, syntax this reader does not follow).
 */
export function requiredLiterals(pattern: string): Literals | null {
  const caseless = pattern.startsWith('(?i)')
  const body = caseless ? pattern.slice(4) : pattern
  // Other flags, and escapes whose tail reads like text: \pL, \123, \x41, \Q…\E, \C.
  if (body.includes('(?') || /\\[0-9pPQxC]/.test(body)) return null
  const texts = alternatives(body)
  if (!texts) return null
  // Case folding is only mirrored for ASCII texts (RE2 folds ſ to s and the Kelvin sign to k; toLowerCase does not).
  if (caseless) return texts.every((t) => /^[\x20-\x7e]+$/.test(t)) ? { texts: texts.map((t) => t.toLowerCase()), caseless } : null
  return { texts, caseless }
}

// JSON nesting depth: JSON.parse copes with 100k levels, but every recursive walk
// after it (schema checks, diffs, canonical forms) overflows the stack. Bodies are
// refused past MAX_DEPTH before they are parsed.

export const MAX_DEPTH = 256

const OPEN_BRACE = 0x7b
const OPEN_BRACKET = 0x5b
const CLOSE_BRACE = 0x7d
const CLOSE_BRACKET = 0x5d
const QUOTE = 0x22
const BACKSLASH = 0x5c

/** Whether the JSON text (or bytes) nests objects and arrays deeper than `max`; strings are skipped, the text need not be valid. */
export function nestedDeeperThan(json: string | Uint8Array, max = MAX_DEPTH): boolean {
  const code = typeof json === 'string' ? (i: number) => json.charCodeAt(i) : (i: number) => json[i]
  let depth = 0
  let inString = false
  for (let i = 0; i < json.length; i++) {
    const c = code(i)
    if (inString) {
      if (c === BACKSLASH) i++
      else if (c === QUOTE) inString = false
    } else if (c === QUOTE) inString = true
    else if (c === OPEN_BRACE || c === OPEN_BRACKET) {
      if (++depth > max) return true
    } else if (c === CLOSE_BRACE || c === CLOSE_BRACKET) depth--
  }
  return false
}

/**
 * What is wrong with a parsed value, in one walk without recursion (so any depth is
 * safe to ask about): nesting deeper than `max` (reported first), else a NUL
 * character in any string or key (PostgreSQL cannot store one in text), else null.
 */
export function parsedValueProblem(value: unknown, max = MAX_DEPTH): 'deep' | 'nul' | null {
  let nul = false
  // Two stacks side by side, not a [value, depth] pair per node: every request's JSON body is
  // walked on the request thread, and a body of many small values made a pair per value.
  const values: unknown[] = [value]
  const depths: number[] = [0]
  while (values.length) {
    const v = values.pop()
    const depth = depths.pop()!
    if (typeof v === 'string') {
      nul ||= v.includes('\0')
      continue
    }
    if (typeof v !== 'object' || v === null) continue
    if (depth + 1 > max) return 'deep'
    if (Array.isArray(v)) {
      for (let i = 0; i < v.length; i++) values.push(v[i]), depths.push(depth + 1)
    } else {
      const o = v as Record<string, unknown>
      for (const k of Object.keys(o)) {
        nul ||= k.includes('\0')
        values.push(o[k]), depths.push(depth + 1)
      }
    }
  }
  return nul ? 'nul' : null
}

/** Whether a parsed value nests deeper than `max`. */
export const valueDeeperThan = (value: unknown, max = MAX_DEPTH): boolean => parsedValueProblem(value, max) === 'deep'

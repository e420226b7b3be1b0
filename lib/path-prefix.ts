// The reservation index's key: a pattern's literal leading path segments. Every file
// a pattern matches starts with those segments, so two patterns can only overlap when
// one's prefix is a segment-prefix of the other's (lib/overlap.ts aligns literal
// segments position by position). A check therefore reads only the reservations whose
// prefix is an ancestor of (or equal to) a path's prefix, or lies below it.
// Pure: no I/O.

/** Anything that could make a segment mean more than its text: globs, braces, classes, extglobs, escapes. */
const SPECIAL = /[*?[\]{}()!+@\\]/

/**
 * A segment is literal only when nothing about it is doubtful (`.` and empty segments drop out
 * of a match), and a key only when it is printable ASCII: paths are compared in NFC and, in a
 * case-insensitive project, without regard to case (lib/overlap.ts rule 6), so a segment with
 * other characters ends the key, and the key is in lower case (for every project: the index is
 * only coarser for a case-sensitive one, never wrong).
 */
const literal = (segment: string) => segment !== '' && segment !== '.' && !SPECIAL.test(segment) && /^[\x20-\x7e]+$/.test(segment)

/** What keeps a pattern from being a literal path: a special or non-printable character, an empty or `.` segment. */
const NOT_LITERAL_PATH = new RegExp(`${SPECIAL.source}|[^\\x20-\\x7e]|(?:^|/)\\.?(?:/|$)`)

/**
 * A pattern whose every segment is literal: it names one path, itself (lib/overlap.ts compares two
 * such as strings). One test of the whole text: it runs on both sides of every overlap check.
 */
export const literalPath = (pattern: string) => !NOT_LITERAL_PATH.test(pattern)

/** `src/lib/*.ts` → `src/lib`; `SRC/Lib/a.ts` → `src/lib/a.ts`; `**` or `{a,b}/x` → '' (every reservation could meet it). */
export function pathPrefix(pattern: string): string {
  const parts = pattern.split('/')
  let n = 0
  // A literal path is its own prefix (`src/a.ts`): `src/a.ts/**` lies below it and still meets it.
  while (n < parts.length && literal(parts[n])) n++
  return parts.slice(0, n).join('/').toLowerCase()
}

/** The distinct prefixes of a reservation's paths (one index row each). */
export function pathPrefixes(patterns: string[]): string[] {
  return [...new Set(patterns.map(pathPrefix))]
}

/**
 * `a/b/c` → ['', 'a', 'a/b', 'a/b/c']: the prefixes a pattern with prefix `p` can meet from above.
 * Slices of the prefix at each `/`, not joins of its segments: joining rebuilt every ancestor,
 * characters and memory growing with the square of the path's length.
 */
export function ancestors(prefix: string): string[] {
  const out = ['']
  if (prefix === '') return out
  for (let i = prefix.indexOf('/'); i !== -1; i = prefix.indexOf('/', i + 1)) out.push(prefix.slice(0, i))
  out.push(prefix)
  return out
}

/** Whether `p` lies strictly below `q` (`q/…`), without building `q/`. */
const isBelow = (p: string, q: string) => p.length > q.length && p.charCodeAt(q.length) === 47 && p.startsWith(q)

/**
 * What a check of `patterns` must read: the ancestor-or-equal prefixes (an `IN` list) and
 * the prefixes to read everything below (`p/…`, kept minimal: below `a` covers below `a/b`);
 * null when some pattern has prefix '' and every reservation of the project counts.
 */
export function prefixQuery(patterns: string[]): { exact: string[]; below: string[] } | null {
  const own = [...new Set(patterns.map(pathPrefix))]
  if (own.includes('')) return null
  const exact = [...new Set(own.flatMap(ancestors))]
  const below = own.filter((p) => !own.some((q) => isBelow(p, q)))
  return { exact, below }
}

/**
 * Whether a check of patterns whose prefixes are `own` (pathPrefixes; one prefix alone as a string)
 * reads a reservation indexed under `prefixes`: as prefixQuery's read, a prefix that is an
 * ancestor of (or equal to) one of `own`, or lies below one; every one when `own` holds ''.
 * Kept checks hold `own` rather than the query: two strings less per check, and no arrays.
 */
export function prefixesMeet(own: string | readonly string[], prefixes: readonly string[]): boolean {
  const meets = (o: string) => o === '' || prefixes.some((p) => p === '' || p === o || isBelow(o, p) || isBelow(p, o))
  return typeof own === 'string' ? meets(own) : own.some(meets)
}

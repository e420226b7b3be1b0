// Topic globs (docs/api/events.md): `*` matches any run of characters (none included) within
// one dot-separated segment; every other character is literal. The lone pattern
// `*` matches every topic. The one module for history, WebSocket and webhooks.

const cache = new Map<string, RegExp>()
const CACHE_MAX = 1024

/** The glob as a regular expression source; PostgreSQL's `~` reads it the same way (store/pg/events.ts). */
export function globRegex(pattern: string): string {
  const body = pattern
    .split('*')
    .map((part) => part.replace(/[.+?^${}()|[\]\\/-]/g, '\\$&'))
    .join('[^.]*')
  return `^${body}$`
}

function compile(pattern: string): RegExp {
  let re = cache.get(pattern)
  if (!re) {
    re = new RegExp(globRegex(pattern))
    if (cache.size >= CACHE_MAX) cache.clear()
    cache.set(pattern, re)
  }
  return re
}

/** True when the pattern matches every topic (no filter needed). */
export const matchesAll = (pattern: string): boolean => pattern === '*'

/** Whole-topic match of one glob. */
export function topicMatches(pattern: string, topic: string): boolean {
  return matchesAll(pattern) || compile(pattern).test(topic)
}

/** True when any of the globs matches (webhook patterns). */
export function matchesAny(patterns: readonly string[], topic: string): boolean {
  return patterns.some((p) => topicMatches(p, topic))
}

/** A compiled matcher, for callers that test one pattern against many topics. */
export function topicMatcher(pattern: string): (topic: string) => boolean {
  if (matchesAll(pattern)) return () => true
  const re = compile(pattern)
  return (topic) => re.test(topic)
}

/**
 * The same test expressed for SQLite: `topic GLOB glob AND <dots in topic> = dots`.
 * SQLite's `*` also crosses dots, but when the topic has exactly as many dots as
 * the pattern's literal text, no `*` can have matched one, so the two agree.
 * Null when the pattern matches everything.
 */
export function globToSql(pattern: string): { glob: string; dots: number } | null {
  if (matchesAll(pattern)) return null
  const glob = pattern.replace(/[?[]/g, (c) => `[${c}]`)
  const dots = pattern.split('.').length - 1
  return { glob, dots }
}

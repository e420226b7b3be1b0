import { afterAll, describe, expect, test } from 'bun:test'
import { rmSync } from 'node:fs'
import { globToSql, matchesAny, topicMatcher, topicMatches } from '../lib/glob'
import { openDatabase } from '../store/sqlite/db'
import { eventsStore, eventsWrites } from '../store/sqlite/events'
import { tempDir } from './helpers'

// [pattern, topic, matches]
const TABLE: [string, string, boolean][] = [
  // spec 6.2 examples
  ['*', 'api.change', true],
  ['*', 'api.change.contract', true],
  ['*', 'x', true],
  ['api.*', 'api.change', true],
  ['api.*', 'api.change.contract', false],
  ['api.change.*', 'api.change.contract', true],
  // `*` stays inside one segment and may match nothing
  ['api.*', 'api', false],
  ['api.*', 'api.', true],
  ['api.*', 'xapi.change', false],
  ['api.change.*', 'api.change', false],
  ['api.change.*', 'api.change.contract.v2', false],
  ['*.change', 'api.change', true],
  ['*.change', 'a.b.change', false],
  ['*.change', 'change', false],
  ['*.*', 'a.b', true],
  ['*.*', 'a', false],
  ['*.*', 'a.b.c', false],
  ['*.*.*', 'a.b.c', true],
  ['api.ch*', 'api.change', true],
  ['api.ch*', 'api.ch', true],
  ['api.ch*', 'api.chx.y', false],
  ['a*c', 'abc', true],
  ['a*c', 'ac', true],
  ['a*c', 'ab.c', false],
  ['a.*.c', 'a.b.c', true],
  ['a.*.c', 'a.b.x.c', false],
  ['**', 'a', true],
  ['**', 'a.b', false],
  // literal topics: whole-topic, case-sensitive, regex and SQL GLOB characters are literal
  ['api.change', 'api.change', true],
  ['api.change', 'api.changes', false],
  ['api.change', 'apiXchange', false],
  ['api.change', 'api.change.contract', false],
  ['API.*', 'api.change', false],
  ['a+b.c', 'a+b.c', true],
  ['a+b.c', 'aab.c', false],
  ['a?b', 'a?b', true],
  ['a?b', 'axb', false],
  ['[x]', '[x]', true],
  ['[x]', 'x', false],
  ['a$', 'a$', true],
  ['(a|b)', 'a', false],
  ['%_', '%_', true],
  ['%_', 'ab', false],
  ['a\\b', 'a\\b', true],
]

describe('topic globs', () => {
  test.each(TABLE)('%p on %p → %p', (pattern, topic, expected) => {
    expect(topicMatches(pattern, topic)).toBe(expected)
    expect(topicMatcher(pattern)(topic)).toBe(expected)
  })

  test('matchesAny: one of several patterns', () => {
    expect(matchesAny(['state.*', 'spec.*'], 'spec.changed')).toBe(true)
    expect(matchesAny(['state.*', 'spec.*'], 'rule.accepted')).toBe(false)
    expect(matchesAny([], 'x')).toBe(false)
  })

  test('* alone needs no SQL filter', () => {
    expect(globToSql('*')).toBeNull()
    expect(globToSql('api.*')).toEqual({ glob: 'api.*', dots: 1 })
    expect(globToSql('a?[b')).toEqual({ glob: 'a[?][[]b', dots: 0 })
  })
})

// History filters in SQL: the translation must agree with the matcher on every case.
describe('SQL translation agrees with the matcher', () => {
  const dir = tempDir()
  const db = openDatabase(dir)
  const events = eventsStore(db)
  const writes = eventsWrites(db)
  afterAll(() => {
    db.close()
    rmSync(dir, { recursive: true, force: true })
  })

  test('every pattern of the table selects exactly the matching topics', async () => {
    const topics = [...new Set(TABLE.map(([, topic]) => topic))]
    for (const topic of topics) writes.append(topic, null, '')
    for (const pattern of new Set(TABLE.map(([p]) => p))) {
      const fromSql = (await events.query({ topic: pattern, limit: 1000 })).map((e) => e.topic).sort()
      expect({ pattern, topics: fromSql }).toEqual({ pattern, topics: topics.filter((t) => topicMatches(pattern, t)).sort() })
    }
  })
})

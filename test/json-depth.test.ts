// lib/json.ts: nesting depth of JSON text and of parsed values.
import { expect, test } from 'bun:test'
import { nestedDeeperThan, valueDeeperThan } from '../lib/json'

const nested = (depth: number) => '['.repeat(depth) + ']'.repeat(depth)

test('text: counts objects and arrays, skips brackets inside strings', () => {
  expect(nestedDeeperThan(nested(3), 3)).toBe(false)
  expect(nestedDeeperThan(nested(4), 3)).toBe(true)
  expect(nestedDeeperThan('{"a":{"b":[1]}}', 3)).toBe(false)
  expect(nestedDeeperThan('{"a":"[[[[[\\"[[[["}', 1)).toBe(false)
  expect(nestedDeeperThan(new TextEncoder().encode(nested(300)))).toBe(true)
  expect(nestedDeeperThan(nested(256))).toBe(false)
})

test('values: any depth is safe to ask about', () => {
  expect(valueDeeperThan(JSON.parse(nested(100_000)))).toBe(true)
  expect(valueDeeperThan({ a: [{ b: 1 }] }, 3)).toBe(false)
  expect(valueDeeperThan({ a: [{ b: {} }] }, 3)).toBe(true)
  expect(valueDeeperThan('text')).toBe(false)
})

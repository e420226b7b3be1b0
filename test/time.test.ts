// lib/time.ts: strict RFC 3339 parsing of query timestamps.
import { expect, test } from 'bun:test'
import { parseRfc3339 } from '../lib/time'

test('accepts RFC 3339 date-times and full dates, to the millisecond', () => {
  expect(parseRfc3339('2024-02-29T12:00:00Z')).toBe(Date.UTC(2024, 1, 29, 12))
  expect(parseRfc3339('2024-02-29t12:00:00.5z')).toBe(Date.UTC(2024, 1, 29, 12, 0, 0, 500))
  expect(parseRfc3339('2024-02-29T12:00:00.123456+02:30')).toBe(Date.UTC(2024, 1, 29, 9, 30, 0, 123))
  expect(parseRfc3339('2024-02-29 12:00:00-01:00')).toBe(Date.UTC(2024, 1, 29, 13))
  expect(parseRfc3339('2024-02-29')).toBe(Date.UTC(2024, 1, 29))
  expect(parseRfc3339('0050-01-01')).toBe(new Date('0050-01-01T00:00:00Z').getTime())
})

test('refuses what Date.parse would guess at', () => {
  for (const text of ['hello 1', '-1', '1', '2024', '2024-02', '2024-02-30', '2023-02-29', '2024-13-01', '2024-00-10', '2024-04-31T00:00:00Z',
    '2024-01-01T24:00:00Z', '2024-01-01T12:60:00Z', '2024-01-01T12:00:60Z', '2024-01-01T12:00:00', '2024-01-01T12:00Z', '2024-01-01T12:00:00+2400',
    '2024-01-01T12:00:00+24:00', ' 2024-01-01', 'Mon, 01 Jan 2024 00:00:00 GMT'])
    expect([text, parseRfc3339(text)]).toEqual([text, null])
})

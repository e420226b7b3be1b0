// lib/groups.ts: values grouped by key, one value kept bare and a set only for a second.
import { expect, test } from 'bun:test'
import { Groups } from '../lib/groups'

test('a key holds its values, once each; remove and take leave nothing behind', () => {
  const g = new Groups<string, string>()
  const taken = (key: string) => [...g.take(key)].sort()
  g.add('a', 'x')
  g.add('a', 'x')
  expect(taken('a')).toEqual(['x'])
  expect(taken('a')).toEqual([])

  g.add('a', 'x')
  g.add('a', 'y')
  g.add('a', 'z')
  g.remove('a', 'y')
  g.remove('a', 'nope')
  expect(taken('a')).toEqual(['x', 'z'])

  // Down to one value and back up: the one left is still there, and goes with its last removal.
  g.add('b', 'x')
  g.add('b', 'y')
  g.remove('b', 'x')
  g.add('b', 'z')
  g.remove('b', 'y')
  g.remove('b', 'z')
  expect(taken('b')).toEqual([])
  g.add('c', 'x')
  g.remove('c', 'other')
  g.remove('missing', 'x')
  expect(taken('c')).toEqual(['x'])

  g.add('d', 'x')
  g.add('e', 'y')
  g.clear()
  expect([...taken('d'), ...taken('e')]).toEqual([])
})

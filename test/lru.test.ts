import { describe, expect, test } from 'bun:test'
import { Lru } from '../lib/lru'

describe('Lru (CLOCK: a hit marks, eviction gives marked entries a second chance)', () => {
  test('past capacity the oldest entry not read since it was last passed over goes first', () => {
    const c = new Lru<string, number>(3)
    c.set('a', 1)
    c.set('b', 2)
    c.set('c', 3)
    expect(c.get('a')).toBe(1) // a is marked: b, the oldest unmarked, goes
    c.set('d', 4)
    expect([c.get('a'), c.get('b'), c.get('c'), c.get('d')]).toEqual([1, undefined, 3, 4])
    // Every entry is marked now (clock order c, d, a: a was moved behind when it was spared): one sweep
    // clears the marks and the first in that order goes, never the entry being set.
    c.set('e', 5)
    expect([c.get('a'), c.get('c'), c.get('d'), c.get('e')]).toEqual([1, undefined, 4, 5])
  })

  test('weights count against the capacity; a value over a sixteenth of it is not kept', () => {
    const c = new Lru<string, string>(160, (v) => v.length)
    c.set('big', 'x'.repeat(11))
    expect(c.get('big')).toBeUndefined()
    for (let i = 0; i < 20; i++) c.set(`k${i}`, 'x'.repeat(10))
    const kept = Array.from({ length: 20 }, (_, i) => c.get(`k${i}`)).filter((v) => v !== undefined)
    expect(kept).toHaveLength(16)
    expect(c.get('k19')).toBe('x'.repeat(10))
  })

  test('set replaces (the old weight is released), delete and clear drop, getOr makes once', () => {
    const c = new Lru<string, string>(32, (v) => v.length)
    c.set('a', 'x')
    c.set('a', 'yy')
    expect(c.get('a')).toBe('yy')
    c.delete('a')
    expect(c.get('a')).toBeUndefined()
    let made = 0
    expect(c.getOr('b', () => (made++, 'z'))).toBe('z')
    expect(c.getOr('b', () => (made++, 'w'))).toBe('z')
    expect(made).toBe(1)
    c.clear()
    expect(c.get('b')).toBeUndefined()
    // After clear the whole capacity is free again.
    for (let i = 0; i < 16; i++) c.set(`k${i}`, 'xx')
    expect(c.get('k0')).toBe('xx')
  })
})

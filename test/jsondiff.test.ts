// lib/jsondiff.ts: fast-json-patch's operations with each one's old value, whatever
// the keys are named (a stored document may have a `__proto__` key).
import { describe, expect, test } from 'bun:test'
import { jsonDiff } from '../lib/jsondiff'

describe('jsonDiff', () => {
  test('replace, remove and add with their old and new values; pointers escaped', () => {
    const before = { a: 1, 'x/y': { 'm~n': [1, 2, 3] }, gone: true }
    const after = { a: 2, 'x/y': { 'm~n': [1, 5] }, added: 'z' }
    expect(jsonDiff(before, after)).toEqual([
      { operation: 'remove', path: '/gone', old_value: true, new_value: null },
      { operation: 'remove', path: '/x~1y/m~0n/2', old_value: 3, new_value: null },
      { operation: 'replace', path: '/x~1y/m~0n/1', old_value: 2, new_value: 5 },
      { operation: 'replace', path: '/a', old_value: 1, new_value: 2 },
      { operation: 'add', path: '/added', old_value: null, new_value: 'z' },
    ])
  })

  test('a member named __proto__ is diffed like any other', () => {
    const before = JSON.parse('{"__proto__": {"k": 1}, "b": 1}')
    const after = JSON.parse('{"__proto__": {"k": 2}, "b": 1}')
    expect(jsonDiff(before, after)).toEqual([{ operation: 'replace', path: '/__proto__/k', old_value: 1, new_value: 2 }])
  })

  test('a changed root of another kind is one replace at ""', () => {
    expect(jsonDiff([1], { a: 1 })).toEqual([{ operation: 'replace', path: '', old_value: [1], new_value: { a: 1 } }])
    expect(jsonDiff(1, 1)).toEqual([])
  })
})

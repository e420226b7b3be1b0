// lib/jsondiff.ts walks JSON itself for speed; its answer must stay fast-json-patch's
// compare() (what diffs answered before), operation for operation and in order.
import { describe, expect, test } from 'bun:test'
import jsonpatch from 'fast-json-patch'
import { jsonDiff } from '../lib/jsondiff'

/** The diff as it was made with the package. */
function reference(before: unknown, after: unknown) {
  return jsonpatch.compare(before as object, after as object).map((op) => ({
    operation: op.op,
    path: op.path,
    old_value: op.op === 'add' ? null : jsonpatch.getValueByPointer(before, op.path) ?? null,
    new_value: 'value' in op ? op.value : null,
  }))
}

// A seeded generator, so a failure reproduces.
let seed = 38
const rand = (n: number) => ((seed = (seed * 1103515245 + 12345) % 2 ** 31), seed % n)
const KEYS = ['a', 'b', 'c', 'a/b', 'm~n', '~1', '', '0', 'long key']
const scalar = () => [null, true, false, 0, 1, -2.5, '', 'x', 'a/b'][rand(9)]
function value(depth: number): unknown {
  const kind = depth <= 0 ? 0 : rand(3)
  if (kind === 0) return scalar()
  if (kind === 1) return Array.from({ length: rand(5) }, () => value(depth - 1))
  return Object.fromEntries(Array.from({ length: rand(5) }, () => [KEYS[rand(KEYS.length)], value(depth - 1)]))
}
/** A few edits of `v`: members changed, removed, added, containers swapped for their other kind. */
function mutate(v: unknown, depth: number): unknown {
  if (typeof v !== 'object' || v === null || rand(6) === 0) return rand(3) === 0 ? value(depth) : v
  if (Array.isArray(v)) {
    const out = v.map((x) => (rand(3) === 0 ? mutate(x, depth - 1) : x))
    if (rand(3) === 0) out.splice(rand(out.length + 1), 0, value(depth - 1))
    if (rand(3) === 0 && out.length) out.splice(rand(out.length), 1)
    return out
  }
  const out: Record<string, unknown> = {}
  for (const [k, x] of Object.entries(v)) if (rand(5) !== 0) out[k] = rand(3) === 0 ? mutate(x, depth - 1) : x
  if (rand(3) === 0) out[KEYS[rand(KEYS.length)]] = value(depth - 1)
  return out
}

describe('jsonDiff', () => {
  test('answers as fast-json-patch compare() does, over 3,000 generated pairs', () => {
    let nonEmpty = 0
    for (let i = 0; i < 3000; i++) {
      let before = value(4)
      if (typeof before !== 'object' || before === null) before = [before]
      // JSON round trips: the values a diff sees are parsed from stored text.
      const after = JSON.parse(JSON.stringify(i % 4 === 0 ? value(4) : mutate(before, 4)) ?? 'null')
      if (typeof after !== 'object' || after === null || Array.isArray(after) !== Array.isArray(before)) continue
      const mine = jsonDiff(JSON.parse(JSON.stringify(before)), after)
      expect(mine).toEqual(reference(JSON.parse(JSON.stringify(before)), after))
      if (mine.length) nonEmpty++
    }
    expect(nonEmpty).toBeGreaterThan(1000)
  })

  test('a changed root of another kind is one replace at ""', () => {
    expect(jsonDiff([1], { a: 1 })).toEqual([{ operation: 'replace', path: '', old_value: [1], new_value: { a: 1 } }])
    expect(jsonDiff(1, 1)).toEqual([])
  })
})

// A proof that a backtracking engine searches a pattern (validation/re2-syntax.ts) in
// time linear in the text, or no verdict. The engine's search runs a match
// attempt from each start position in turn until one succeeds; the cost is the
// sum of what every attempt reads. Two sufficient conditions are checked:
//
// 1. Bounded: no unbounded repeat, and few enough paths through the pattern that
//    one attempt costs a small constant.
// 2. Unambiguous: in the pattern's position automaton (Glushkov), every state has
//    at most one way to read each character (successor positions have disjoint
//    sets, each reached by one path through the syntax), so an attempt is one
//    forward walk plus constant work per character. And no two failing attempts
//    can ever be in the same state at the same text position (a search of pairs
//    of states): so at most one failing attempt per state covers each character.
//    An attempt that reaches a position from which the pattern may end with no
//    assertion left succeeds, and ends the search of its line.
//
// Assertions (^ $ \b \B) are treated as always true: that only adds paths, so
// every verdict stays sound. Anything over the size limits gets no verdict.
import type { Node, Ranges } from './re2-syntax'

/** Paths through a bounded pattern, times their length, above which condition 1 gives up. */
const MAX_BOUNDED_WORK = 1024
/** Positions (sets after expanding counted repeats) above which no verdict is given. */
const MAX_POSITIONS = 400
/** Steps of the proof itself above which no verdict is given: it runs when a rule is written or first used. */
const MAX_STEPS = 100_000

/** Whether `node` can match the empty text. */
export function nullable(node: Node): boolean {
  switch (node.k) {
    case 'set':
      return false
    case 'assert':
      return true
    case 'cat':
      return node.xs.every(nullable)
    case 'alt':
      return node.xs.some(nullable)
    case 'rep':
      return node.min === 0 || nullable(node.x)
  }
}

export function linearSearch(node: Node): boolean {
  const bounded = boundedWork(node)
  if (bounded !== null && bounded.paths * bounded.length <= MAX_BOUNDED_WORK) return true
  try {
    return unambiguous(node)
  } catch (err) {
    if (err instanceof TooBig) return false
    throw err
  }
}

/** Paths through the pattern and the longest one, or null when a repeat is unbounded. */
function boundedWork(node: Node): { paths: number; length: number } | null {
  switch (node.k) {
    case 'set':
      return { paths: 1, length: 1 }
    case 'assert':
      return { paths: 1, length: 0 }
    case 'cat':
    case 'alt': {
      const parts = node.xs.map(boundedWork)
      if (parts.some((p) => p === null)) return null
      const ps = parts as { paths: number; length: number }[]
      if (node.k === 'alt') return { paths: ps.reduce((a, p) => a + p.paths, 0), length: Math.max(0, ...ps.map((p) => p.length)) }
      return { paths: ps.reduce((a, p) => a * p.paths, 1), length: ps.reduce((a, p) => a + p.length, 0) }
    }
    case 'rep': {
      const x = boundedWork(node.x)
      if (!x || node.max === Infinity) return null
      let paths = 0
      for (let k = node.min; k <= node.max && paths <= MAX_BOUNDED_WORK; k++) paths += x.paths ** k
      return { paths, length: x.length * node.max }
    }
  }
}

class TooBig extends Error {}

class Budget {
  private left = MAX_STEPS
  spend(): void {
    if (--this.left < 0) throw new TooBig()
  }
}

/** Position → number of syntactic paths. */
type Ways = Map<number, number>

interface Info {
  first: Ways
  last: Ways
  /** Positions after which the node can end without passing an assertion. */
  clean: Set<number>
  nullWays: number
  nullClean: boolean
}

const EMPTY: Info = { first: new Map(), last: new Map(), clean: new Set(), nullWays: 1, nullClean: true }

function addWays(into: Ways, from: Ways, times = 1): void {
  if (times) for (const [p, w] of from) into.set(p, (into.get(p) ?? 0) + w * times)
}

class Automaton {
  readonly sets: Ranges[] = []
  readonly follow: Ways[] = []

  constructor(private readonly budget: Budget) {}

  build(node: Node): Info {
    switch (node.k) {
      case 'set': {
        const p = this.sets.length
        if (p >= MAX_POSITIONS) throw new TooBig()
        this.sets.push(node.r)
        this.follow.push(new Map())
        return { first: new Map([[p, 1]]), last: new Map([[p, 1]]), clean: new Set([p]), nullWays: 0, nullClean: false }
      }
      case 'assert':
        return { ...EMPTY, nullClean: false }
      case 'cat':
        return node.xs.reduce((a, x) => this.concat(a, this.build(x)), EMPTY)
      case 'alt': {
        const out: Info = { first: new Map(), last: new Map(), clean: new Set(), nullWays: 0, nullClean: false }
        for (const x of node.xs) {
          const i = this.build(x)
          addWays(out.first, i.first)
          addWays(out.last, i.last)
          for (const p of i.clean) out.clean.add(p)
          out.nullWays += i.nullWays
          out.nullClean ||= i.nullClean
        }
        return out
      }
      case 'rep': {
        // Counted repeats are spelled out: x{2,4} is x x (x (x)?)?, each copy its own positions.
        let info = EMPTY
        for (let k = 0; k < node.min; k++) info = this.concat(info, this.build(node.x))
        if (node.max === Infinity) return this.concat(info, this.star(this.build(node.x)))
        let tail = EMPTY
        for (let k = node.min; k < node.max; k++) tail = this.optional(this.concat(this.build(node.x), tail))
        return this.concat(info, tail)
      }
    }
  }

  private concat(a: Info, b: Info): Info {
    for (const [x, wx] of a.last) for (const [y, wy] of b.first) this.link(x, y, wx * wy)
    const first = new Map(a.first)
    addWays(first, b.first, a.nullWays)
    const last = new Map(b.last)
    addWays(last, a.last, b.nullWays)
    const clean = new Set(b.clean)
    if (b.nullClean) for (const p of a.clean) clean.add(p)
    return { first, last, clean, nullWays: a.nullWays * b.nullWays, nullClean: a.nullClean && b.nullClean }
  }

  private star(body: Info): Info {
    for (const [x, wx] of body.last) for (const [y, wy] of body.first) this.link(x, y, wx * wy)
    return this.optional(body)
  }

  private optional(body: Info): Info {
    return { ...body, nullWays: body.nullWays + 1, nullClean: true }
  }

  private link(x: number, y: number, ways: number): void {
    this.budget.spend()
    this.follow[x].set(y, (this.follow[x].get(y) ?? 0) + ways)
  }
}

function intersects(a: Ranges, b: Ranges): boolean {
  for (let i = 0, j = 0; i < a.length && j < b.length; ) {
    if (a[i + 1] < b[j]) i += 2
    else if (b[j + 1] < a[i]) j += 2
    else return true
  }
  return false
}


/** One way to each successor, and no character leading to two of them. */
function deterministic(next: Ways, sets: Ranges[], budget: Budget): boolean {
  const ps = [...next.keys()]
  if ([...next.values()].some((w) => w !== 1)) return false
  for (let i = 0; i < ps.length; i++)
    for (let j = i + 1; j < ps.length; j++) {
      budget.spend()
      if (intersects(sets[ps[i]], sets[ps[j]])) return false
    }
  return true
}

function unambiguous(node: Node): boolean {
  const budget = new Budget()
  const a = new Automaton(budget)
  const root = a.build(node)
  if (!deterministic(root.first, a.sets, budget) || !a.follow.every((f) => deterministic(f, a.sets, budget))) return false
  // States of two failing attempts, the earlier one first; START is an attempt that has read nothing.
  const START = -1
  const failing = (p: number) => !root.clean.has(p)
  const next = (q: number) => (q === START ? root.first : a.follow[q])
  const seen = new Set<number>()
  const stride = a.sets.length + 1
  const queue: [number, number][] = []
  for (let p = 0; p < a.sets.length; p++) if (failing(p)) queue.push([p, START])
  while (queue.length) {
    const [q1, q2] = queue.pop()!
    for (const r1 of next(q1).keys()) {
      if (!failing(r1)) continue
      for (const r2 of next(q2).keys()) {
        budget.spend()
        if (!failing(r2) || !intersects(a.sets[r1], a.sets[r2])) continue
        if (r1 === r2) return false
        const key = r1 * stride + r2
        if (!seen.has(key)) seen.add(key), queue.push([r1, r2])
      }
    }
  }
  return true
}

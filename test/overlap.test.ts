// The overlap rule of path reservations (lib/overlap.ts), as a table of cases.
// Every "overlaps" case is also checked against picomatch itself: the witness
// path must match both patterns, so the table cannot claim an overlap that isn't.
import { describe, expect, test } from 'bun:test'
import picomatch from 'picomatch'
import { LIMITS, MAX_STEPS, expandBraces, overlapCost, overlaps, patternProblem, segmentsMeet } from '../lib/overlap'

/** [a, b, witness path matching both (checked with picomatch)] */
const OVERLAP: [string, string, string][] = [
  ['src/**', 'src/a.ts', 'src/a.ts'],
  ['src/*.ts', 'src/a.ts', 'src/a.ts'],
  ['src/**/*.test.ts', 'src/x/y.test.ts', 'src/x/y.test.ts'],
  ['{a,b}/x', 'b/x', 'b/x'],
  ['src/a.ts', 'src/a.ts', 'src/a.ts'],
  ['**', 'docs/readme.md', 'docs/readme.md'],
  ['**/*.md', 'docs/deep/x.md', 'docs/deep/x.md'],
  ['src/**', 'src/**/*.ts', 'src/q/r.ts'],
  ['src/*/index.ts', 'src/**/index.ts', 'src/m/index.ts'],
  ['src/a*.ts', 'src/*b.ts', 'src/ab.ts'],
  ['src/?.ts', 'src/[a-c].ts', 'src/b.ts'],
  ['src/[!a].ts', 'src/a.ts', 'src/a.ts'], // picomatch: only ^ negates
  ['app/[id].tsx', 'app/[id].tsx', 'app/i.tsx'],
  ['[ab]', '\\[ab\\]', '[ab]'], // a bracket expression also matches its own text
  ['src/[^x-z]*', 'src/[a-c]', 'src/a'],
  ['lib/{x,y/z}/**', 'lib/y/z/k.ts', 'lib/y/z/k.ts'],
  ['file{1..3}.txt', 'file2.txt', 'file2.txt'],
  ['src/**/a/**/b.ts', 'src/a/b.ts', 'src/a/b.ts'],
  ['**/test/**', 'pkg/test/unit/x.ts', 'pkg/test/unit/x.ts'],
  ['a/*/c', '*/b/*', 'a/b/c'],
  ['src/*.{ts,tsx}', 'src/App.tsx', 'src/App.tsx'],
  ['./src/a.ts', 'src/a.ts', 'src/a.ts'],
]

/** Pairs with disjoint literal parts (or classes): never an overlap. */
const DISJOINT: [string, string][] = [
  ['src/a.ts', 'src/b.ts'],
  ['docs/**', 'src/**'],
  ['src/*.ts', 'lib/*.ts'],
  ['src/*.ts', 'src/*.js'],
  ['src/*.ts', 'src/a/b.ts'], // * stays within one segment
  ['src/?.ts', 'src/ab.ts'],
  ['src/[a-c].ts', 'src/[d-f].ts'],
  ['src/[^a].ts', 'src/a.ts'],
  ['src/[!a].ts', 'src/b.ts'],
  ['{a,b}/x', 'c/x'],
  ['file{1..3}.txt', 'file4.txt'],
  ['src/**/*.test.ts', 'src/x/y.ts'],
  ['a/**/z', 'b/**/z'],
  ['src/a\\*.ts', 'src/ab.ts'], // an escaped * is literal
]

/** Over-approximations the rule states: wider than picomatch, never narrower. */
const WIDENED: [string, string][] = [
  ['src/@(a|b).ts', 'src/c/d.ts'], // extglob segment counts as **
  ['src/[[:digit:]].ts', 'src/x.ts'], // POSIX class counts as any character
]

describe('overlap rule', () => {
  test.each(OVERLAP)('%p overlaps %p (both match %p)', (a, b, path) => {
    expect(picomatch(a, { dot: true })(path.replace(/^\.\//, ''))).toBe(true)
    expect(picomatch(b, { dot: true })(path)).toBe(true)
    expect(overlaps(a, b)).toBe(true)
    expect(overlaps(b, a)).toBe(true)
  })

  test.each(DISJOINT)('%p and %p never overlap', (a, b) => {
    expect(overlaps(a, b)).toBe(false)
    expect(overlaps(b, a)).toBe(false)
  })

  test.each(WIDENED)('%p is widened and overlaps %p', (a, b) => {
    expect(overlaps(a, b)).toBe(true)
    expect(overlaps(b, a)).toBe(true)
  })

  test('plain paths decide as the general rule does: the same file, in its case or (case-insensitive) not', () => {
    // `b/.` is the path `b` to the rule but not plain, so the general algorithm decides that side.
    let seed = 51
    const rand = (n: number) => ((seed = (seed * 1103515245 + 12345) % 2 ** 31), seed % n)
    const chars = 'aAbB0.-_ ~#$%^&=,;\'"`'
    const segment = () => {
      if (rand(10) === 0) return '..'
      let seg = ''
      for (let k = 1 + rand(3); k > 0; k--) seg += chars[rand(chars.length)]
      return seg === '.' ? 'x' : seg
    }
    const path = () => Array.from({ length: 1 + rand(3) }, segment).join('/')
    const variants = (a: string) => [a, a.toUpperCase(), a.toLowerCase(), `${a}/${segment()}`, a.split('/').slice(1).join('/') || 'q', path()]
    let met = 0
    for (let i = 0; i < 400; i++) {
      const a = path()
      for (const b of variants(a))
        for (const caseless of [false, true]) {
          const fast = overlaps(a, b, caseless)
          expect(fast).toBe(overlaps(a, `${b}/.`, caseless))
          if (fast) met++
        }
    }
    expect(met).toBeGreaterThan(800)
    expect(overlaps('src/A.ts', 'src/a.ts')).toBe(false)
    expect(overlaps('src/A.ts', 'src/a.ts', true)).toBe(true)
    expect(overlaps('src/a.ts', 'src/a.ts/b')).toBe(false)
  })

  test('a brace expansion beyond the cap counts as ** (never a missed overlap)', () => {
    const huge = '{a,b,c,d}{a,b,c,d}{a,b,c,d}{a,b,c,d}{a,b,c,d}/x' // 1024 alternatives
    expect(expandBraces(huge)).toBeNull()
    expect(overlaps(huge, 'zzz/y')).toBe(true)
    expect(expandBraces('{a,{b,c}}-{1..2}')).toEqual(['a-1', 'a-2', 'b-1', 'b-2', 'c-1', 'c-2'])
  })

  test('segment intersection is exact for *, ? and literals', () => {
    const seg = (s: string) => [...s].map((c) => (c === '*' ? { star: true as const } : { star: false as const, ranges: [[c.charCodeAt(0), c.charCodeAt(0)]] as [number, number][], negated: false }))
    expect(segmentsMeet(seg('a*'), seg('*b'))).toBe(true)
    expect(segmentsMeet(seg('a*c'), seg('b*'))).toBe(false)
    expect(segmentsMeet(seg('*x*'), seg('y*z'))).toBe(true) // yxz
    expect(segmentsMeet(seg('ab'), seg('abc'))).toBe(false)
  })

  test('bad patterns are named', () => {
    expect(patternProblem('')).toBe('a pattern must not be empty')
    expect(patternProblem('/etc/passwd')).toContain('no leading /')
    expect(patternProblem('src/../x')).toContain('..')
    expect(patternProblem('!src/**')).toContain('negated')
    expect(patternProblem('src/**')).toBeNull()
    expect(patternProblem('a..b/c')).toBeNull() // only a whole .. segment escapes the root
  })
})

describe('rule 6: NFC always, case per project', () => {
  test('NFC: é as one code point or two is one character, in literals, escapes and classes', () => {
    expect(overlaps('caf\u00e9.ts', 'cafe\u0301.ts')).toBe(true)
    expect(overlaps('src/*\u00e9', 'src/xe\u0301')).toBe(true)
    expect(overlaps('[\u00e9]', 'e\u0301')).toBe(true)
    expect(overlaps('caf\u00e9.ts', 'cafe.ts')).toBe(false)
  })

  test('case-insensitive: literals, escapes and ASCII classes in both cases; a negated or non-ASCII class is any character', () => {
    expect(overlaps('SRC/Held.ts', 'src/held.ts')).toBe(false)
    expect(overlaps('SRC/Held.ts', 'src/held.ts', true)).toBe(true)
    expect(overlaps('src/**', 'SRC/a/b.ts', true)).toBe(true)
    expect(overlaps('\\S', 's', true)).toBe(true)
    expect(overlaps('[A-C].ts', 'b.ts', true)).toBe(true)
    expect(overlaps('[a-c].ts', 'B.TS', true)).toBe(true)
    expect(overlaps('[a-c].ts', 'd.ts', true)).toBe(false)
    // picomatch's [^a-z] matches "A": folded, it must still meet "a"
    expect(overlaps('[^a-z].ts', 'A.ts', true)).toBe(true)
    expect(overlaps('\u00c9t\u00e9', '\u00e9T\u00c9', true)).toBe(true)
    expect(overlaps('src/a.ts', 'lib/A.ts', true)).toBe(false)
  })
})

describe('bounded cost', () => {
  test('each limit on a pattern\'s size and shape is a named refusal', () => {
    expect(LIMITS).toEqual({ length: 1024, segments: 64, segmentLength: 255, wildcards: 16, globstars: 16, expansions: 256 })
    expect(patternProblem('a'.repeat(1025))).toContain('at most 1024 characters')
    expect(patternProblem('**/'.repeat(341) + 'x')).toContain('342 path segments; at most 64')
    expect(patternProblem('*a'.repeat(512))).toContain('a segment of 1024 characters; at most 255')
    expect(patternProblem('*a'.repeat(17))).toContain('17 wildcards (*, ?, [...]) in one segment; at most 16')
    expect(patternProblem('x/' + '**/a/'.repeat(17))).toContain('more than 16 ** segments')
    expect(patternProblem('{a,b}'.repeat(9))).toContain('more than 256 alternatives')
    expect(patternProblem('[ab]'.repeat(9))).toContain('more than 256 alternatives') // each class read two ways
    // At the limits, still fine.
    expect(patternProblem('*a'.repeat(16))).toBeNull()
    expect(patternProblem('a\\*'.repeat(20))).toBeNull() // escaped: literal, not wildcards
    expect(patternProblem(Array.from({ length: 64 }, (_, i) => (i % 4 ? `s${i}` : '**')).join('/'))).toBeNull()
    expect(patternProblem('{a,b}'.repeat(8))).toBeNull()
  })

  test('star-heavy segments meet in linear steps (the probe\'s pair: 3 steps, exact)', () => {
    expect(overlapCost('*a'.repeat(512), '*b'.repeat(512))).toEqual({ overlaps: false, steps: 3 })
    expect(overlapCost('x*' + 'a*'.repeat(200) + 'q', 'x*' + 'b*'.repeat(200) + 'q')).toEqual({ overlaps: true, steps: 5 })
    expect(overlapCost('x*' + 'a*'.repeat(200) + 'q', 'x*' + 'b*'.repeat(200) + 'r').overlaps).toBe(false)
    // A long glob segment against the short segments of a real path: ruled out by length, not by search.
    expect(overlapCost('**/*' + 'a'.repeat(250), 'src/x/y/file.ts')).toEqual({ overlaps: false, steps: 15 })
  })

  test('a pair takes at most MAX_STEPS steps; past them it counts as an overlap (never a missed one)', () => {
    const deep = (end: string) => '**/*' + 'a'.repeat(250) + ('/**/*' + 'a'.repeat(250)).repeat(2) + '/' + end
    const literal = ('a'.repeat(250) + '/').repeat(3) + 'b'
    // Both within the limits; they share no path (the last segments differ), but deciding that exceeds the budget.
    expect(patternProblem(deep('c'))).toBeNull()
    expect(patternProblem(literal)).toBeNull()
    expect(overlapCost(deep('c'), literal)).toEqual({ overlaps: true, steps: MAX_STEPS + 1 })
    // Within the budget the answer is exact.
    const small = overlapCost('**/*' + 'a'.repeat(100) + '/c', 'a'.repeat(100) + '/' + 'a'.repeat(101) + '/b')
    expect(small.overlaps).toBe(false)
    expect(small.steps).toBeLessThan(MAX_STEPS)
  })

  test('a path past the limits costs at most its length plus MAX_STEPS: no table the size of a product of lengths', () => {
    const path = 'a/'.repeat(50_000) + 'a.ts' // 100 KB, 50,001 segments
    const started = performance.now()
    for (const held of ['**', '**/b.ts', 'a/**/a.ts', 'src/*.ts', '*/*/*/**/x/**/a.ts']) {
      const { steps } = overlapCost(path, held)
      expect(steps).toBeLessThanOrEqual(MAX_STEPS + 1)
    }
    expect(overlapCost(path, 'a/'.repeat(63) + '**').overlaps).toBe(true)
    // Not a speed target (bench/ has those): quadratic in the path, this pair of loops took many seconds.
    expect(performance.now() - started).toBeLessThan(2000)
  })

  test('segment intersection agrees with picomatch on every small pattern pair', () => {
    // Segments over {a, b, *, ?} up to 3 long: a witness needs at most 6 characters.
    const atoms = ['a', 'b', '*', '?']
    const segs: string[] = ['']
    for (let n = 1; n <= 3; n++) for (const s of segs.filter((x) => x.length === n - 1)) for (const c of atoms) segs.push(s + c)
    const pats = segs.filter((x) => x && x !== '**' && !x.includes('**'))
    const words: string[] = ['']
    for (let n = 1; n <= 6; n++) for (const w of words.filter((x) => x.length === n - 1)) words.push(w + 'a', w + 'b')
    const matchers = new Map(pats.map((p) => [p, picomatch(p, { dot: true })]))
    let both = 0
    for (const a of pats)
      for (const b of pats) {
        const ma = matchers.get(a)!
        const mb = matchers.get(b)!
        const witness = words.some((w) => w && ma(w) && mb(w))
        if (overlaps(a, b) !== witness) throw new Error(`${a} vs ${b}: overlaps says ${!witness}, picomatch ${witness}`)
        if (witness) both++
      }
    expect(both).toBeGreaterThan(1000)
  })
})

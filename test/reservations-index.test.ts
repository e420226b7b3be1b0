// The reservation index (lib/path-prefix.ts, reservation_paths): a check or grant reads
// only the reservations whose literal prefixes can meet the paths, and must answer
// exactly as the overlap rule over every reservation of the project would. Random
// patterns (literal, *, **, ?, classes, braces, escapes, dots) are reserved and checked
// over HTTP; each answer is compared with overlaps() over all of them, in grant order.
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { Database } from 'bun:sqlite'
import { join } from 'node:path'
import { overlaps } from '../lib/overlap'
import { ancestors, literalPath, pathPrefix, pathPrefixes, prefixesMeet, prefixQuery } from '../lib/path-prefix'
import { call, eventually, register, startServer, tempDir, type Agent, type TestServer } from './helpers'

let s: TestServer
beforeAll(async () => (s = await startServer()))
afterAll(() => s.cleanup())

/** A small PRNG, so a failure names a seed that reproduces it. */
function rng(seed: number) {
  let x = seed >>> 0 || 1
  const next = () => ((x ^= x << 13), (x ^= x >>> 17), (x ^= x << 5), (x >>> 0) / 2 ** 32)
  return { pick: <T>(xs: T[]): T => xs[Math.floor(next() * xs.length)], int: (n: number) => Math.floor(next() * n) }
}

// Few literal names, so prefixes repeat and nest (a, a/b, a/b/x.ts …); globs at every depth.
const LITERAL = ['a', 'b', 'c', 'd', 'e', 'src', 'lib', 'docs', 'x.ts', 'a.ts', '.env', 'v1.2']
const GLOB = ['*', '**', '*.ts', 'a*', '?.ts', '[ab]', '[^a]*', '{a,b}', '{src,a/b}', 'a\\*', '.', 'x?', '*a*']

/** 1 to 4 segments; a glob at the top is rarer, as in real reservations (it would meet nearly everything). */
function pattern(r: ReturnType<typeof rng>): string {
  const depth = 1 + r.int(4)
  const segs: string[] = []
  for (let i = 0; i < depth; i++) segs.push(r.int(i === 0 ? 12 : 3) === 0 ? r.pick(GLOB) : r.pick(LITERAL))
  if (segs[0] === '.' && depth === 1) segs.push('a')
  return segs.join('/')
}

const reserve = (a: Agent, paths: string[]) => call(s.api, 'POST', '/api/reservations', { project: P, paths }, a.h)
let P = ''

type Held = { id: string; paths: string[] }
/** What the rule says over every reservation, in grant order: the conflicts a check must list. */
const expected = (held: Held[], paths: string[]) =>
  held.flatMap((h) => paths.flatMap((path) => h.paths.filter((hp) => overlaps(path, hp)).map((hp) => ({ path, held_path: hp, reservation_id: h.id }))))
const listed = (body: any) => (body.conflicts ?? []).map((c: any) => ({ path: c.path, held_path: c.held_path, reservation_id: c.reservation_id }))

describe('prefixes', () => {
  test('a prefix is the literal leading segments; anything doubtful ends it', () => {
    expect(pathPrefix('src/lib/a.ts')).toBe('src/lib/a.ts')
    expect(pathPrefix('src/lib/*.ts')).toBe('src/lib')
    expect(pathPrefix('src/**')).toBe('src')
    expect(pathPrefix('**/x')).toBe('')
    expect(pathPrefix('{a,b}/x')).toBe('')
    expect(pathPrefix('a/{b,c/d}/e')).toBe('a')
    expect(pathPrefix('./src/a.ts')).toBe('')
    expect(pathPrefix('src//a.ts')).toBe('src')
    expect(pathPrefix('src/a\\*b/c')).toBe('src')
    expect(pathPrefix('app/[id]/page.tsx')).toBe('app')
    expect(pathPrefix('x/@(a|b)')).toBe('x')
    expect(ancestors('a/b/c')).toEqual(['', 'a', 'a/b', 'a/b/c'])
    expect(prefixQuery(['a/b/*.ts', 'a/c.ts'])).toEqual({ exact: ['', 'a', 'a/b', 'a/c.ts'], below: ['a/b', 'a/c.ts'] })
    expect(prefixQuery(['a/*', 'a/b/c'])).toEqual({ exact: ['', 'a', 'a/b', 'a/b/c'], below: ['a'] })
    expect(prefixQuery(['src/a.ts', '*.md'])).toBeNull()
  })

  test('a literal path is one whose every segment is literal (one test of the whole text)', () => {
    // The definition segment by segment, as the prefix reads it.
    const bySegment = (p: string) => p.split('/').every((seg) => seg !== '' && seg !== '.' && !/[*?[\]{}()!+@\\]/.test(seg) && /^[\x20-\x7e]+$/.test(seg))
    const r = rng(7)
    const chars = ['a', 'b', '.', '.', '/', '/', ' ', '~', '*', '?', '[', ']', '{', '}', '(', ')', '!', '+', '@', '\\', '\t', 'é', '\x7f', '-']
    let literal = 0
    for (let i = 0; i < 20_000; i++) {
      let p = ''
      for (let k = r.int(9); k > 0; k--) p += r.pick(chars)
      expect([p, literalPath(p)]).toEqual([p, bySegment(p)])
      if (bySegment(p)) literal++
    }
    expect(literal).toBeGreaterThan(500)
    for (const p of ['src/a.ts', 'a..b/c', '.env', 'a/.b', 'x/..']) expect(literalPath(p)).toBe(true)
    for (const p of ['', '/a', 'a/', 'a//b', './a', 'a/./b', 'a/.', 'a/*', 'é/a', 'a\\b']) expect(literalPath(p)).toBe(false)
  })

  test('a kept check is changed by exactly the reservations its read would find (prefixesMeet)', () => {
    const r = rng(11)
    // What the check's statement reads (nearStatement): a prefix in `exact`, or below one of `below`.
    const read = (check: string[], prefixes: string[]) => {
      const q = prefixQuery(check)
      return !q || prefixes.some((p) => q.exact.includes(p) || q.below.some((b) => p.startsWith(`${b}/`)))
    }
    let overlapping = 0
    let met = 0
    for (let i = 0; i < 10000; i++) {
      const [check, held] = [[pattern(r), pattern(r)].slice(0, 1 + (i % 2)), [pattern(r)]]
      const own = pathPrefixes(check)
      const meets = prefixesMeet(own.length === 1 ? own[0] : own, pathPrefixes(held))
      if (meets !== read(check, pathPrefixes(held))) throw new Error(`${held} against ${check}: prefixesMeet says ${meets}, the read says otherwise`)
      if (meets) met++
      if (!check.some((c) => overlaps(c, held[0]))) continue
      overlapping++
      if (!meets) throw new Error(`${held} overlaps ${check} but its change would not reach their check`)
    }
    expect(overlapping).toBeGreaterThan(100)
    expect(met).toBeLessThan(10000 - 100)
    expect(prefixesMeet('src/app.ts', ['docs', 'src/other.ts'])).toBe(false)
    expect(prefixesMeet('src/app.ts', ['src'])).toBe(true)
    expect(prefixesMeet('src', ['src/app.ts'])).toBe(true)
    expect(prefixesMeet('src', ['srcx/app.ts', 'sr'])).toBe(false)
    expect(prefixesMeet(['docs', ''], ['src/app.ts'])).toBe(true)
  })

  test('two patterns that overlap always have nested prefixes (the index never hides one)', () => {
    const r = rng(7)
    const nested = (p: string, q: string) => p === '' || q === '' || p === q || p.startsWith(`${q}/`) || q.startsWith(`${p}/`)
    let overlapping = 0
    for (let i = 0; i < 10000; i++) {
      const [a, b] = [pattern(r), pattern(r)]
      if (!overlaps(a, b)) continue
      overlapping++
      if (!nested(pathPrefix(a), pathPrefix(b))) throw new Error(`${a} and ${b} overlap but their prefixes do not nest`)
    }
    expect(overlapping).toBeGreaterThan(100)
  })
})

describe('the index answers as the rule over every reservation', () => {
  const held: Held[] = []
  let owner: Agent
  const seed = 20261125

  beforeAll(async () => {
    P = `idx-${Math.random().toString(36).slice(2, 8)}`
    owner = await register(s, 'owner')
    const r = rng(seed)
    // One holder: its own reservations never conflict with each other, so every one is granted.
    for (let i = 0; i < 60; i++) {
      const paths = Array.from({ length: 1 + r.int(2) }, () => pattern(r))
      const res = await reserve(owner, paths)
      if (res.status !== 201) throw new Error(`reserve ${JSON.stringify(paths)}: ${res.status} ${res.text}`)
      held.push({ id: res.body.id, paths })
    }
  })

  test('check (committed reads): the same conflicts, in the same order', async () => {
    const r = rng(seed + 1)
    let conflicts = 0
    for (let i = 0; i < 150; i++) {
      const paths = Array.from({ length: 1 + r.int(3) }, () => pattern(r))
      const res = await call(s.api, 'POST', '/api/reservations/check', { project: P, paths })
      const want = expected(held, paths)
      expect({ paths, got: listed(res.body) }).toEqual({ paths, got: want })
      expect(res.status).toBe(want.length ? 409 : 200)
      if (want.length) conflicts++
    }
    // Both answers occur often enough to mean something.
    expect(conflicts).toBeGreaterThan(20)
    expect(conflicts).toBeLessThan(140)
  })

  test('grant (reads inside the unit): refused with the same conflicts, or granted when the rule finds none', async () => {
    const other = await register(s, 'other')
    const r = rng(seed + 2)
    let granted = 0
    for (let i = 0; i < 80; i++) {
      const paths = Array.from({ length: 1 + r.int(2) }, () => pattern(r))
      const res = await reserve(other, paths)
      const want = expected(held, paths)
      expect({ paths, status: res.status, got: listed(res.body) }).toEqual({ paths, status: want.length ? 409 : 201, got: want })
      if (res.status === 201) {
        granted++
        expect((await call(s.api, 'DELETE', `/api/reservations/${res.body.id}`, undefined, other.h)).status).toBe(200)
      }
    }
    expect(granted).toBeGreaterThan(3)
  })
})

/** The index rows of a project, read from a backup (the same SQLite file on both backends). */
async function indexRows(project: string): Promise<{ prefix: string; reservation_id: string }[]> {
  const file = join(tempDir('muster-idx-'), 'backup.db')
  await Bun.write(file, await (await fetch(`${s.api}/api/backup`)).arrayBuffer())
  const db = new Database(file, { readonly: true })
  try {
    return db.query<{ prefix: string; reservation_id: string }, [string]>('SELECT prefix, reservation_id FROM reservation_paths WHERE project = ? ORDER BY prefix').all(project)
  } finally {
    db.close()
  }
}

describe('index rows follow their reservation', () => {
  test('one row per distinct prefix; release, deregistration and expiry remove them', async () => {
    P = `rows-${Math.random().toString(36).slice(2, 8)}`
    const a = await register(s, 'rows')
    const one = (await reserve(a, ['src/a.ts', 'src/b/**', 'src/a.ts', '**/*.md'])).body
    expect(await indexRows(P)).toEqual([
      { prefix: '', reservation_id: one.id },
      { prefix: 'src/a.ts', reservation_id: one.id },
      { prefix: 'src/b', reservation_id: one.id },
    ])
    expect((await call(s.api, 'DELETE', `/api/reservations/${one.id}`, undefined, a.h)).status).toBe(200)
    expect(await indexRows(P)).toEqual([])

    const ttl = (await call(s.api, 'POST', '/api/reservations', { project: P, paths: ['lib/x'], ttl_ms: 1000 }, a.h)).body
    const b = await register(s, 'rows-b')
    await reserve(b, ['docs/**'])
    expect((await indexRows(P)).map((r) => r.prefix)).toEqual(['docs', 'lib/x'])
    await call(s.api, 'DELETE', `/api/instances/${b.id}`)
    await eventually(async () => (await call(s.api, 'GET', `/api/reservations/${ttl.id}`)).status === 404, 5000, 50)
    expect(await indexRows(P)).toEqual([])
  })
})

// State history retention over real HTTP: the prune job keeps the newest --state-history
// versions of each key and none older than --state-history-max-age (the current one
// always); the oldest kept version stays readable, a pruned one is a 404 naming it.
// And the flags' parsing.
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { call, eventually, startServer, type TestServer } from './helpers'
import { ConfigError, loadConfig, parseBytes } from '../lib/config'
import { cacheShares } from '../lib/lru'

const KEEP = 70 // above one anchor's stretch (64), so pruning crosses anchors
let s: TestServer // --state-history KEEP
let aged: TestServer // --state-history-max-age 1s
beforeAll(async () => {
  ;[s, aged] = await Promise.all([
    startServer({ args: ['--state-history', String(KEEP), '--prune-interval', '100ms'] }),
    startServer({ args: ['--state-history-max-age', '1s', '--prune-interval', '100ms'] }),
  ])
})
afterAll(() => Promise.all([s.cleanup(), aged.cleanup()]))

const put = async (server: TestServer, key: string, n: number) => {
  const r = await call(server.api, 'PUT', `/api/state/${key}`, { n })
  expect(r.status).toBe(200)
  return r.body.version as number
}
const write = async (server: TestServer, key: string, count: number) => {
  for (let i = 1; i <= count; i++) await put(server, key, i)
}
const history = async (server: TestServer, key: string) =>
  ((await call(server.api, 'GET', `/api/state/${key}?history=1&limit=5000`)).body.versions as { version: number }[]).map((v) => v.version)
const range = (from: number, to: number) => Array.from({ length: to - from + 1 }, (_, i) => to - i) // newest first
/** Waits until the key's history is exactly `versions`. */
const settles = (server: TestServer, key: string, versions: number[]) =>
  eventually(async () => JSON.stringify(await history(server, key)) === JSON.stringify(versions), 10_000).catch(async () => {
    expect(await history(server, key)).toEqual(versions)
  })

describe('--state-history', () => {
  test('the newest N versions are kept; the oldest kept one is readable, older ones are 404s naming it', async () => {
    await write(s, 'keep/a', 200)
    await settles(s, 'keep/a', range(131, 200))
    const oldest = await call(s.api, 'GET', '/api/state/keep/a?version=131')
    expect(oldest.status).toBe(200)
    expect(oldest.body).toEqual({ n: 131 })
    expect(oldest.headers.get('x-service-version')).toBe('131')
    for (const v of [130, 64, 1]) {
      const r = await call(s.api, 'GET', `/api/state/keep/a?version=${v}`)
      expect(r.status).toBe(404)
      expect(r.body).toMatchObject({ code: 404, oldest_version: 131 })
      expect(r.body.error).toContain(`version ${v} of "keep/a" was pruned`)
      expect(r.body.error).toContain('oldest kept version is 131')
    }
    // Versions above the current one are missing, not pruned.
    expect((await call(s.api, 'GET', '/api/state/keep/a?version=500')).body).toEqual({ error: 'version 500 not found', code: 404 })
    const diff = await call(s.api, 'GET', '/api/state/keep/a?diff=100,200')
    expect(diff.status).toBe(404)
    expect(diff.body.oldest_version).toBe(131)
    expect((await call(s.api, 'GET', '/api/state/keep/a?diff=131,200')).body.diffs).toEqual([{ operation: 'replace', path: '/n', old_value: 131, new_value: 200 }])
  })

  test('rollback past the oldest kept version is a 404 naming it, and changes nothing; to it, a new version', async () => {
    await write(s, 'keep/r', 100)
    await settles(s, 'keep/r', range(31, 100))
    const past = await call(s.api, 'POST', '/api/state/keep/r?rollback=30')
    expect(past.status).toBe(404)
    expect(past.body).toMatchObject({ code: 404, oldest_version: 31 })
    expect(past.body.error).toContain('roll back to 31 or later')
    expect((await call(s.api, 'GET', '/api/state/keep/r')).headers.get('x-service-version')).toBe('100')
    const back = await call(s.api, 'POST', '/api/state/keep/r?rollback=31')
    expect(back.body).toMatchObject({ version: 101, rolled_back: 31 })
    expect((await call(s.api, 'GET', '/api/state/keep/r')).body).toEqual({ n: 31 })
    await settles(s, 'keep/r', range(32, 101))
  })

  test('a key with many versions is pruned over several bounded steps; writes go on meanwhile', async () => {
    await write(s, 'keep/big', 700)
    await settles(s, 'keep/big', range(631, 700))
    // The chain goes on from what was kept: new versions, old reads, a delete and a fresh start.
    await put(s, 'keep/big', 701)
    expect((await call(s.api, 'GET', '/api/state/keep/big?version=640')).body).toEqual({ n: 640 })
    expect((await call(s.api, 'DELETE', '/api/state/keep/big')).status).toBe(200)
    expect(await put(s, 'keep/big', 1)).toBe(1)
    expect(await history(s, 'keep/big')).toEqual([1])
  })

  test('a key with fewer versions than kept is left whole', async () => {
    await write(s, 'keep/few', 10)
    await write(s, 'keep/z-after', 80) // a key after it, so a prune pass has gone by
    await settles(s, 'keep/z-after', range(11, 80))
    expect(await history(s, 'keep/few')).toEqual(range(1, 10))
    expect((await call(s.api, 'GET', '/api/state/keep/few?version=1')).body).toEqual({ n: 1 })
  })
})

describe('--state-history-max-age', () => {
  test('versions older than the age go, the current one never', async () => {
    await write(aged, 'age/a', 5)
    await write(aged, 'age/old', 3)
    await Bun.sleep(1200)
    await put(aged, 'age/a', 6)
    await put(aged, 'age/a', 7)
    await settles(aged, 'age/a', [7, 6])
    // Every version is older than the age: the current one stays, readable and listed.
    await settles(aged, 'age/old', [3])
    expect((await call(aged.api, 'GET', '/api/state/age/old')).body).toEqual({ n: 3 })
    const r = await call(aged.api, 'GET', '/api/state/age/old?version=2')
    expect(r.status).toBe(404)
    expect(r.body.oldest_version).toBe(3)
  })
})

describe('config', () => {
  test('--state-history, --state-history-max-age and --cache-size: defaults, flags, env, bad values', () => {
    const d = loadConfig([], {})
    expect([d.stateHistory, d.stateHistoryMaxAgeMs, d.cacheBytes]).toEqual([1000, null, 64 * 1024 * 1024])
    const c = loadConfig(['--state-history', '100', '--state-history-max-age', '2h', '--cache-size=512KB'], { SERVICE_STATE_HISTORY: '7' })
    expect([c.stateHistory, c.stateHistoryMaxAgeMs, c.cacheBytes]).toEqual([100, 7_200_000, 512 * 1024])
    const e = loadConfig([], { SERVICE_STATE_HISTORY: '7', SERVICE_STATE_HISTORY_MAX_AGE: '30m', SERVICE_CACHE_SIZE: '1048576' })
    expect([e.stateHistory, e.stateHistoryMaxAgeMs, e.cacheBytes]).toEqual([7, 1_800_000, 1048576])
    expect(loadConfig(['--state-history-max-age', 'off'], {}).stateHistoryMaxAgeMs).toBeNull()
    for (const bad of [['--state-history', '0'], ['--state-history', 'many'], ['--state-history-max-age', '3 days'], ['--cache-size', '64XB'], ['--cache-size', '-1']])
      expect(() => loadConfig(bad, {})).toThrow(ConfigError)
    expect(() => loadConfig(['--state-history', '0'], {})).toThrow('invalid --state-history / SERVICE_STATE_HISTORY "0": expected a positive integer')
    expect(['0', '100', '1k', '64MB', '64 MiB', '1G', '1.5MB'].map(parseBytes)).toEqual([0, 100, 1024, 64 << 20, 64 << 20, 1 << 30, 1.5 * (1 << 20)])
    expect(cacheShares(64 << 20)).toEqual({ documents: 56 << 20, answers: 8 << 20 })
  })
})

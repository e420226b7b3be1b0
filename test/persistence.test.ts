import { afterAll, describe, expect, test } from 'bun:test'
import { readFileSync, rmSync } from 'node:fs'
import { join } from 'node:path'
import { openStore } from '../store'
import { call, startServer, tempDir } from './helpers'
import { onPostgres } from './pg'

const dir = tempDir()
afterAll(() => rmSync(dir, { recursive: true, force: true }))

describe('persistence', () => {
  test('a restart keeps state, versions, history, specs and audit', async () => {
    const a = await startServer({ dataDir: dir })
    await call(a.api, 'PUT', '/api/state/p/k', '{"v":1}')
    const w2 = await call(a.api, 'PUT', '/api/state/p/k', '{"v":2}')
    await call(a.api, 'PUT', '/api/specs/proj/s', { s: 1 })
    await a.stop()
    const b = await startServer({ dataDir: dir })
    const g = await fetch(`${b.api}/api/state/p/k`)
    expect(await g.text()).toBe('{"v":2}')
    expect(g.headers.get('x-service-version')).toBe('2')
    expect(g.headers.get('etag')).toBe(`"${w2.body.hash}"`)
    expect((await call(b.api, 'GET', '/api/state/p/k?version=1')).body).toEqual({ v: 1 })
    expect((await call(b.api, 'PUT', '/api/state/p/k', '{"v":3}')).body.version).toBe(3)
    expect((await call(b.api, 'GET', '/api/specs/proj/s')).body).toEqual({ s: 1 })
    expect((await call(b.api, 'GET', '/api/audit')).body.length).toBe(4)
    await b.stop()
  })

  test('SIGKILL right after acknowledged writes loses none of them', async () => {
    const a = await startServer({ dataDir: dir })
    const acked: Record<string, number> = {}
    await Promise.all(
      Array.from({ length: 50 }, async (_, i) => {
        const r = await call(a.api, 'PUT', `/api/state/kill/${i}`, JSON.stringify({ i }))
        if (r.status === 200) acked[`kill/${i}`] = r.body.version
      }),
    )
    await a.kill()
    const b = await startServer({ dataDir: dir })
    const list = (await call(b.api, 'GET', '/api/state')).body as { key: string; version: number }[]
    for (const [key, version] of Object.entries(acked)) expect(list.find((e) => e.key === key)?.version).toBe(version)
    expect(Object.keys(acked).length).toBe(50)
    await b.stop()
  })

  test('kill -9 during writes: every acknowledged write has its state.changed event and audit entry, in commit order', async () => {
    const a = await startServer({ dataDir: dir })
    // Writers keep going until the kill; each acknowledged PUT is noted with the version it got.
    const acked: { key: string; version: number; hash: string }[] = []
    let killed = false
    const writer = async (w: number) => {
      for (let i = 0; !killed; i++) {
        try {
          const r = await call(a.api, 'PUT', `/api/state/crash/${w}`, JSON.stringify({ w, i }))
          if (r.status === 200) acked.push({ key: `crash/${w}`, version: r.body.version, hash: r.body.hash })
        } catch {
          return // the connection died with the server
        }
      }
    }
    const writers = Array.from({ length: 8 }, (_, w) => writer(w))
    while (acked.length < 200) await Bun.sleep(5)
    killed = true
    await a.kill()
    await Promise.all(writers)
    const b = await startServer({ dataDir: dir })
    const events = (await call(b.api, 'GET', '/api/events/history?after_id=0&last=1000&topic=state.changed')).body as any[]
    const audit = (await call(b.api, 'GET', '/api/audit?action=state.put&limit=1000')).body as any[]
    for (const w of acked) {
      expect(events.some((e) => e.data.key === w.key && e.data.version === w.version && e.data.hash === w.hash)).toBe(true)
      expect(audit.some((e) => e.resource === `state/${w.key}` && e.detail === `version ${w.version}`)).toBe(true)
    }
    // Per key, events come in version order with no version missing or repeated: ids follow commit order.
    for (let w = 0; w < 8; w++) {
      const versions = events.filter((e) => e.data.key === `crash/${w}`).map((e) => e.data.version)
      expect(versions).toEqual(versions.map((_, i) => i + 1))
    }
    // Nothing beyond the durable state was announced: the newest event of each key is its stored version.
    const list = (await call(b.api, 'GET', '/api/state')).body as { key: string; version: number }[]
    for (let w = 0; w < 8; w++) {
      const versions = events.filter((e) => e.data.key === `crash/${w}`).map((e) => e.data.version)
      expect(list.find((e) => e.key === `crash/${w}`)?.version ?? 0).toBe(versions.at(-1) ?? 0)
    }
    await b.stop()
  })
})

describe('the WAL under a steady write load (in-process store)', () => {
  // Short turnovers (500 pages) so a second of writes crosses several; the server's is 50,000.
  test.skipIf(onPostgres)('starts over while writes keep coming (the checkpointer turns it over), and every write is kept', async () => {
    const dataDir = tempDir()
    const store = openStore(dataDir, { turnoverFrames: 500 })
    const value = new Uint8Array(2000).fill(120)
    // The WAL header's checkpoint sequence number: SQLite adds one each time the WAL starts over.
    const restarts = () => {
      const header = readFileSync(join(dataDir, 'muster.db-wal')).subarray(0, 16)
      return new DataView(header.buffer, header.byteOffset).getUint32(12)
    }
    let writes = 0
    const keys = new Set<string>()
    try {
      await store.write((tx) => tx.state.put('wal/first', value, 'application/octet-stream'))
      const before = restarts()
      // Eight writers back to back: a COMMIT every turn of the event loop, never an idle moment in
      // which a passive checkpoint would let the WAL start over by itself.
      const until = performance.now() + 1500
      await Promise.all(
        Array.from({ length: 8 }, async (_, w) => {
          for (let i = 0; performance.now() < until; i++, writes++) {
            const key = `wal/${w}/${i % 50}`
            await store.write((tx) => tx.state.put(key, value, 'application/octet-stream'))
            keys.add(key)
          }
        }),
      )
      expect(writes).toBeGreaterThan(2000)
      expect(restarts() - before).toBeGreaterThanOrEqual(2)
      for (const key of keys) expect([key, (await store.state.get(key))?.value.byteLength]).toEqual([key, 2000])
    } finally {
      store.close()
      rmSync(dataDir, { recursive: true, force: true })
    }
  })
})

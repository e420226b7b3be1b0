import { afterAll, describe, expect, test } from 'bun:test'
import { rmSync } from 'node:fs'
import { call, startServer, tempDir } from './helpers'

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
})

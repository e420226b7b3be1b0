import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { rmSync } from 'node:fs'
import { openStore } from '../store'
import { call, startServer, tempDir, type TestServer } from './helpers'

let s: TestServer
beforeAll(async () => (s = await startServer()))
afterAll(() => s.cleanup())

const put = (key: string, body: string | Uint8Array, headers: Record<string, string> = {}) =>
  call(s.api, 'PUT', `/api/state/${key}`, body, headers)

describe('state', () => {
  test('list is [] when empty', async () => {
    const r = await call(s.api, 'GET', '/api/state')
    expect(r.status).toBe(200)
    expect(r.body).toEqual([])
  })

  test('put, versions, hash, raw get with headers', async () => {
    const a = await put('proj/cfg', '{"a":1}')
    expect(a.status).toBe(200)
    expect(a.body).toMatchObject({ key: 'proj/cfg', version: 1, content_type: 'application/json' })
    const hash = new Bun.CryptoHasher('sha256').update('{"a":1}').digest('hex')
    expect(a.body.hash).toBe(hash)
    expect(new Date(a.body.updated_at).toISOString()).toBe(a.body.updated_at)
    const b = await put('proj/cfg', '{"a":2}')
    expect(b.body.version).toBe(2)
    const g = await fetch(`${s.api}/api/state/proj/cfg`)
    expect(g.status).toBe(200)
    expect(await g.text()).toBe('{"a":2}')
    expect(g.headers.get('content-type')).toBe('application/json')
    expect(g.headers.get('x-service-version')).toBe('2')
    expect(g.headers.get('etag')).toBe(`"${b.body.hash}"`)
    const list = await call(s.api, 'GET', '/api/state')
    expect(list.body).toEqual([{ key: 'proj/cfg', version: 2, content_type: 'application/json', updated_at: b.body.updated_at }])
  })

  test('a plain read (answered from the cache, outside the framework) answers as a read through the full route does', async () => {
    // `?history=0` is a plain read too, but a query sends it through the framework's route.
    const w = await put('parity/k', 'v1', { 'content-type': 'text/plain' })
    const both = async (path: string, headers: Record<string, string> = {}) => {
      const [fast, full] = await Promise.all([fetch(`${s.api}${path}`, { headers }), fetch(`${s.api}${path}?history=0`, { headers })])
      const shape = async (r: Response) => ({
        status: r.status,
        body: await r.text(),
        type: r.headers.get('content-type'),
        etag: r.headers.get('etag'),
        version: r.headers.get('x-service-version'),
      })
      const [a, b] = [await shape(fast), await shape(full)]
      expect(a).toEqual(b)
      return a
    }
    expect(await both('/api/state/parity/k')).toEqual({ status: 200, body: 'v1', type: 'text/plain', etag: `"${w.body.hash}"`, version: '1' })
    expect((await both('/api/state/parity/k', { 'if-none-match': `"${w.body.hash}"` })).status).toBe(304)
    expect(JSON.parse((await both('/api/state/parity/missing')).body)).toEqual({ error: 'key not found', code: 404 })
    expect(JSON.parse((await both('/api/state/bad%E0%A4%A')).body)).toEqual({ error: 'invalid key: bad percent-encoding', code: 400 })
    // Read again after a write: the cache is what the write committed.
    await put('parity/k', 'v2', { 'content-type': 'text/plain' })
    expect(await both('/api/state/parity/k')).toMatchObject({ body: 'v2', version: '2' })
  })

  test('a plain write (outside the framework) answers and audits as a write through the full route does', async () => {
    // A query sends a PUT through the framework's route; `?via=full` changes nothing else.
    const both = async (key: string, body: string, headers: Record<string, string> = {}) => {
      const send = (path: string) => fetch(`${s.api}${path}`, { method: 'PUT', body, headers })
      const shape = async (r: Response) => {
        const json = await r.json()
        return { status: r.status, type: r.headers.get('content-type'), body: { ...json, key: json.key && 'k', hash: json.hash && 'h', updated_at: json.updated_at && 't' } }
      }
      const [a, b] = [await shape(await send(`/api/state/fast/${key}`)), await shape(await send(`/api/state/full/${key}?via=full`))]
      expect(a).toEqual(b)
      return a
    }
    expect(await both('k', '{"a":1}')).toEqual({ status: 200, type: 'application/json;charset=utf-8', body: { key: 'k', version: 1, hash: 'h', content_type: 'application/json', updated_at: 't' } })
    expect((await both('k', 'text', { 'content-type': 'text/plain' })).body).toMatchObject({ version: 2, content_type: 'text/plain' })
    expect((await both('k', '{"a":2}', { 'if-match': '"nope"' })).body).toEqual({ error: 'precondition failed: If-Match does not match the current ETag', code: 412, current_version: 2 })
    expect((await both('k', '{"a":2}', { 'if-none-match': '*' })).status).toBe(412)
    expect((await both('k', '{"a":', { 'content-type': 'application/json' })).body).toEqual({ error: 'request body must be JSON: not valid JSON', code: 400 })
    expect((await both('k', '')).body).toEqual({ error: 'request body is empty', code: 400 })
    expect((await both('k', '['.repeat(300) + ']'.repeat(300))).status).toBe(400)
    expect((await both('bad%E0%A4%A', '{}')).body).toEqual({ error: 'invalid key: bad percent-encoding', code: 400 })
    // The same audit entries, in the same order, for both ways in.
    const entries = (await call(s.api, 'GET', '/api/audit?action=state.put&limit=100')).body as any[]
    const of = (way: string) => entries.filter((e) => e.resource.startsWith(`state/${way}/`)).map((e) => [e.resource.slice(6 + way.length), e.outcome, e.detail])
    expect(of('fast')).toEqual(of('full'))
    expect(of('fast')).toHaveLength(8)
  })

  test('ETag and If-None-Match give 304 with an empty body', async () => {
    const w = await put('etag/k', 'hello', { 'content-type': 'text/plain' })
    const r = await fetch(`${s.api}/api/state/etag/k`, { headers: { 'if-none-match': `"${w.body.hash}"` } })
    expect(r.status).toBe(304)
    expect(await r.text()).toBe('')
    const other = await fetch(`${s.api}/api/state/etag/k`, { headers: { 'if-none-match': '"nope"' } })
    expect(other.status).toBe(200)
    expect(other.headers.get('content-type')).toBe('text/plain')
  })

  test('binary values round-trip byte for byte', async () => {
    const bytes = new Uint8Array(4096).map((_, i) => (i * 37) % 256)
    const w = await put('bin/blob', bytes, { 'content-type': 'application/octet-stream' })
    expect(w.status).toBe(200)
    const r = await fetch(`${s.api}/api/state/bin/blob`)
    expect(new Uint8Array(await r.arrayBuffer())).toEqual(bytes)
    expect(r.headers.get('content-type')).toBe('application/octet-stream')
  })

  test('history with limit, version=N, diff', async () => {
    await put('h/doc', JSON.stringify({ name: 'a', tags: ['x'] }))
    await put('h/doc', JSON.stringify({ name: 'b', tags: ['x'] }))
    await put('h/doc', JSON.stringify({ name: 'b', tags: ['x', 'y'], n: 1 }))
    const h = await call(s.api, 'GET', '/api/state/h/doc?history=1')
    expect(h.body.key).toBe('h/doc')
    expect(h.body.versions.map((v: any) => v.version)).toEqual([3, 2, 1])
    expect(Object.keys(h.body.versions[0]).sort()).toEqual(['hash', 'updated_at', 'version'])
    const lim = await call(s.api, 'GET', '/api/state/h/doc?history=1&limit=2')
    expect(lim.body.versions.map((v: any) => v.version)).toEqual([3, 2])
    const v1 = await fetch(`${s.api}/api/state/h/doc?version=1`)
    expect(await v1.json()).toEqual({ name: 'a', tags: ['x'] })
    expect(v1.headers.get('x-service-version')).toBe('1')
    expect(v1.headers.get('content-type')).toBe('application/json')
    const d = await call(s.api, 'GET', '/api/state/h/doc?diff=1,2')
    expect(d.body).toEqual({ key: 'h/doc', v1: 1, v2: 2, diffs: [{ operation: 'replace', path: '/name', old_value: 'a', new_value: 'b' }] })
    const d2 = await call(s.api, 'GET', '/api/state/h/doc?diff=2,3')
    expect(d2.body.diffs).toContainEqual({ operation: 'add', path: '/tags/1', old_value: null, new_value: 'y' })
    expect(d2.body.diffs).toContainEqual({ operation: 'add', path: '/n', old_value: null, new_value: 1 })
    // precedence: history beats diff beats version
    const both = await call(s.api, 'GET', '/api/state/h/doc?history=1&diff=1,2&version=1')
    expect(both.body.versions).toBeDefined()
    const dv = await call(s.api, 'GET', '/api/state/h/doc?diff=1,2&version=1')
    expect(dv.body.diffs).toBeDefined()
  })

  test('read errors: missing key, missing version, bad params, non-JSON diff', async () => {
    expect((await call(s.api, 'GET', '/api/state/nope')).status).toBe(404)
    expect((await call(s.api, 'GET', '/api/state/nope?history=1')).status).toBe(404)
    await put('e/k', '{"a":1}')
    const missing = await call(s.api, 'GET', '/api/state/e/k?version=9')
    expect(missing.status).toBe(404)
    expect(missing.body).toEqual({ error: 'version 9 not found', code: 404 })
    expect((await call(s.api, 'GET', '/api/state/e/k?version=x')).status).toBe(400)
    expect((await call(s.api, 'GET', '/api/state/e/k?diff=1')).status).toBe(400)
    expect((await call(s.api, 'GET', '/api/state/e/k?diff=1,5')).status).toBe(404)
    await put('e/txt', 'plain', { 'content-type': 'text/plain' })
    await put('e/txt', 'plainer', { 'content-type': 'text/plain' })
    const nd = await call(s.api, 'GET', '/api/state/e/txt?diff=1,2')
    expect(nd.status).toBe(400)
    expect(nd.body.code).toBe(400)
  })

  test('rollback stores the old value as a new version', async () => {
    await put('r/k', '{"v":1}')
    await put('r/k', '{"v":2}')
    const r = await call(s.api, 'POST', '/api/state/r/k?rollback=1')
    expect(r.status).toBe(200)
    expect(r.body).toMatchObject({ key: 'r/k', version: 3, rolled_back: 1 })
    expect(Object.keys(r.body).sort()).toEqual(['hash', 'key', 'rolled_back', 'updated_at', 'version'])
    expect(await (await fetch(`${s.api}/api/state/r/k`)).text()).toBe('{"v":1}')
    expect((await call(s.api, 'POST', '/api/state/r/k')).status).toBe(400)
    expect((await call(s.api, 'POST', '/api/state/r/k?rollback=abc')).status).toBe(400)
    expect((await call(s.api, 'POST', '/api/state/r/k?rollback=99')).status).toBe(404)
    expect((await call(s.api, 'POST', '/api/state/r/none?rollback=1')).status).toBe(404)
    const after = await call(s.api, 'GET', '/api/state/r/k?history=1')
    expect(after.body.versions.length).toBe(3)
  })

  test('empty body is 400 and changes nothing', async () => {
    await put('empty/k', '{"keep":true}')
    const r = await put('empty/k', '')
    expect(r.status).toBe(400)
    expect(r.body).toEqual({ error: 'request body is empty', code: 400 })
    const g = await fetch(`${s.api}/api/state/empty/k`)
    expect(g.headers.get('x-service-version')).toBe('1')
  })

  test('over 10 MB is 413, by Content-Length and when streamed', async () => {
    const big = new Uint8Array(10 * 1024 * 1024 + 1)
    const r = await put('big/k', big)
    expect(r.status).toBe(413)
    expect(r.body.code).toBe(413)
    const stream = new ReadableStream({
      start(c) {
        for (let i = 0; i < 11; i++) c.enqueue(new Uint8Array(1024 * 1024))
        c.close()
      },
    })
    const st = await fetch(`${s.api}/api/state/big/k`, { method: 'PUT', body: stream })
    expect(st.status).toBe(413)
    expect((await call(s.api, 'GET', '/api/state/big/k')).status).toBe(404)
    const exact = await put('big/ok', new Uint8Array(10 * 1024 * 1024).fill(65), { 'content-type': 'text/plain' })
    expect(exact.status).toBe(200)
  })

  test('every version of a long history reads back, across the 64-version anchors; delete takes them all', async () => {
    // 150 versions: anchors at 64 and 128, a walk from the current one above the last.
    for (let v = 1; v <= 150; v++) expect((await put('long/k', `{"v":${v}}`)).body.version).toBe(v)
    for (const v of [1, 2, 63, 64, 65, 100, 127, 128, 129, 149, 150]) {
      const r = await fetch(`${s.api}/api/state/long/k?version=${v}`)
      expect([r.status, r.headers.get('x-service-version'), await r.text()]).toEqual([200, String(v), `{"v":${v}}`])
    }
    for (const v of [151, 1000]) expect((await call(s.api, 'GET', `/api/state/long/k?version=${v}`)).status).toBe(404)
    expect((await call(s.api, 'GET', '/api/state/long/k?diff=0,1')).body).toEqual({ code: 404, error: 'version 0 not found' })
    const h = await call(s.api, 'GET', '/api/state/long/k?history=1&limit=70')
    expect(h.body.versions.map((x: any) => x.version)).toEqual(Array.from({ length: 70 }, (_, i) => 150 - i))
    expect((await call(s.api, 'GET', '/api/state/long/k?history=1&limit=1000')).body.versions).toHaveLength(150)
    const back = await call(s.api, 'POST', '/api/state/long/k?rollback=64')
    expect(back.body).toMatchObject({ version: 151, rolled_back: 64 })
    expect(await (await fetch(`${s.api}/api/state/long/k?version=151`)).text()).toBe('{"v":64}')
    expect((await call(s.api, 'DELETE', '/api/state/long/k')).status).toBe(200)
    expect((await put('long/k', '{"again":1}')).body.version).toBe(1)
    for (const v of [2, 64, 128]) expect((await call(s.api, 'GET', `/api/state/long/k?version=${v}`)).status).toBe(404)
    expect((await call(s.api, 'GET', '/api/state/long/k?history=1')).body.versions.map((x: any) => x.version)).toEqual([1])
  })

  test('delete removes the entry and its history; re-create starts at 1', async () => {
    await put('d/k', '1')
    await put('d/k', '2')
    const d = await call(s.api, 'DELETE', '/api/state/d/k')
    expect(d.body).toEqual({ deleted: 'd/k' })
    expect((await call(s.api, 'DELETE', '/api/state/d/k')).status).toBe(404)
    expect((await call(s.api, 'GET', '/api/state/d/k?version=1')).status).toBe(404)
    expect((await put('d/k', '3')).body.version).toBe(1)
  })

  test('compare-and-swap: If-Match, if_version, If-None-Match: *', async () => {
    const w1 = await put('cas/k', '"one"')
    const ok = await put('cas/k', '"two"', { 'if-match': `"${w1.body.hash}"` })
    expect(ok.body.version).toBe(2)
    const stale = await put('cas/k', '"three"', { 'if-match': `"${w1.body.hash}"` })
    expect(stale.status).toBe(412)
    expect(stale.body).toMatchObject({ code: 412, current_version: 2 })
    expect((await put('cas/k?if_version=1', '"x"')).status).toBe(412)
    expect((await put('cas/k?if_version=2', '"x"')).body.version).toBe(3)
    const created = await put('cas/new', '1', { 'if-none-match': '*' })
    expect(created.body.version).toBe(1)
    const again = await put('cas/new', '2', { 'if-none-match': '*' })
    expect(again.status).toBe(412)
    expect(again.body.current_version).toBe(1)
    expect((await call(s.api, 'DELETE', '/api/state/cas/new?if_version=7')).status).toBe(412)
    expect((await call(s.api, 'GET', '/api/state/cas/new')).status).toBe(200)
    expect((await call(s.api, 'DELETE', '/api/state/cas/new?if_version=1')).status).toBe(200)
  })

  test('keys with slashes and encoded characters', async () => {
    const w = await put('team/app/feature%20flags', '{"on":true}')
    expect(w.body.key).toBe('team/app/feature flags')
    const r = await call(s.api, 'GET', '/api/state/team/app/feature%20flags')
    expect(r.body).toEqual({ on: true })
  })
})

// A PUT takes the current version from the document cache unless a write to the key
// is still pending: against the real store, the interleavings that could make the
// cache and the writer disagree.
describe('state writes and the document cache (in-process)', () => {
  const dir = tempDir()
  const store = openStore(dir)
  afterAll(() => {
    store.close()
    rmSync(dir, { recursive: true, force: true })
  })
  const bytes = (text: string) => new TextEncoder().encode(text)
  const put = (key: string, text: string, cond?: { ifVersion?: number }) =>
    store.write((tx) => tx.state.put(key, bytes(text), 'application/json', cond))
  const failing = (key: string) =>
    store.write(async (tx) => {
      await tx.state.put(key, bytes('"lost"'), 'application/json')
      throw new Error('unit fails after its write')
    })

  test('a unit rolled back after its write leaves the next version right', async () => {
    expect((await put('c/k', '1')).version).toBe(1)
    expect((await store.state.get('c/k'))!.version).toBe(1) // cached
    await expect(failing('c/k')).rejects.toThrow('unit fails')
    expect((await store.state.get('c/k'))!.version).toBe(1)
    expect((await put('c/k', '2', { ifVersion: 1 })).version).toBe(2)
    expect((await store.state.get('c/k'))!.version).toBe(2)
  })

  test('writes to one key in one batch see each other; a failed one in between changes nothing', async () => {
    await put('c/b', '0')
    await store.state.get('c/b')
    const results = await Promise.allSettled([put('c/b', '1'), put('c/b', '2'), failing('c/b'), put('c/b', '3', { ifVersion: 3 }), put('c/b', '4')])
    expect(results.map((r) => (r.status === 'fulfilled' ? r.value.version : 'rejected'))).toEqual([2, 3, 'rejected', 4, 5])
    const doc = (await store.state.get('c/b'))!
    expect([doc.version, new TextDecoder().decode(doc.value)]).toEqual([5, '4'])
    expect((await put('c/b', '5')).version).toBe(6)
  })

  test('a write made while the after-commit hooks of a batch run stays visible to the next write', async () => {
    // A listener that writes from inside the hooks opens the next batch before the
    // previous batch's last hook has run.
    let armed = true
    let hooked: Promise<unknown> = Promise.resolve()
    store.onEvent((event) => {
      if (event.topic !== 'c.trigger' || !armed) return
      armed = false
      hooked = put('c/h', '"from the hook"')
    })
    await put('c/h', '1')
    await store.state.get('c/h')
    await Promise.all([
      store.write(async (tx) => {
        await tx.state.put('c/h', bytes('2'), 'application/json')
        await tx.emit('c.trigger', {}, 'test')
      }),
      put('c/h', '3'),
    ])
    const after = await put('c/h', '4')
    expect((await hooked as { version: number }).version).toBe(4)
    expect(after.version).toBe(5)
  })

  test('a key deleted and written again in one batch starts over at version 1', async () => {
    await put('c/d', '1')
    await store.state.get('c/d')
    const [, , again] = await Promise.all([
      put('c/d', '2'),
      store.write((tx) => tx.state.delete('c/d')),
      put('c/d', '"new"'),
    ])
    expect(again.version).toBe(1)
    expect((await store.state.get('c/d'))!.version).toBe(1)
  })
})

describe('ordering', () => {
  test('the list is in byte order of the keys on either backend (uppercase before "_" before lowercase)', async () => {
    const keys = ['order/a', 'order/B', 'order/é', 'order/b', 'order/_', 'order/A']
    for (const k of keys) expect((await call(s.api, 'PUT', `/api/state/${k}`, { k })).status).toBe(200)
    const listed = (await call(s.api, 'GET', '/api/state')).body.map((d: { key: string }) => d.key).filter((k: string) => k.startsWith('order/'))
    expect(listed).toEqual(['order/A', 'order/B', 'order/_', 'order/a', 'order/b', 'order/é'])
  })
})

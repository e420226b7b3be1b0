import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { call, startApp, type InProcessServer } from './helpers'

let s: InProcessServer
beforeAll(async () => (s = await startApp()))
afterAll(() => s.cleanup())

describe('specs', () => {
  test('list is empty for an unknown project', async () => {
    const r = await call(s.api, 'GET', '/api/specs/none')
    expect(r.status).toBe(200)
    expect(r.body).toEqual({ project: 'none', specs: [] })
  })

  test('put, version, list without data, raw get with ETag and 304', async () => {
    const w1 = await call(s.api, 'PUT', '/api/specs/shop/api', { endpoints: 1 })
    expect(w1.status).toBe(200)
    expect(w1.body).toMatchObject({ project: 'shop', name: 'api', version: 1 })
    expect(Object.keys(w1.body).sort()).toEqual(['hash', 'name', 'project', 'updated_at', 'version'])
    const w2 = await call(s.api, 'PUT', '/api/specs/shop/api', { endpoints: 2 })
    expect(w2.body.version).toBe(2)
    await call(s.api, 'PUT', '/api/specs/shop/db', [1, 2, 3])
    const list = await call(s.api, 'GET', '/api/specs/shop')
    expect(list.body).toEqual({
      project: 'shop',
      specs: [
        { name: 'api', version: 2, updated_at: w2.body.updated_at },
        { name: 'db', version: 1, updated_at: expect.any(String) },
      ],
    })
    const g = await s.fetch(`/api/specs/shop/api`)
    expect(await g.json()).toEqual({ endpoints: 2 })
    expect(g.headers.get('content-type')).toBe('application/json')
    expect(g.headers.get('x-service-version')).toBe('2')
    expect(g.headers.get('etag')).toBe(`"${w2.body.hash}"`)
    const nm = await s.fetch(`/api/specs/shop/api`, { headers: { 'if-none-match': g.headers.get('etag')! } })
    expect(nm.status).toBe(304)
    expect(await nm.text()).toBe('')
  })

  test('errors: 404 spec not found, empty body, invalid JSON — nothing stored', async () => {
    const r = await call(s.api, 'GET', '/api/specs/shop/missing')
    expect(r.status).toBe(404)
    expect(r.body).toEqual({ error: 'spec not found', code: 404 })
    const empty = await call(s.api, 'PUT', '/api/specs/shop/x', '')
    expect(empty.status).toBe(400)
    expect(empty.body).toEqual({ error: 'request body is empty', code: 400 })
    const bad = await call(s.api, 'PUT', '/api/specs/shop/x', '{nope', { 'content-type': 'application/json' })
    expect(bad.status).toBe(400)
    expect((await call(s.api, 'GET', '/api/specs/shop/x')).status).toBe(404)
    const big = await call(s.api, 'PUT', '/api/specs/shop/x', new Uint8Array(10 * 1024 * 1024 + 10))
    expect(big.status).toBe(413)
  })

  test('compare-and-swap on specs', async () => {
    const w = await call(s.api, 'PUT', '/api/specs/cas/s', { a: 1 })
    expect((await call(s.api, 'PUT', '/api/specs/cas/s?if_version=0', { a: 2 })).status).toBe(412)
    expect((await call(s.api, 'PUT', '/api/specs/cas/s', { a: 2 }, { 'if-match': `"${w.body.hash}"` })).body.version).toBe(2)
    expect((await call(s.api, 'PUT', '/api/specs/cas/s', { a: 3 }, { 'if-none-match': '*' })).status).toBe(412)
  })

  test('delete', async () => {
    await call(s.api, 'PUT', '/api/specs/del/s', { a: 1 })
    const d = await call(s.api, 'DELETE', '/api/specs/del/s')
    expect(d.body).toEqual({ deleted: 'del/s' })
    expect((await call(s.api, 'DELETE', '/api/specs/del/s')).status).toBe(404)
    expect((await call(s.api, 'GET', '/api/specs/del')).body.specs).toEqual([])
  })

  test('projects are separate namespaces', async () => {
    await call(s.api, 'PUT', '/api/specs/p1/same', { p: 1 })
    await call(s.api, 'PUT', '/api/specs/p2/same', { p: 2 })
    expect((await call(s.api, 'GET', '/api/specs/p1/same')).body).toEqual({ p: 1 })
    expect((await call(s.api, 'GET', '/api/specs/p2/same')).body).toEqual({ p: 2 })
  })

  test('?history=1, ?diff=v1,v2 and ?version=N read the past, as for contracts', async () => {
    await call(s.api, 'PUT', '/api/specs/past/doc', { a: 1 })
    const w2 = await call(s.api, 'PUT', '/api/specs/past/doc', { a: 2, b: true })
    const h = await call(s.api, 'GET', '/api/specs/past/doc?history=1&limit=1')
    expect(h.body).toEqual({ project: 'past', name: 'doc', versions: [{ version: 2, hash: w2.body.hash, updated_at: w2.body.updated_at }] })
    const d = await call(s.api, 'GET', '/api/specs/past/doc?diff=1,2')
    expect(d.body).toEqual({
      project: 'past',
      name: 'doc',
      v1: 1,
      v2: 2,
      diffs: [
        { operation: 'replace', path: '/a', old_value: 1, new_value: 2 },
        { operation: 'add', path: '/b', old_value: null, new_value: true },
      ],
    })
    const v1 = await call(s.api, 'GET', '/api/specs/past/doc?version=1')
    expect([v1.text, v1.headers.get('x-service-version')]).toEqual(['{"a":1}', '1'])
    expect((await call(s.api, 'GET', '/api/specs/past/doc?version=7')).body).toEqual({ error: 'version 7 not found', code: 404 })
    expect((await call(s.api, 'GET', '/api/specs/past/doc?diff=1')).body).toEqual({ error: 'invalid diff: expected diff=v1,v2', code: 400 })
    expect((await call(s.api, 'GET', '/api/specs/past/none?history=1')).status).toBe(404)
  })
})

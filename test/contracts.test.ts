import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { call, eventually, startServer, type TestServer } from './helpers'
import { apiContract, startFixture, user, type Fixture } from './contract-fixture'

let s: TestServer
let live: Fixture
beforeAll(async () => {
  ;[s, live] = await Promise.all([startServer(), startFixture()])
})
afterAll(async () => {
  live.stop()
  await s.cleanup()
})

const sha256 = (text: string) => new Bun.CryptoHasher('sha256').update(text).digest('hex')
const put = (path: string, body: unknown, headers: Record<string, string> = {}) =>
  call(s.api, 'PUT', `/api/contracts/${path}`, typeof body === 'string' ? body : JSON.stringify(body), headers)
const validate = (path: string, body: unknown) => call(s.api, 'POST', `/api/contracts/${path}/validate`, body)
const liveTest = (path: string, body: unknown) => call(s.api, 'POST', `/api/contracts/${path}/test`, body)

/** Asserts an error answer: status, the {error, code} body, and a message fragment. */
function expectError(r: { status: number; body: any }, status: number, fragment: string) {
  expect(r.status).toBe(status)
  expect(r.body.code).toBe(status)
  expect(typeof r.body.error).toBe('string')
  expect(r.body.error).toContain(fragment)
}

describe('writing and reading contracts', () => {
  test('PUT a good contract: stored as a versioned spec, read back raw with ETag', async () => {
    const text = JSON.stringify(apiContract(live.url))
    const w = await put('shop/api', text)
    expect(w.status).toBe(200)
    expect(w.body).toMatchObject({ project: 'shop', name: 'api', version: 1, hash: sha256(text) })
    const r = await fetch(`${s.api}/api/contracts/shop/api`)
    expect(r.status).toBe(200)
    expect(await r.text()).toBe(text)
    expect(r.headers.get('content-type')).toBe('application/json')
    expect(r.headers.get('etag')).toBe(`"${sha256(text)}"`)
    expect(r.headers.get('x-service-version')).toBe('1')
    const cached = await fetch(`${s.api}/api/contracts/shop/api`, { headers: { 'if-none-match': `"${sha256(text)}"` } })
    expect(cached.status).toBe(304)
    expect(await cached.text()).toBe('')
    // it is a spec: the specs API sees the same document
    const spec = await fetch(`${s.api}/api/specs/shop/api`)
    expect(await spec.text()).toBe(text)
  })

  test('a new version; history, version=N and diff', async () => {
    await put('hist/c', { kind: 'contract', version: '1', endpoints: { 'GET /a': { response: { type: 'string' } } } })
    const w2 = await put('hist/c', { kind: 'contract', version: '2', endpoints: { 'GET /a': { response: { type: 'integer' } } } })
    expect(w2.body.version).toBe(2)
    const h = await call(s.api, 'GET', '/api/contracts/hist/c?history=1')
    expect(h.status).toBe(200)
    expect(h.body.project).toBe('hist')
    expect(h.body.name).toBe('c')
    expect(h.body.versions.map((v: any) => v.version)).toEqual([2, 1])
    const v1 = await fetch(`${s.api}/api/contracts/hist/c?version=1`)
    expect((await v1.json()).version).toBe('1')
    expect(v1.headers.get('x-service-version')).toBe('1')
    const d = await call(s.api, 'GET', '/api/contracts/hist/c?diff=1,2')
    expect(d.body.diffs).toEqual(
      expect.arrayContaining([
        { operation: 'replace', path: '/version', old_value: '1', new_value: '2' },
        { operation: 'replace', path: '/endpoints/GET ~1a/response/type', old_value: 'string', new_value: 'integer' },
      ]),
    )
    expectError(await call(s.api, 'GET', '/api/contracts/hist/c?version=9'), 404, 'version 9 not found')
    expectError(await call(s.api, 'GET', '/api/contracts/hist/c?diff=1'), 400, 'invalid diff')
  })

  test('malformed contracts and uncompilable schemas are 400 naming the problem; nothing is stored', async () => {
    const cases: [unknown, string][] = [
      ['', 'request body is empty'],
      ['{"kind": "contract",', 'not valid JSON'],
      [[1, 2], 'a contract must be a JSON object'],
      [{ version: 1, endpoints: {} }, '/kind: kind must be "contract"'],
      [{ kind: 'contract', endpoints: {} }, '/version: version is required'],
      [{ kind: 'contract', version: 1 }, '/endpoints: endpoints is required'],
      [{ kind: 'contract', version: 1, endpoints: { 'FETCH /x': {} } }, 'must be "METHOD /path"'],
      [{ kind: 'contract', version: 1, base_url: 'localhost:80', endpoints: {} }, '/base_url'],
      [{ kind: 'contract', version: 1, endpoints: { 'GET /x': { response: { type: 'strng' } } } }, '/endpoints/GET ~1x/response/type: schema is invalid'],
      [{ kind: 'contract', version: 1, endpoints: { 'GET /x': { response: { $ref: '#/nowhere' } } } }, 'schema does not compile'],
      [{ kind: 'contract', version: 1, endpoints: { 'GET /x': { response: { type: 'object', requierd: ['a'] } } } }, 'unknown keyword: "requierd"'],
    ]
    for (const [body, fragment] of cases) {
      const r = await put('bad/c', typeof body === 'string' ? body : JSON.stringify(body))
      expectError(r, 400, fragment)
    }
    // every problem is listed, each with a JSON pointer into the document
    const r = await put('bad/c', { kind: 'contract', version: 1, endpoints: { 'GET /x': { response: { type: 'strng' }, extra: 1 } } })
    expect(r.body.violations).toEqual([
      { field: '/endpoints/GET ~1x/extra', message: 'unknown field "extra"' },
    ])
    expectError(await call(s.api, 'GET', '/api/contracts/bad/c'), 404, 'contract not found')
    expect((await call(s.api, 'GET', '/api/specs/bad')).body.specs).toEqual([])
    // a failed overwrite leaves the stored version alone
    const before = await call(s.api, 'GET', '/api/contracts/shop/api?history=1')
    expectError(await put('shop/api', { kind: 'contract', version: 1, endpoints: { 'GET /': { request: 7 } } }), 400, 'must be a JSON Schema')
    expect((await call(s.api, 'GET', '/api/contracts/shop/api?history=1')).body).toEqual(before.body)
  })

  test('a plain spec of the same name is not overwritten (409) and not readable as a contract (404)', async () => {
    await call(s.api, 'PUT', '/api/specs/mixed/notes', { hello: 'world' })
    expectError(await put('mixed/notes', apiContract()), 409, 'is not a contract')
    expect(await (await fetch(`${s.api}/api/specs/mixed/notes`)).json()).toEqual({ hello: 'world' })
    expectError(await call(s.api, 'GET', '/api/contracts/mixed/notes'), 404, 'contract not found')
    expectError(await call(s.api, 'DELETE', '/api/contracts/mixed/notes'), 404, 'contract not found')
    expect((await call(s.api, 'GET', '/api/specs/mixed/notes')).status).toBe(200)
  })

  test('compare-and-swap like specs: If-Match and if_version', async () => {
    const cur = await call(s.api, 'GET', '/api/contracts/shop/api?history=1')
    const r = await put('shop/api', apiContract(live.url), { 'if-match': '"deadbeef"' })
    expectError(r, 412, 'precondition failed')
    expect(r.body.current_version).toBe(cur.body.versions[0].version)
    expectError(await put('shop/api?if_version=0', apiContract(live.url)), 412, 'expected version 0')
    const ok = await put(`shop/api?if_version=${r.body.current_version}`, apiContract(live.url))
    expect(ok.body.version).toBe(r.body.current_version + 1)
  })

  test('list: contracts only, with their endpoints and whether they compile', async () => {
    await call(s.api, 'PUT', '/api/specs/listp/readme', { text: 'not a contract' })
    await put('listp/b', { kind: 'contract', version: 3, base_url: 'http://x.test', endpoints: { 'GET /a': {}, 'POST /b': {} } })
    // written through the specs API, so never checked: listed as not valid
    await call(s.api, 'PUT', '/api/specs/listp/a', { kind: 'contract', version: 1, endpoints: { 'GET /a': { response: { type: 'nope' } } } })
    const r = await call(s.api, 'GET', '/api/contracts/listp')
    expect(r.status).toBe(200)
    expect(r.body.project).toBe('listp')
    expect(r.body.contracts.map((c: any) => c.name)).toEqual(['a', 'b'])
    expect(r.body.contracts[1]).toMatchObject({ name: 'b', version: 1, contract_version: 3, base_url: 'http://x.test', endpoints: ['GET /a', 'POST /b'], valid: true })
    expect(r.body.contracts[0]).toMatchObject({ name: 'a', valid: false, base_url: null })
    expect((await call(s.api, 'GET', '/api/contracts/empty-project')).body).toEqual({ project: 'empty-project', contracts: [] })
    // a stored contract that does not compile cannot validate: 400 naming the problem
    const v = await validate('listp/a', { endpoint: 'GET /a', direction: 'response', payload: 1 })
    expectError(v, 400, 'stored contract listp/a: invalid contract: /endpoints/GET ~1a/response/type')
  })

  test('delete: 200, then 404; history goes too', async () => {
    await put('del/c', apiContract())
    const d = await call(s.api, 'DELETE', '/api/contracts/del/c')
    expect(d.status).toBe(200)
    expect(d.body).toEqual({ deleted: 'del/c' })
    expectError(await call(s.api, 'GET', '/api/contracts/del/c'), 404, 'contract not found')
    expectError(await call(s.api, 'DELETE', '/api/contracts/del/c'), 404, 'contract not found')
    const again = await put('del/c', apiContract())
    expect(again.body.version).toBe(1)
  })

  test('audit: contract.put and contract.delete with outcomes; spec.changed events', async () => {
    // entries are written just after each response: wait for the last of them
    const entries = await eventually(async () => {
      const all = (await call(s.api, 'GET', '/api/audit?limit=500')).body.filter((e: any) => e.action.startsWith('contract.'))
      return all.filter((e: any) => e.action === 'contract.delete').length >= 3 ? all : null
    })
    expect(entries).toContainEqual(expect.objectContaining({ action: 'contract.put', resource: 'contracts/shop/api', outcome: 'success', detail: 'version 1' }))
    expect(entries).toContainEqual(expect.objectContaining({ action: 'contract.put', resource: 'contracts/bad/c', outcome: 'error', detail: 'status 400' }))
    expect(entries).toContainEqual(expect.objectContaining({ action: 'contract.delete', resource: 'contracts/del/c', outcome: 'success' }))
    expect(entries).toContainEqual(expect.objectContaining({ action: 'contract.delete', resource: 'contracts/del/c', outcome: 'error' }))
    const events = (await call(s.api, 'GET', '/api/events/history?topic=spec.changed&last=1000')).body.map((e: any) => ({ ...e.data, source: e.source }))
    expect(events).toContainEqual({ project: 'del', name: 'c', version: 1, operation: 'put', source: 'specs' })
    expect(events).toContainEqual({ project: 'del', name: 'c', version: 0, operation: 'delete', source: 'specs' })
  })
})

describe('validate', () => {
  const ok = { name: 'ana', role: 'admin', address: { city: 'Oslo' }, tags: ['a', 'b'] }

  test('request: conforming and failing nested objects, arrays, enums, required, types', async () => {
    const good = await validate('shop/api', { endpoint: 'POST /users', direction: 'request', payload: ok })
    expect(good.status).toBe(200)
    expect(good.body).toEqual({ valid: true, violations: [] })
    const bad = await validate('shop/api', {
      endpoint: 'post /users',
      direction: 'request',
      payload: { role: 'root', address: { city: 1 }, tags: ['a', false], x: 1 },
    })
    expect(bad.body.valid).toBe(false)
    expect(bad.body.violations).toEqual(
      expect.arrayContaining([
        { field: '/name', message: 'is required' },
        { field: '/x', message: 'is not allowed by the schema' },
        { field: '/role', message: 'must be one of "admin", "dev"' },
        { field: '/address/city', message: 'must be string' },
        { field: '/tags/1', message: 'must be string' },
      ]),
    )
    expect(bad.body.violations).toHaveLength(5)
  })

  test('response: arrays of objects point at the element', async () => {
    const r = await validate('shop/api', { endpoint: 'GET /users', direction: 'response', payload: [ok, { name: 'b', role: 'dev', address: {} }, 'x'] })
    expect(r.body).toEqual({
      valid: false,
      violations: [
        { field: '/1/address/city', message: 'is required' },
        { field: '/2', message: 'must be object' },
      ],
    })
    const fine = await validate('shop/api', { endpoint: 'GET /users', direction: 'response', payload: [ok] })
    expect(fine.body).toEqual({ valid: true, violations: [] })
  })

  test('query: string parameters coerced; required and type errors', async () => {
    expect((await validate('shop/api', { endpoint: 'GET /search', direction: 'query', payload: { q: 'x', limit: '5' } })).body).toEqual({ valid: true, violations: [] })
    const r = await validate('shop/api', { endpoint: 'GET /search', direction: 'query', payload: { limit: 'lots' } })
    expect(r.body).toEqual({
      valid: false,
      violations: [
        { field: '/q', message: 'is required' },
        { field: '/limit', message: 'must be integer' },
      ],
    })
  })

  test('a direction without a schema accepts anything', async () => {
    expect((await validate('shop/api', { endpoint: 'GET /users', direction: 'request', payload: 123 })).body).toEqual({ valid: true, violations: [] })
  })

  test('errors: unknown endpoint, bad direction, missing payload, unknown contract', async () => {
    expectError(await validate('shop/api', { endpoint: 'GET /nope', direction: 'request', payload: {} }), 400, 'endpoint "GET /nope" is not in the contract')
    expectError(await validate('shop/api', { endpoint: 'GET /users', direction: 'sideways', payload: {} }), 400, 'invalid direction: expected request, response, query')
    expectError(await validate('shop/api', { endpoint: 'GET /users', direction: 'request' }), 400, 'payload is required')
    expectError(await validate('shop/api', { direction: 'request', payload: 1 }), 400, 'endpoint is required')
    expectError(await validate('shop/none', { endpoint: 'GET /users', direction: 'request', payload: {} }), 404, 'contract not found')
  })
})

describe('live test', () => {
  test('a conforming endpoint passes', async () => {
    const r = await liveTest('shop/api', { endpoint: 'GET /users' })
    expect(r.status).toBe(200)
    expect(r.body).toMatchObject({ endpoint: 'GET /users', url: `${live.url}/users`, pass: true, status: 200, violations: [], request_violations: [] })
    expect(typeof r.body.duration_ms).toBe('number')
    expect(live.received.map((x) => x.line)).toContain('GET /users')
  })

  test('a non-conforming endpoint fails with its violations', async () => {
    const r = await liveTest('shop/api', { endpoint: 'GET /broken' })
    expect(r.status).toBe(200)
    expect(r.body.pass).toBe(false)
    expect(r.body.status).toBe(200)
    expect(r.body.violations).toEqual(
      expect.arrayContaining([
        { field: '/name', message: 'must be string' },
        { field: '/role', message: 'must be one of "admin", "dev"' },
        { field: '/address/city', message: 'is required' },
        { field: '/extra', message: 'is not allowed by the schema' },
      ]),
    )
  })

  test('a service that is down: a failing result, not an error', async () => {
    const r = await liveTest('shop/api', { endpoint: 'GET /users', base_url: live.downUrl })
    expect(r.status).toBe(200)
    expect(r.body).toMatchObject({ pass: false, status: null, error: 'connection refused', url: `${live.downUrl}/users` })
    expect(r.body.violations).toEqual([{ field: '', message: 'request failed: connection refused' }])
  })

  test('wrong status, non-JSON body, timeout', async () => {
    const status = await liveTest('shop/api', { endpoint: 'GET /error' })
    expect(status.body).toMatchObject({ pass: false, status: 500, violations: [{ field: '', message: 'status 500, expected 2xx' }] })
    const text = await liveTest('shop/api', { endpoint: 'GET /text' })
    expect(text.body).toMatchObject({ pass: false, status: 200, violations: [{ field: '', message: 'response body is not JSON' }] })
    const slow = await liveTest('shop/api', { endpoint: 'GET /slow', timeout_ms: 200 })
    expect(slow.body).toMatchObject({ pass: false, status: null, error: 'timed out after 200 ms' })
  })

  test('test_data: JSON body for POST (status 201 expected), query for GET, path placeholders', async () => {
    const post = await liveTest('shop/api', { endpoint: 'POST /users', test_data: { name: 'cy', role: 'dev' } })
    expect(post.body).toMatchObject({ pass: true, status: 201, violations: [], request_violations: [] })
    expect(live.received.at(-1)).toEqual({ line: 'POST /users', body: '{"name":"cy","role":"dev"}' })
    // test data that breaks the request schema is reported apart; the server's 400 fails the test
    const bad = await liveTest('shop/api', { endpoint: 'POST /users', test_data: { role: 'dev' } })
    expect(bad.body.request_violations).toEqual([{ field: '/name', message: 'is required' }])
    expect(bad.body).toMatchObject({ pass: false, status: 400, violations: [{ field: '', message: 'status 400, expected 201' }] })
    const search = await liveTest('shop/api', { endpoint: 'GET /search', test_data: { q: 'a b', limit: 3 } })
    expect(search.body).toMatchObject({ pass: true, url: `${live.url}/search?q=a+b&limit=3` })
    const one = await liveTest('shop/api', { endpoint: 'GET /users/{id}', test_data: { id: 'ana' } })
    expect(one.body).toMatchObject({ pass: true, url: `${live.url}/users/ana` })
  })

  test('errors: missing placeholder value, no base_url, bad base_url, bad test_data, unknown endpoint/contract', async () => {
    const before = live.received.length
    expectError(await liveTest('shop/api', { endpoint: 'GET /users/{id}' }), 400, 'test_data.id is required')
    expectError(await liveTest('shop/api', { endpoint: 'GET /search', test_data: [1] }), 400, 'test_data must be an object')
    expectError(await liveTest('shop/api', { endpoint: 'GET /users', base_url: 'not a url' }), 400, 'invalid base_url')
    expectError(await liveTest('shop/api', { endpoint: 'GET /nope' }), 400, 'is not in the contract')
    expectError(await liveTest('shop/api', { endpoint: 'GET /users', timeout_ms: 0 }), 400, 'invalid timeout_ms: expected an integer from 1 to 60000')
    expectError(await liveTest('shop/api', { endpoint: 'GET /users', timeout_ms: 'soon' }), 400, 'timeout_ms')
    expectError(await liveTest('shop/missing', { endpoint: 'GET /users' }), 404, 'contract not found')
    await put('nobase/c', { kind: 'contract', version: 1, endpoints: { 'GET /users': { response: { type: 'array', items: user } } } })
    expectError(await liveTest('nobase/c', { endpoint: 'GET /users' }), 400, 'base_url is required')
    expect(live.received.length).toBe(before) // none of these reached the service
    // with base_url given in the call, it works
    const r = await liveTest('nobase/c', { endpoint: 'GET /users', base_url: `${live.url}/` })
    expect(r.body).toMatchObject({ pass: true, url: `${live.url}/users` })
  })
})

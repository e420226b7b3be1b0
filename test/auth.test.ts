import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { call, startServer, type TestServer } from './helpers'

const TOKEN = 's3cret-token'
let s: TestServer
beforeAll(async () => (s = await startServer({ args: ['--auth-token', TOKEN] })))
afterAll(() => s.cleanup())

const DENIED = { error: 'invalid or missing bearer token', code: 401 }
const auth = { authorization: `Bearer ${TOKEN}` }

describe('auth', () => {
  test('GET /health needs no token, on both ports', async () => {
    expect((await call(s.api, 'GET', '/health')).status).toBe(200)
    expect((await call(s.dashboard, 'GET', '/health')).status).toBe(200)
  })

  test('missing, wrong and malformed tokens give the exact 401 body', async () => {
    for (const headers of <Record<string, string>[]>[{}, { authorization: 'Bearer wrong' }, { authorization: TOKEN }, { authorization: 'Basic abc' }]) {
      const r = await call(s.api, 'GET', '/api/state', undefined, headers)
      expect(r.status).toBe(401)
      expect(r.text).toBe(JSON.stringify(DENIED))
    }
  })

  test('every route is covered: writes, unknown routes, openapi, POST /health', async () => {
    const put = await call(s.api, 'PUT', '/api/state/k', '1')
    expect(put.status).toBe(401)
    expect((await call(s.api, 'GET', '/api/state/k', undefined, auth)).status).toBe(404) // nothing was written
    expect((await call(s.api, 'GET', '/api/nope')).status).toBe(401)
    expect((await call(s.api, 'GET', '/openapi.json')).status).toBe(401)
    expect((await call(s.api, 'POST', '/health')).status).toBe(401)
    expect((await call(s.api, 'POST', '/mcp', {})).status).toBe(401)
  })

  test('every route in /openapi.json answers 401 without the token, except GET /health', async () => {
    const spec = (await call(s.api, 'GET', '/openapi.json', undefined, auth)).body
    const checked: string[] = []
    for (const [path, ops] of Object.entries<Record<string, unknown>>(spec.paths)) {
      for (const method of Object.keys(ops)) {
        if (['/health', '/livez', '/readyz'].includes(path) && method === 'get') continue
        const url = path.replace(/\{[^}]+\}/g, 'x')
        const verb = method.toUpperCase()
        const r = await call(s.api, verb, url, verb === 'GET' ? undefined : {})
        expect([method, url, r.status, r.text]).toEqual([method, url, 401, JSON.stringify(DENIED)])
        checked.push(`${method} ${path}`)
      }
    }
    expect(checked.length).toBeGreaterThan(50)
  })

  test('the right token passes', async () => {
    expect((await call(s.api, 'PUT', '/api/state/k', '1', auth)).status).toBe(200)
    expect((await call(s.api, 'GET', '/api/state/k', undefined, { authorization: `bearer ${TOKEN}` })).status).toBe(200)
    const audit = await call(s.api, 'GET', '/api/audit', undefined, auth)
    expect(audit.body.map((e: any) => [e.action, e.actor, e.outcome])).toEqual([['state.put', 'admin', 'success']])
  })

  test('dashboard proxy forwards the caller Authorization and is covered too', async () => {
    const denied = await call(s.dashboard, 'GET', '/api/state')
    expect(denied.status).toBe(401)
    expect(denied.body).toEqual(DENIED)
    const ok = await call(s.dashboard, 'GET', '/api/state', undefined, auth)
    expect(ok.status).toBe(200)
    expect(ok.body.map((e: any) => e.key)).toContain('k')
  })

  test('the token is never echoed', async () => {
    const r = await call(s.api, 'GET', '/api/audit', undefined, auth)
    expect(r.text).not.toContain(TOKEN)
    expect(s.output()).not.toContain(TOKEN)
  })
})

describe('no token configured', () => {
  let open: TestServer
  beforeAll(async () => (open = await startServer()))
  afterAll(() => open.cleanup())
  test('requests pass without authentication', async () => {
    expect((await call(open.api, 'GET', '/api/state')).status).toBe(200)
    expect((await call(open.api, 'GET', '/api/state', undefined, { authorization: 'Bearer anything' })).status).toBe(200)
  })
})

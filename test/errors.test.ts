import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { call, startServer, type TestServer } from './helpers'

let s: TestServer
beforeAll(async () => (s = await startServer()))
afterAll(() => s.cleanup())

describe('errors', () => {
  test('health answers status and a duration string', async () => {
    const r = await call(s.api, 'GET', '/health')
    expect(r.status).toBe(200)
    expect(r.body.status).toBe('ok')
    expect(r.body.uptime).toMatch(/^(\d+h)?(\d+m)?[\d.]+m?s$/)
  })

  test('unknown route is 404 {error, code}', async () => {
    const r = await call(s.api, 'GET', '/api/nothing/here')
    expect(r.status).toBe(404)
    expect(r.body).toEqual({ error: 'not found', code: 404 })
    expect(r.headers.get('content-type')).toContain('application/json')
  })

  test('wrong method is 405 with Allow', async () => {
    const r = await call(s.api, 'PATCH', '/api/state/x')
    expect(r.status).toBe(405)
    expect(r.body).toEqual({ error: 'method PATCH not allowed', code: 405 })
    expect(r.headers.get('allow')).toContain('PUT')
    expect((await call(s.api, 'DELETE', '/api/audit/summary')).status).toBe(405)
  })

  test('dashboard answers health, proxies the API and 404s as JSON', async () => {
    expect((await call(s.dashboard, 'GET', '/health')).body.status).toBe('ok')
    await call(s.api, 'PUT', '/api/state/via', '{"v":1}')
    const r = await fetch(`${s.dashboard}/api/state/via`)
    expect(r.status).toBe(200)
    expect(r.headers.get('etag')).toBeTruthy()
    expect(await r.json()).toEqual({ v: 1 })
    const w = await call(s.dashboard, 'PUT', '/api/state/via', '{"v":2}')
    expect(w.body.version).toBe(2)
    const missing = await call(s.dashboard, 'GET', '/nope')
    expect(missing.status).toBe(404)
    expect(missing.body).toEqual({ error: 'not found', code: 404 })
    expect((await fetch(`${s.dashboard}/`)).status).toBe(200)
  })

  test('openapi.json describes the routes', async () => {
    const r = await call(s.api, 'GET', '/openapi.json')
    expect(r.status).toBe(200)
    expect(r.body.openapi).toMatch(/^3\./)
    for (const path of ['/health', '/api/state', '/api/specs/{project}/{name}', '/api/audit', '/api/audit/summary'])
      expect(Object.keys(r.body.paths)).toContain(path)
  })

  test('a JSON route without a body names its first required field; malformed JSON says so', async () => {
    const events = async () => (await call(s.api, 'GET', '/api/events/history?last=1000')).body.length
    const before = await events()
    for (const [method, path, field] of [
      ['POST', '/api/events/publish', 'topic'],
      ['POST', '/api/instances/register', 'name'],
      ['POST', '/api/webhooks', 'id'],
      ['POST', '/api/llm/usage', 'provider'],
      ['POST', '/api/templates', 'id'],
      ['PUT', '/api/instances/x/intent', 'intent'],
    ]) {
      const empty = await call(s.api, method, path)
      expect([path, empty.status, empty.body]).toEqual([path, 400, { error: `${field} is required`, code: 400 }])
      const bad = await call(s.api, method, path, '{"topic":', { 'content-type': 'application/json' })
      expect([path, bad.status, bad.body]).toEqual([path, 400, { error: 'request body must be JSON: not valid JSON', code: 400 }])
    }
    expect(await events()).toBe(before) // nothing was published or registered
  })

  test('a NUL character in a path, a query or a JSON body is 400 on either backend, and nothing is written', async () => {
    const nul = { error: 'text must not contain NUL bytes', code: 400 }
    expect((await call(s.api, 'PUT', '/api/state/a%00b', { v: 1 })).body).toEqual(nul)
    expect((await call(s.api, 'GET', '/api/state/a%00b')).body).toEqual(nul)
    expect((await call(s.api, 'GET', '/api/events/history?topic=a%00')).body).toEqual(nul)
    expect((await call(s.api, 'POST', '/api/events/publish', { topic: 'nul.a\u0000b' })).body).toEqual(nul)
    expect((await call(s.api, 'POST', '/api/instances/register', { name: 'x', workspace: 'w\u0000' })).body).toEqual(nul)
    expect((await call(s.api, 'POST', '/api/events/publish', { topic: 'nul.data', data: { ['k\u0000']: 1 } })).body).toEqual(nul)
    expect((await call(s.api, 'GET', '/api/state')).body.map((d: { key: string }) => d.key)).not.toContain('a\u0000b')
    expect((await call(s.api, 'GET', '/api/events/history?topic=nul.*')).body).toEqual([])
    // A value is bytes: JSON text escaping a NUL (or any byte) is stored as sent.
    const put = await call(s.api, 'PUT', '/api/state/nul-value', '{"v":"a\\u0000b"}', { 'content-type': 'application/json' })
    expect(put.status).toBe(200)
    expect((await call(s.api, 'GET', '/api/state/nul-value')).body).toEqual({ v: 'a\u0000b' })
  })

  test('no stack traces in error bodies', async () => {
    const r = await call(s.api, 'GET', '/api/state/x?version=abc')
    expect(r.status).toBe(400)
    expect(r.text).not.toContain('at ')
  })
})

describe('configuration', () => {
  const run = async (args: string[], env: Record<string, string> = {}) => {
    const p = Bun.spawn([process.execPath, 'app.ts', ...args], {
      cwd: `${import.meta.dir}/..`,
      stdout: 'pipe',
      stderr: 'pipe',
      env: { ...process.env, ...env },
    })
    const code = await p.exited
    return { code, err: await new Response(p.stderr).text() }
  }

  test('bad values exit 2 with one clear line', async () => {
    for (const [args, env, needle] of [
      [['--stale-timeout', 'soon'], {}, '--stale-timeout'],
      [['--bind', 'nope'], {}, '--bind'],
      [['--event-retention', '-5'], {}, '--event-retention'],
      [[], { SERVICE_PRUNE_INTERVAL: '10 parsecs' }, 'SERVICE_PRUNE_INTERVAL'],
      [['--frobnicate', '1'], {}, 'unknown option --frobnicate'],
      [['--data-dir'], {}, 'needs a value'],
    ] as [string[], Record<string, string>, string][]) {
      const r = await run(args, env)
      expect(r.code).toBe(2)
      expect(r.err.trim().split('\n').length).toBe(1)
      expect(r.err).toContain(needle)
    }
  })

  test('flags beat env', async () => {
    const { loadConfig } = await import('../lib/config')
    const c = loadConfig(['--stale-timeout', '2s'], { SERVICE_STALE_TIMEOUT: '9m', SERVICE_LIVENESS_INTERVAL: '500ms' })
    expect(c.staleTimeoutMs).toBe(2000)
    expect(c.livenessIntervalMs).toBe(500)
    expect(c.bind).toEqual({ host: 'localhost', port: 9800 })
    expect(c.dashboardBind).toEqual({ host: 'localhost', port: 9847 })
    expect(loadConfig(['--dashboard-bind', ''], {}).dashboardBind).toBeNull()
    expect(c.eventRetention).toBe(1000)
    expect(c.complianceIntervalMs).toBe(300_000)
  })

  test('--allow-link-local-targets is a switch: alone it means true; =false and the env var take true/false', async () => {
    const { loadConfig, ConfigError } = await import('../lib/config')
    expect(loadConfig([], {}).allowLinkLocalTargets).toBe(false)
    expect(loadConfig(['--allow-link-local-targets', '--stale-timeout', '2s'], {}).allowLinkLocalTargets).toBe(true)
    expect(loadConfig(['--allow-link-local-targets=false'], { SERVICE_ALLOW_LINK_LOCAL_TARGETS: 'true' }).allowLinkLocalTargets).toBe(false)
    expect(loadConfig([], { SERVICE_ALLOW_LINK_LOCAL_TARGETS: '1' }).allowLinkLocalTargets).toBe(true)
    expect(() => loadConfig([], { SERVICE_ALLOW_LINK_LOCAL_TARGETS: 'maybe' })).toThrow(ConfigError)
  })
})

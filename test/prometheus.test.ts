// GET /metrics: Prometheus text format behind the API's auth, read with a strict
// parser of the exposition format; every family moves when the thing it counts happens.
// (parse-prometheus-text-format was tried: it drops the labels of labelled histograms.)
import { afterAll, describe, expect, test } from 'bun:test'
import { call, eventually, register, startServer } from './helpers'
import { onPostgres } from './pg'

type Sample = { name: string; labels: Record<string, string>; value: number }

/**
 * Text format 0.0.4: `# HELP name text`, `# TYPE name kind`, then `name{label="value",...} number`.
 * Throws on any line that is none of these, or a sample whose family has no HELP and TYPE before it.
 */
function parseExposition(text: string): Sample[] {
  const declared = new Map<string, string>()
  const samples: Sample[] = []
  for (const line of text.split('\n')) {
    if (line === '') continue
    const meta = /^# (HELP|TYPE) ([a-zA-Z_:][\w:]*) (.*)$/.exec(line)
    if (meta) {
      if (meta[1] === 'TYPE') declared.set(meta[2], meta[3])
      continue
    }
    const m = /^([a-zA-Z_:][\w:]*)(?:\{(.*)\})? (\S+)$/.exec(line)
    if (!m) throw new Error(`not a sample line: ${line}`)
    const family = m[1].replace(/_(bucket|sum|count)$/, '')
    if (!declared.has(m[1]) && !(declared.get(family) === 'histogram')) throw new Error(`sample of an undeclared family: ${line}`)
    const labels: Record<string, string> = {}
    for (const [, k, v] of (m[2] ?? '').matchAll(/(\w+)="((?:[^"\\]|\\.)*)",?/g)) labels[k] = v
    const value = m[3] === '+Inf' ? Infinity : Number(m[3])
    if (Number.isNaN(value)) throw new Error(`not a number: ${line}`)
    samples.push({ name: m[1], labels, value })
  }
  return samples
}

const TOKEN = 'prom-token'
const auth = { authorization: `Bearer ${TOKEN}` }
const s = await startServer({ args: ['--auth-token', TOKEN] })
const receiver = Bun.serve({ hostname: '127.0.0.1', port: 0, fetch: () => new Response('ok') })
afterAll(async () => {
  receiver.stop(true)
  await s.cleanup()
})
const api = (method: string, path: string, body?: unknown) => call(s.api, method, path, body, auth)

async function scrape() {
  const r = await fetch(`${s.api}/metrics`, { headers: auth })
  expect(r.status).toBe(200)
  expect(r.headers.get('content-type')).toStartWith('text/plain; version=0.0.4')
  const samples = parseExposition(await r.text())
  /** The value of the sample with exactly these labels; 0 when the family has no such series yet. */
  return (name: string, labels: Record<string, string> = {}) => {
    if (!samples.some((s) => s.name === name)) throw new Error(`no samples of ${name}`)
    const key = JSON.stringify(Object.entries(labels).sort())
    return samples.find((s) => s.name === name && JSON.stringify(Object.entries(s.labels).sort()) === key)?.value ?? 0
  }
}

describe('GET /metrics', () => {
  test('needs the bearer token like the API; the refusal is counted', async () => {
    const denied = await call(s.api, 'GET', '/metrics')
    expect([denied.status, denied.body]).toEqual([401, { error: 'invalid or missing bearer token', code: 401 }])
    const m = await scrape()
    expect(m('muster_http_requests_total', { method: 'GET', route: '/metrics', status: '401' })).toBe(1)
  })

  test('requests by route pattern and status, latency histograms, and every resource gauge move', async () => {
    const before = await scrape()
    expect(before('muster_state_keys')).toBe(0)

    expect((await api('PUT', '/api/state/proj/a', { n: 1 })).status).toBe(200)
    expect((await api('PUT', '/api/state/proj/a', { n: 2 })).status).toBe(200)
    expect((await api('PUT', '/api/state/other/b', { n: 3 })).status).toBe(200)
    expect((await api('GET', '/api/instances/nobody')).status).toBe(404)
    const agent = await register(s, 'a1', auth)
    expect((await api('POST', '/api/queues/builds/tasks', { title: 'compile' })).status).toBe(201)
    const asAgent = { ...auth, 'x-instance-token': agent.token }
    expect((await call(s.api, 'PUT', '/api/locks/deploy', {}, asAgent)).status).toBe(200)
    expect((await call(s.api, 'POST', '/api/reservations', { project: 'p', paths: ['src/**'] }, asAgent)).status).toBe(201)
    expect((await call(s.api, 'POST', '/api/reservations', { project: 'p', paths: ['docs/**'], exclusive: false }, asAgent)).status).toBe(201)
    expect((await api('POST', '/api/webhooks', { id: 'good', url: `http://127.0.0.1:${receiver.port}/in`, patterns: ['demo.*'] })).status).toBe(200)
    expect((await api('POST', '/api/webhooks', { id: 'bad', url: 'http://127.0.0.1:1/in', patterns: ['demo.*'] })).status).toBe(200)
    const ws = new WebSocket(`${s.api.replace(/^http/, 'ws')}/api/events/subscribe?token=${TOKEN}`)
    await new Promise((resolve, reject) => ((ws.onopen = resolve), (ws.onerror = reject)))
    expect((await api('POST', '/api/events/publish', { topic: 'demo.built', data: {} })).status).toBe(200)

    const after = (await eventually(async () => {
      const m = await scrape()
      // A labelled counter has no series before its first delivery: keep waiting until both outcomes have one.
      const delivered = (outcome: string) => { try { return m('muster_webhook_deliveries_total', { outcome }) } catch { return 0 } }
      return delivered('failure') >= 1 && delivered('success') >= 1 ? m : null
    }, 10_000))!
    ws.close()

    const put = { method: 'PUT', route: '/api/state/*', status: '200' }
    expect(after('muster_http_requests_total', put) - before('muster_http_requests_total', put)).toBe(3)
    expect(after('muster_http_request_duration_seconds_count', put) - before('muster_http_request_duration_seconds_count', put)).toBe(3)
    expect(after('muster_http_request_duration_seconds_bucket', { ...put, le: '+Inf' })).toBe(after('muster_http_request_duration_seconds_count', put))
    expect(after('muster_http_request_duration_seconds_sum', put)).toBeGreaterThan(0)
    expect(after('muster_http_requests_total', { method: 'GET', route: '/api/instances/:id', status: '404' })).toBe(1)
    expect(after('muster_state_keys')).toBe(2)
    expect(after('muster_instances', { status: 'active' })).toBe(1)
    expect(after('muster_instances', { status: 'stale' })).toBe(0)
    expect(after('muster_tasks', { queue: 'builds', status: 'ready' })).toBe(1)
    expect(after('muster_tasks', { queue: 'builds', status: 'done' })).toBe(0)
    expect(after('muster_locks_held')).toBe(1)
    expect(after('muster_lock_holders')).toBe(1)
    expect(after('muster_reservations', { kind: 'exclusive' })).toBe(1)
    expect(after('muster_reservations', { kind: 'shared' })).toBe(1)
    expect(after('muster_subscribers')).toBe(1)
    expect(after('muster_http_requests_total', { method: 'GET', route: '/api/events/subscribe', status: '101' })).toBe(1)
    expect(after('muster_webhook_deliveries_total', { outcome: 'success' })).toBe(1)
    // The bad target's retry comes about 2 s after its first attempt, and may land within the wait.
    expect(after('muster_webhook_deliveries_total', { outcome: 'failure' })).toBeGreaterThanOrEqual(1)
    // state.changed x3, instance registered, task added, demo.built: at least six events.
    expect(after('muster_events_published_total') - before('muster_events_published_total')).toBeGreaterThanOrEqual(6)
    expect(after('muster_event_last_id')).toBeGreaterThan(before('muster_event_last_id'))
    // SQLite's group commit only: PostgreSQL commits each unit in its own transaction.
    if (!onPostgres) expect(after('muster_sqlite_write_batch_size_count') - before('muster_sqlite_write_batch_size_count')).toBeGreaterThanOrEqual(6)
    expect(after('muster_sqlite_write_batch_size_sum') - before('muster_sqlite_write_batch_size_sum')).toBeGreaterThanOrEqual(after('muster_sqlite_write_batch_size_count') - before('muster_sqlite_write_batch_size_count'))
    expect(agent.id).toBeString()
  })

  test('labels are route patterns, never raw paths (bounded series)', async () => {
    for (let i = 0; i < 5; i++) await api('GET', `/api/state/many/k${i}`)
    const text = await (await fetch(`${s.api}/metrics`, { headers: auth })).text()
    expect(text).not.toContain('many/k')
    const m = await scrape()
    expect(m('muster_http_requests_total', { method: 'GET', route: '/api/state/*', status: '404' })).toBe(5)
  })

  test('build info carries package.json\'s version; the process_* basics are this server process\'s', async () => {
    const m = await scrape()
    const { version } = await Bun.file(new URL('../package.json', import.meta.url)).json()
    expect(m('muster_build_info', { version })).toBe(1)
    const { pid } = s.proc
    // The kernel's own figures for the server process, read here: within a margin of what it reports of itself.
    const status = await Bun.file(`/proc/${pid}/status`).text()
    const rss = Number(/^VmRSS:\s+(\d+) kB/m.exec(status)![1]) * 1024
    expect(m('process_resident_memory_bytes') / rss).toBeWithin(0.5, 2)
    expect(m('process_cpu_seconds_total')).toBeGreaterThan(0)
    const started = m('process_start_time_seconds')
    expect(started).toBeLessThanOrEqual(Date.now() / 1000)
    expect(started).toBeGreaterThan(Date.now() / 1000 - 600)
    const fds = (await Array.fromAsync(new Bun.Glob('*').scan({ cwd: `/proc/${pid}/fd`, onlyFiles: false }))).length
    expect(Math.abs(m('process_open_fds') - fds)).toBeLessThanOrEqual(5)
    expect(m('process_max_fds')).toBeGreaterThanOrEqual(m('process_open_fds'))
  })

  test('the event loop lag: a tick every 20 ms, and a server stopped for 300 ms shows one that late', async () => {
    const late = (m: Awaited<ReturnType<typeof scrape>>) => m('muster_event_loop_lag_seconds_count') - m('muster_event_loop_lag_seconds_bucket', { le: '0.1' })
    const before = await scrape()
    const ticks = before('muster_event_loop_lag_seconds_count')
    expect(ticks).toBeGreaterThan(0)
    s.proc.kill('SIGSTOP')
    await Bun.sleep(300)
    s.proc.kill('SIGCONT')
    await Bun.sleep(100)
    const after = await scrape()
    expect(late(after) - late(before)).toBeGreaterThanOrEqual(1)
    expect(after('muster_event_loop_lag_seconds_sum') - before('muster_event_loop_lag_seconds_sum')).toBeGreaterThanOrEqual(0.2)
    expect(after('muster_event_loop_lag_seconds_count')).toBeGreaterThan(ticks)
  })

  test('the JSON numbers stay at /api/metrics', async () => {
    const r = await api('GET', '/api/metrics')
    expect(r.body.state_keys).toBe(2)
  })
})

import pkg from '../package.json' with { type: 'json' }
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { AgentMetrics, hourBucket } from '../services/metrics'
import type { MetricRow } from '../store/metrics'
import { call, eventually, register, startServer, type Agent, type TestServer } from './helpers'
import { rawQuery } from './pg'

let s: TestServer
let A: Agent
let B: Agent

/** /api/metrics/agents lists instances by id. */
const byId = <T extends { instance_id: string }>(rows: T[]) => [...rows].sort((x, y) => (x.instance_id < y.instance_id ? -1 : 1))

/** Rows as stored, read behind the server's back (PostgreSQL's BIGINT values arrive as strings). */
async function storedRows(dataDir: string) {
  const rows = await rawQuery<any>(dataDir, 'SELECT instance_id, metric_name, metric_value, period FROM agent_metrics')
  return rows.map((r) => ({ ...r, metric_value: Number(r.metric_value) }))
}

const as = (who: { token: string }) => ({ 'x-instance-token': who.token })
const bucket = () => new Date().toISOString().slice(0, 13)

beforeAll(async () => {
  s = await startServer()
  A = await register(s, 'agent-a')
  B = await register(s, 'agent-b')
})
afterAll(() => s.cleanup())

describe('service metrics', () => {
  test('GET /api/metrics reports uptime, counts and binds', async () => {
    await call(s.api, 'PUT', '/api/state/m/one', '1')
    await call(s.api, 'PUT', '/api/state/m/two', '2')
    const r = await call(s.api, 'GET', '/api/metrics')
    expect(r.status).toBe(200)
    expect(Object.keys(r.body).sort()).toEqual(['api_bind', 'dashboard_bind', 'instances', 'last_event_id', 'state_keys', 'uptime', 'version'])
    expect(r.body.version).toBe(pkg.version)
    expect(r.body.uptime).toMatch(/^(\d+h)?(\d+m)?[\d.]+m?s$/)
    expect(r.body.state_keys).toBe(2)
    expect(r.body.instances).toBe(2)
    expect(r.body.last_event_id).toBeGreaterThanOrEqual(2) // each put publishes state.changed
    expect(r.body.api_bind).toBe(new URL(s.api).host)
    expect(r.body.dashboard_bind).toBe(new URL(s.dashboard).host)
  })
})

describe('agent metrics', () => {
  let period: string
  test('calls made with an instance token are counted per instance', async () => {
    period = bucket()
    await call(s.api, 'PUT', '/api/state/agent/k', '{"v":1}', as(A))
    await call(s.api, 'PUT', '/api/state/agent/k', '{"v":2}', as(A))
    await call(s.api, 'GET', '/api/state/agent/k', undefined, as(A))
    await call(s.api, 'GET', '/api/state/missing', undefined, as(A)) // a 404 is still a call
    await call(s.api, 'POST', '/api/state/agent/k?rollback=1', undefined, as(A))
    await call(s.api, 'GET', '/api/state', undefined, as(B))
    await call(s.api, 'POST', '/api/state/agent/k?rollback=99', undefined, as(B)) // failed rollback: a call, not a rollback
    await call(s.api, 'GET', '/api/state', undefined, { 'x-instance-token': 'not-a-token' })
    await call(s.api, 'GET', '/api/state')
    await call(s.api, 'GET', '/health', undefined, as(B)) // not an API call
    await call(s.api, 'POST', '/mcp', {}, as(B)) // counted as mcp_calls, not rest_calls

    const r = await call(s.api, 'GET', '/api/metrics/agents')
    expect(r.status).toBe(200)
    expect(r.body).toEqual(
      byId([
        { instance_id: A.id, metrics: { rest_calls: 5, rollbacks: 1 } },
        { instance_id: B.id, metrics: { mcp_calls: 1, rest_calls: 2 } },
      ]),
    )
  })

  test('per-instance rows by hourly period, with instance_id or by path', async () => {
    const viaQuery = await call(s.api, 'GET', `/api/metrics/agents?instance_id=${A.id}`)
    expect(viaQuery.status).toBe(200)
    const byName = (rows: any[]) => Object.fromEntries(rows.map((r) => [r.metric_name, r.metric_value]))
    for (const row of viaQuery.body) {
      expect(Object.keys(row).sort()).toEqual(['instance_id', 'metric_name', 'metric_value', 'period'])
      expect(row.instance_id).toBe(A.id)
      expect(row.period).toMatch(/^\d{4}-\d{2}-\d{2}T\d{2}$/)
    }
    if (bucket() === period) {
      expect(viaQuery.body).toEqual([
        { instance_id: A.id, metric_name: 'rest_calls', metric_value: 5, period },
        { instance_id: A.id, metric_name: 'rollbacks', metric_value: 1, period },
      ])
    }
    const viaPath = await call(s.api, 'GET', `/api/metrics/agents/${A.id}`)
    expect(viaPath.status).toBe(200)
    expect(viaPath.body).toEqual(viaQuery.body)
    expect(byName(viaPath.body)).toEqual({ rest_calls: 5, rollbacks: 1 })
    const none = await call(s.api, 'GET', '/api/metrics/agents/nobody')
    expect(none.status).toBe(200)
    expect(none.body).toEqual([])
  })

  test('period filters by prefix: year, day, hour', async () => {
    for (const prefix of [period.slice(0, 4), period.slice(0, 10), period]) {
      const rows = await call(s.api, 'GET', `/api/metrics/agents/${B.id}?period=${prefix}`)
      expect(rows.body.map((r: any) => [r.metric_name, r.metric_value])).toEqual([
        ['mcp_calls', 1],
        ['rest_calls', 2],
      ])
      const all = await call(s.api, 'GET', `/api/metrics/agents?period=${prefix}`)
      expect(all.body.map((x: any) => x.instance_id)).toEqual([A.id, B.id].sort())
    }
    expect((await call(s.api, 'GET', `/api/metrics/agents/${B.id}?period=1999-01`)).body).toEqual([])
    expect((await call(s.api, 'GET', `/api/metrics/agents?instance_id=${B.id}&period=1999`)).body).toEqual([])
    expect((await call(s.api, 'GET', '/api/metrics/agents?period=1999-01-01T00')).body).toEqual([])
  })

  test('an invalid period is 400', async () => {
    for (const bad of ['yesterday', '2025-x', '2025-01-01 10', '2025-01-01T10:00']) {
      const r = await call(s.api, 'GET', `/api/metrics/agents?period=${encodeURIComponent(bad)}`)
      expect(r.status).toBe(400)
      expect(r.body).toEqual({ error: 'invalid period: expected a prefix of YYYY-MM-DDTHH (UTC), e.g. 2025-06-01 or 2025-06-01T14', code: 400 })
    }
    expect((await call(s.api, 'GET', `/api/metrics/agents/${A.id}?period=x`)).status).toBe(400)
  })

  test('counts are flushed in the background, without any read', async () => {
    await call(s.api, 'GET', '/api/state', undefined, as(B))
    const total = async () => (await storedRows(s.dataDir)).filter((r) => r.instance_id === B.id && r.metric_name === 'rest_calls').reduce((n, r) => n + r.metric_value, 0)
    await eventually(async () => (await total()) === 3, 5000, 100)
  })

  test('counts still in memory are flushed on shutdown and survive a restart', async () => {
    await call(s.api, 'GET', '/api/state', undefined, as(A))
    await call(s.api, 'GET', '/api/state', undefined, as(A))
    await s.stop()
    const stored = (await storedRows(s.dataDir)).filter((r) => r.instance_id === A.id && r.metric_name === 'rest_calls')
    expect(stored.reduce((n, r) => n + r.metric_value, 0)).toBe(7)
    s = await startServer({ dataDir: s.dataDir })
    const r = await call(s.api, 'GET', '/api/metrics/agents')
    expect(r.body).toEqual(
      byId([
        { instance_id: A.id, metrics: { rest_calls: 7, rollbacks: 1 } },
        { instance_id: B.id, metrics: { mcp_calls: 1, rest_calls: 3 } },
      ]),
    )
  })
})

describe('the in-memory counter', () => {
  test('counts reach the sink only on flush, summed per instance, hour and name, in one batch', async () => {
    const batches: MetricRow[][] = []
    const m = new AgentMetrics(async (rows) => void batches.push(rows))
    m.count('a', 'rest_calls')
    m.count('a', 'rest_calls', 4)
    m.count('a', 'violations', 2)
    m.count('b', 'rest_calls')
    m.count('', 'rest_calls') // no instance: nothing to attribute
    expect(batches).toEqual([])
    await m.flush()
    const period = hourBucket()
    expect(batches).toEqual([
      [
        { instance_id: 'a', metric_name: 'rest_calls', period, metric_value: 5 },
        { instance_id: 'a', metric_name: 'violations', period, metric_value: 2 },
        { instance_id: 'b', metric_name: 'rest_calls', period, metric_value: 1 },
      ],
    ])
    await m.flush() // nothing pending: no empty batch
    expect(batches.length).toBe(1)
  })

  test('a failed flush keeps its counts for the next one', async () => {
    let fail = true
    const batches: MetricRow[][] = []
    const m = new AgentMetrics(async (rows) => {
      if (fail) throw new Error('database busy')
      batches.push(rows)
    })
    m.count('a', 'rollbacks')
    await expect(m.flush()).rejects.toThrow('database busy')
    m.count('a', 'rollbacks', 2)
    fail = false
    await m.flush()
    expect(batches.map((b) => b.map((r) => r.metric_value))).toEqual([[3]])
  })

  test('hourly buckets are UTC YYYY-MM-DDTHH', () => {
    expect(hourBucket(new Date('2025-06-01T23:59:59.999+02:00'))).toBe('2025-06-01T21')
  })
})

import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { rmSync } from 'node:fs'
import { openConfiguredStore } from '../store'
import { call, eventually, register, startServer, tempDir, type TestServer } from './helpers'
import { apiContract, startFixture, type Fixture } from './contract-fixture'
import { databaseFor, PG_BASE, rawQuery } from './pg'

// The scheduled job runs every second here; assertions on manual runs use the
// run ids POST /api/compliance/run returns, so scheduled runs never confuse them.
let s: TestServer
let live: Fixture
beforeAll(async () => {
  ;[s, live] = await Promise.all([startServer({ args: ['--compliance-interval', '1s'] }), startFixture()])
  const contract = (baseUrl: string | null, endpoints: Record<string, unknown>) =>
    JSON.stringify({ kind: 'contract', version: 1, ...(baseUrl ? { base_url: baseUrl } : {}), endpoints })
  const full = apiContract(live.url).endpoints
  await Promise.all([
    // passes: conforming GET endpoints; POST and placeholder endpoints are not called
    call(s.api, 'PUT', '/api/contracts/alpha/good', contract(live.url, { 'GET /users': full['GET /users'], 'POST /users': full['POST /users'], 'GET /users/{id}': full['GET /users/{id}'] })),
    // fails: /broken breaks its schema (GET /users is fine)
    call(s.api, 'PUT', '/api/contracts/alpha/bad', contract(live.url, { 'GET /users': full['GET /users'], 'GET /broken': full['GET /broken'] })),
    // fails: nothing listens there
    call(s.api, 'PUT', '/api/contracts/alpha/down', contract(live.downUrl, { 'GET /users': full['GET /users'] })),
    // passes: no base_url, so only its schemas are checked
    call(s.api, 'PUT', '/api/contracts/alpha/offline', contract(null, { 'GET /users': full['GET /users'] })),
    // not a contract: no run
    call(s.api, 'PUT', '/api/specs/alpha/notes', { text: 'hi' }),
    // fails: written through the specs API, its schema never compiled
    call(s.api, 'PUT', '/api/specs/beta/broken', contract(null, { 'GET /x': { response: { type: 'strng' } } })),
  ])
})
afterAll(async () => {
  live.stop()
  await s.cleanup()
})

/** Writes an instance row straight into the server's database: the only way to set up a stale one without waiting out a stale timeout. */
async function insertInstance(id: string, workspace: string, status = 'active') {
  const at = new Date().toISOString()
  await rawQuery(
    s.dataDir,
    'INSERT INTO instances (id, name, workspace, status, registered_at, last_seen, token_hash) VALUES (?, ?, ?, ?, ?, ?, ?)',
    id,
    `agent-${id}`,
    workspace,
    status,
    at,
    at,
    `hash-${id}`,
  )
}

/** compliance.violation events as the server stored them. */
async function violationEvents(): Promise<{ data: any; source: string }[]> {
  const r = await call(s.api, 'GET', '/api/events/history?topic=compliance.violation&after_id=0&last=1000')
  return r.body.map((e: any) => ({ data: e.data, source: e.source }))
}

const run = () => call(s.api, 'POST', '/api/compliance/run')
const runsOf = (runs: any[], instance: string) =>
  Object.fromEntries(runs.filter((r) => r.instance_id === instance).map((r) => [`${r.project}/${r.contract}`, r]))

describe('compliance run', () => {
  let runs: any[]

  beforeAll(async () => {
    await insertInstance('i-name', 'alpha')
    await insertInstance('i-path', '/home/dev/alpha/')
    await insertInstance('i-stale', 'alpha', 'stale')
    await insertInstance('i-other', 'no-such-project')
    await insertInstance('i-beta', 'beta')
    await insertInstance('i-none', '')
    const r = await run()
    expect(r.status).toBe(200)
    expect(r.body.checked).toBe(true)
    runs = r.body.runs
    expect(r.body.count).toBe(runs.length)
  })

  test('one run per (active instance, contract) of the project its workspace names', () => {
    expect(Object.keys(runsOf(runs, 'i-name')).sort()).toEqual(['alpha/bad', 'alpha/down', 'alpha/good', 'alpha/offline'])
    // a workspace path names the project of its last segment
    expect(Object.keys(runsOf(runs, 'i-path')).sort()).toEqual(['alpha/bad', 'alpha/down', 'alpha/good', 'alpha/offline'])
    expect(Object.keys(runsOf(runs, 'i-beta'))).toEqual(['beta/broken'])
    for (const skipped of ['i-stale', 'i-other', 'i-none']) expect(runsOf(runs, skipped)).toEqual({})
    expect(runs).toHaveLength(9)
  })

  test('run shape, passing and failing contracts with their violations', () => {
    const mine = runsOf(runs, 'i-name')
    for (const r of runs) {
      expect(Object.keys(r).sort()).toEqual(['contract', 'id', 'instance_id', 'pass', 'project', 'run_at', 'violations'])
      expect(Number.isInteger(r.id)).toBe(true)
      expect(new Date(r.run_at).toISOString()).toBe(r.run_at)
    }
    expect(mine['alpha/good']).toMatchObject({ pass: true, violations: [] })
    expect(mine['alpha/offline']).toMatchObject({ pass: true, violations: [] })
    expect(mine['alpha/bad'].pass).toBe(false)
    expect(mine['alpha/bad'].violations).toEqual(
      expect.arrayContaining([
        { endpoint: 'GET /broken', field: '/name', message: 'must be string' },
        { endpoint: 'GET /broken', field: '/role', message: 'must be one of "admin", "dev"' },
        { endpoint: 'GET /broken', field: '/address/city', message: 'is required' },
        { endpoint: 'GET /broken', field: '/extra', message: 'is not allowed by the schema' },
      ]),
    )
    expect(mine['alpha/bad'].violations.every((v: any) => v.endpoint === 'GET /broken')).toBe(true)
    expect(mine['alpha/down']).toMatchObject({
      pass: false,
      violations: [{ endpoint: 'GET /users', field: '', message: 'request failed: connection refused' }],
    })
    const beta = runsOf(runs, 'i-beta')['beta/broken']
    expect(beta.pass).toBe(false)
    expect(beta.violations).toEqual([
      { field: '/endpoints/GET ~1x/response/type', message: 'schema is invalid: must be equal to one of the allowed values' },
    ])
  })

  test('only safe methods reach the live service', () => {
    const lines = live.received.map((r) => r.line)
    expect(lines).toContain('GET /users')
    expect(lines).toContain('GET /broken')
    expect(lines.filter((l) => !l.startsWith('GET '))).toEqual([])
  })

  test('each failing run publishes compliance.violation (source compliance); passing runs do not', async () => {
    const events = await violationEvents()
    const failing = runs.filter((r) => !r.pass)
    expect(failing).toHaveLength(5)
    for (const r of failing) {
      const mine = events.filter((e) => e.data.run_id === r.id)
      expect(mine).toEqual([
        {
          source: 'compliance',
          data: { run_id: r.id, instance_id: r.instance_id, project: r.project, contract: r.contract, violations: r.violations },
        },
      ])
    }
    for (const r of runs.filter((r) => r.pass)) expect(events.some((e) => e.data.run_id === r.id)).toBe(false)
  })

  test('history: by instance, newest first, limit, default 50', async () => {
    const h = await call(s.api, 'GET', '/api/compliance/history?instance_id=i-name')
    expect(h.status).toBe(200)
    expect(h.body.every((r: any) => r.instance_id === 'i-name')).toBe(true)
    const ids = h.body.map((r: any) => r.id)
    expect(ids).toEqual([...ids].sort((a: number, b: number) => b - a))
    for (const r of Object.values(runsOf(runs, 'i-name'))) expect(h.body).toContainEqual(r)
    const two = await call(s.api, 'GET', '/api/compliance/history?instance_id=i-name&limit=2')
    expect(two.body).toHaveLength(2)
    expect(two.body[0].id).toBeGreaterThan(two.body[1].id)
    expect(two.body[1].id).toBeGreaterThanOrEqual(h.body[1].id) // the job may have added newer ones meanwhile
    expect((await call(s.api, 'GET', '/api/compliance/history?instance_id=nobody')).body).toEqual([])
    for (let i = 0; i < 6; i++) await run() // 54+ runs in all
    const all = await call(s.api, 'GET', '/api/compliance/history')
    expect(all.body).toHaveLength(50)
    expect(new Set(all.body.map((r: any) => r.instance_id)).size).toBeGreaterThan(1)
  })

  test('history: a bad limit is 400', async () => {
    for (const limit of ['0', 'x', '-1']) {
      const r = await call(s.api, 'GET', `/api/compliance/history?limit=${limit}`)
      expect(r.status).toBe(400)
      expect(r.body).toEqual({ error: 'invalid limit: expected an integer >= 1', code: 400 })
    }
  })

  test('a manual run is audited as compliance.run', async () => {
    // entries are written just after each response: wait for the last one
    const a = (await eventually(async () => {
      const r = await call(s.api, 'GET', '/api/audit?action=compliance.run')
      return r.body.length >= 7 ? r : null
    }))!
    expect(a.body).toHaveLength(7)
    expect(a.body[0]).toMatchObject({ action: 'compliance.run', resource: 'compliance/run', outcome: 'success' })
    expect(a.body[0].detail).toMatch(/^\d+ runs, \d+ failing$/)
  })
})

test('the scheduled job checks instances on its own every --compliance-interval', async () => {
  await call(s.api, 'PUT', '/api/contracts/gamma/api', { kind: 'contract', version: 1, base_url: live.url, endpoints: { 'GET /broken': apiContract().endpoints['GET /broken'] } })
  await insertInstance('i-sched', 'gamma')
  const runs = await eventually(async () => {
    const h = await call(s.api, 'GET', '/api/compliance/history?instance_id=i-sched')
    return h.body.length ? h.body : null
  }, 5000)
  expect(runs[0]).toMatchObject({ instance_id: 'i-sched', project: 'gamma', contract: 'api', pass: false })
  // The run is stored before its event is published: wait for the event.
  await eventually(async () => (await violationEvents()).some((e) => e.data.run_id === runs[0].id && e.source === 'compliance'))
  expect(s.output()).not.toContain('job compliance failed')
})

test('an instance registered through the API is checked against its workspace project', async () => {
  const reg = await register(s, { name: 'registered', workspace: 'alpha' })
  const r = await run()
  const mine = runsOf(r.body.runs, reg.body.id)
  expect(Object.keys(mine).sort()).toEqual(['alpha/bad', 'alpha/down', 'alpha/good', 'alpha/offline'])
  expect(mine['alpha/good'].pass).toBe(true)
  expect(mine['alpha/bad'].pass).toBe(false)
  // The 1 s schedule may add runs of its own meanwhile: the history holds this run's, and only this instance's.
  const h = await call(s.api, 'GET', `/api/compliance/history?instance_id=${reg.body.id}`)
  expect(h.body.map((x: any) => x.id)).toEqual(expect.arrayContaining(Object.values(mine).map((x: any) => x.id)))
  expect(h.body.every((x: any) => x.instance_id === reg.body.id)).toBe(true)
})

test('pruning keeps the newest runs of each (instance, contract) and nothing else goes', async () => {
  const dir = tempDir('muster-compliance-prune-')
  const store = await openConfiguredStore(PG_BASE ? await databaseFor(dir) : '', dir)
  try {
    const record = (instance_id: string, contract: string) =>
      store.write(async (tx) => await tx.compliance.record({ instance_id, project: 'p', contract, violations: [] }))
    for (let i = 0; i < 7; i++) await record('a', 'api')
    for (let i = 0; i < 2; i++) await record('a', 'other')
    for (let i = 0; i < 4; i++) await record('b', 'api')
    const before = await store.compliance.history({ limit: 100 })
    expect(await store.write(async (tx) => await tx.compliance.prune(3))).toBe(4 + 1)
    const after = await store.compliance.history({ limit: 100 })
    const kept = (instance: string, contract: string) =>
      after.filter((r) => r.instance_id === instance && r.contract === contract).map((r) => r.id)
    const newest = (instance: string, contract: string, n: number) =>
      before.filter((r) => r.instance_id === instance && r.contract === contract).slice(0, n).map((r) => r.id)
    expect(kept('a', 'api')).toEqual(newest('a', 'api', 3))
    expect(kept('a', 'other')).toEqual(newest('a', 'other', 2))
    expect(kept('b', 'api')).toEqual(newest('b', 'api', 3))
    expect(await store.write(async (tx) => await tx.compliance.prune(3))).toBe(0)
  } finally {
    await store.close()
    rmSync(dir, { recursive: true, force: true })
  }
})

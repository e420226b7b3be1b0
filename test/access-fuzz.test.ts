// A viewer token changes nothing (access.md): every route of /openapi.json, every method
// it serves, called with a viewer token and bodies, parameters and ids that would work
// for a writer, leaves every table's rows as they were (its own last_used_at apart).
import { afterAll, beforeAll, expect, test } from 'bun:test'
import { call, register, startServer, type TestServer } from './helpers'
import { PG_BASE, rawQuery } from './pg'

const ADMIN_TOKEN = 'fuzz-admin'
const admin = { authorization: `Bearer ${ADMIN_TOKEN}` }

let s: TestServer
beforeAll(async () => (s = await startServer({ args: ['--auth-token', ADMIN_TOKEN] })))
afterAll(() => s.cleanup())

const tableNames = async (): Promise<string[]> =>
  PG_BASE
    ? (await rawQuery<{ name: string }>(s.dataDir, "SELECT tablename AS name FROM pg_tables WHERE schemaname = 'public' ORDER BY 1")).map((r) => r.name)
    : (await rawQuery<{ name: string }>(s.dataDir, "SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%' AND name NOT LIKE '%fts%' ORDER BY 1")).map((r) => r.name)

/** Every table's rows, each as sorted JSON; last_used_at of tokens left out (a viewer's one change). */
async function rows(): Promise<Record<string, string[]>> {
  const out: Record<string, string[]> = {}
  for (const table of await tableNames()) {
    const rows = await rawQuery<Record<string, unknown>>(s.dataDir, `SELECT * FROM ${table}`)
    out[table] = rows
      .map((r) => {
        if (table === 'tokens') delete r.last_used_at
        return JSON.stringify(r, (_, v) => (typeof v === 'bigint' ? String(v) : v instanceof Uint8Array ? Buffer.from(v).toString('hex') : v))
      })
      .sort()
  }
  return out
}

/**
 * The rows once the server's own deferred writes settled: agent metrics flush every 2 s and
 * the webhook dispatcher moves its cursor past new events, so it waits for two equal reads
 * a metrics flush apart.
 */
async function snapshot(): Promise<Record<string, string[]>> {
  let last = JSON.stringify(await rows())
  for (;;) {
    await Bun.sleep(2500)
    const next = JSON.stringify(await rows())
    if (next === last) return JSON.parse(next)
    last = next
  }
}

test('every route, called with a viewer token, changes nothing', { timeout: 90_000 }, async () => {
  // Something of everything, so a call that slipped through would have something to change.
  const ada = await register(s, 'ada', admin)
  const h = { ...admin, ...ada.h }
  await call(s.api, 'PUT', '/api/state/k', { a: 1 }, admin)
  await call(s.api, 'PUT', '/api/specs/p/s', { a: 1 }, admin)
  await call(s.api, 'PUT', '/api/locks/l', {}, h)
  const reservation = (await call(s.api, 'POST', '/api/reservations', { project: 'p', paths: ['src/**'] }, h)).body
  const task = (await call(s.api, 'POST', '/api/queues/q/tasks', { title: 'one', payload: { n: 1 } }, admin)).body
  await call(s.api, 'POST', '/api/queues/q/tasks', { title: 'two', payload: { n: 2 } }, admin)
  const webhook = (await call(s.api, 'POST', '/api/webhooks', { id: 'fuzz', url: 'http://127.0.0.1:9/h', patterns: ['nothing.*'] }, admin)).body
  const template = (await call(s.api, 'POST', '/api/templates', { id: 'fuzz-t', name: 'T' }, admin)).body
  await call(s.api, 'POST', '/api/rules/propose', { project: 'p', rule_id: 'r', pattern: 'x', message: 'm' }, admin)
  const message = (await call(s.api, 'POST', '/api/messages', { to: ['ada'], subject: 's', body: 'b', ack_required: true }, admin)).body
  const viewer = (await call(s.api, 'POST', '/api/tokens', { name: 'eye', role: 'viewer' }, admin)).body
  const other = (await call(s.api, 'POST', '/api/tokens', { name: 'other', role: 'agent' }, admin)).body
  for (const [what, r] of Object.entries({ reservation, task, webhook, template, message, viewer, other })) expect([what, r?.id !== undefined, r]).toEqual([what, true, r])

  const ids: Record<string, string> = {
    key: 'k', '*': 'k', project: 'p', name: 's', ruleID: 'r', queue: 'q', thread: String(message.thread ?? message.id),
    agent: 'claude-code', id: '', delivery: '1',
  }
  const idFor = (path: string) =>
    path.includes('/tokens/') ? other.id
    : path.includes('/instances/') ? ada.id
    : path.includes('/reservations/') ? reservation.id
    : path.includes('/tasks/') ? String(task.id)
    : path.includes('/webhooks/') ? String(webhook.id)
    : path.includes('/templates/') ? String(template.id)
    : path.includes('/messages/') ? String(message.id)
    : path.includes('/metrics/agents/') ? ada.id
    : 'x'
  const bodies = [
    {},
    { value: 1, name: 'n', role: 'agent', topic: 't', payload: {}, intent: 'i', capabilities: ['c'], project: 'p', paths: ['a'], to: ['ada'], subject: 's', body: 'b', url: 'http://127.0.0.1:9/x', patterns: ['*'], content: 'x', pattern: 'x', message: 'm', rule_id: 'r', provider: 'p', model: 'm', input_tokens: 1, output_tokens: 1, ttl_ms: 60000 },
  ]

  const spec = (await call(s.api, 'GET', '/openapi.json', undefined, admin)).body
  const before = await snapshot()
  const viewerHeaders = { authorization: `Bearer ${viewer.token}` }
  let calls = 0
  const statuses: Record<number, number> = {}
  for (const [template_, ops] of Object.entries<Record<string, unknown>>(spec.paths)) {
    const path = template_.replace(/\{([^}]+)\}/g, (_, p: string) => encodeURIComponent(ids[p] || idFor(template_)))
    for (const method of Object.keys(ops)) {
      for (const query of ['', '?force=1']) {
        for (const body of method === 'get' || method === 'delete' ? [undefined] : bodies) {
          for (const extra of [{}, ada.h]) {
            const r = await call(s.api, method.toUpperCase(), path + query, body, { ...viewerHeaders, ...extra })
            calls++
            statuses[r.status] = (statuses[r.status] ?? 0) + 1
            // A write refused is 403 read-only token; a read or a computation answers as it may (never 401, never 5xx).
            expect([method, path, r.status < 500 && r.status !== 401]).toEqual([method, path, true])
          }
        }
      }
    }
  }
  expect(calls).toBeGreaterThan(300)
  // Most calls were refused as writes; the reads and computations were answered.
  expect(statuses[403]).toBeGreaterThan(200)
  expect(statuses[200]).toBeGreaterThan(30)
  // Writes of the server's own in the meantime (a heartbeat the liveness check makes, a
  // metrics flush) would differ here too: none happen without a call.
  expect(await snapshot()).toEqual(before)
})

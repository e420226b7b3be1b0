// Requests held past the servers' 30 s idle timeout (http/holds.ts): an inbox read with
// wait=35s, a task claim with wait_ms, a PermissionRequest waiting for a person and an
// inbox read through the dashboard's port all get their answers; a stalled upload and an
// idle keep-alive connection are still closed. One run of ~36 s, every case at once.
import { afterAll, beforeAll, expect, test } from 'bun:test'
import { connect, type Socket } from 'node:net'
import { call, register, startServer, type TestServer } from './helpers'

let server: TestServer
beforeAll(async () => {
  server = await startServer()
})
afterAll(() => server.cleanup())

const HOLD_S = 35

/** A raw connection to `base`: when it was closed, in seconds after `start`, and what it received. */
function raw(base: string, first: string) {
  const { hostname, port } = new URL(base)
  const socket: Socket = connect(Number(port), hostname)
  const start = Date.now()
  let received = ''
  socket.on('data', (d) => (received += d.toString()))
  const closed = new Promise<number>((resolve) => socket.on('close', () => resolve((Date.now() - start) / 1000)))
  socket.on('error', () => {})
  socket.write(first)
  return { closed, received: () => received, socket }
}

test(`requests held ${HOLD_S} s are answered; a stalled upload and an idle connection are closed`, async () => {
  const ada = await register(server, 'ada')
  const h = { 'x-instance-token': ada.token }
  const started = Date.now()
  const secs = () => (Date.now() - started) / 1000
  const timed = async <T>(p: Promise<T>) => ({ r: await p, at: secs() })
  const inbox = timed(call(server.api, 'GET', `/api/inbox?wait=${HOLD_S}s`, undefined, h))
  const viaDashboard = timed(call(server.dashboard, 'GET', `/api/inbox?wait=${HOLD_S}s`, undefined, h))
  const claim = timed(call(server.api, 'POST', '/api/queues/held/claim', { wait_ms: HOLD_S * 1000 }, h))
  const permission = timed(
    call(
      server.api,
      'POST',
      '/api/hooks/claude-code',
      { session_id: 'held-1', hook_event_name: 'PermissionRequest', cwd: '/repo', tool_name: 'Bash', tool_input: { command: 'make deploy' } },
      { 'x-muster-agent': 'bob', 'x-muster-approval-wait': `${HOLD_S}s` },
    ),
  )
  // Headers of a 100-byte body, then nothing: the upload stalls.
  const stalled = raw(server.api, `POST /api/queues/held/tasks HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 100\r\n\r\n{"title":`)
  // A keep-alive connection that asks one quick question, then stays idle.
  const idle = raw(server.api, 'GET /livez HTTP/1.1\r\nHost: x\r\n\r\n')

  for (const [what, p] of [
    ['inbox', inbox],
    ['inbox via the dashboard', viaDashboard],
  ] as const) {
    const { r, at } = await p
    expect({ what, status: r.status, messages: r.body?.messages }).toEqual({ what, status: 200, messages: [] })
    expect(at).toBeGreaterThanOrEqual(HOLD_S - 1)
  }
  const c = await claim
  expect(c.r.status).toBe(204)
  expect(c.at).toBeGreaterThanOrEqual(HOLD_S - 1)
  // Nobody decided: the wait ran out, and the agent asks its user as it would without Muster.
  const p = await permission
  expect({ status: p.r.status, body: p.r.body }).toEqual({ status: 200, body: {} })
  expect(p.at).toBeGreaterThanOrEqual(HOLD_S - 1)

  // Both raw connections were closed by the idle timeout (30 s), not left open past the holds.
  const stalledAt = await stalled.closed
  expect(stalledAt).toBeGreaterThan(25)
  expect(stalledAt).toBeLessThan(HOLD_S + 5)
  const idleAt = await idle.closed
  expect(idle.received()).toStartWith('HTTP/1.1 200')
  expect(idleAt).toBeGreaterThan(25)
  expect(idleAt).toBeLessThan(HOLD_S + 5)
  // The stalled task was never created.
  expect((await call(server.api, 'GET', '/api/queues/held/tasks', undefined, h)).body).toEqual([])
}, 60_000)

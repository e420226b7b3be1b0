// Approvals across two replicas on one PostgreSQL database: a PermissionRequest held on B
// is answered by a decision made on A (the approval.decided event reaches B through its
// feed), and an agent that hangs up on B withdraws its request for A too.
// Runs in the suite's PostgreSQL run only (test/run.ts).
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { call, eventually, startServer, tempDir, type TestServer } from './helpers'
import { PG_BASE, databaseFor } from './pg'

let a: TestServer
let b: TestServer

const ask = (server: TestServer, sessionId: string, command: string, signal?: AbortSignal) =>
  fetch(`${server.api}/api/hooks/claude-code`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', 'x-muster-agent': 'held-on-b' },
    body: JSON.stringify({ session_id: sessionId, hook_event_name: 'PermissionRequest', cwd: '/tmp/shop', tool_name: 'Bash', tool_input: { command } }),
    signal,
  }).then((r) => r.json())

const pendingOn = (server: TestServer, sessionId: string) =>
  eventually(async () => ((await call(server.api, 'GET', '/api/approvals?status=pending')).body as any[]).find((x) => x.session_id === sessionId))

describe.skipIf(!PG_BASE)('approvals on two replicas', () => {
  beforeAll(async () => {
    const url = await databaseFor(tempDir('muster-approvals-replicas-'))
    a = await startServer({ args: ['--database', url] })
    b = await startServer({ args: ['--database', url] })
  })
  afterAll(async () => {
    await a?.cleanup()
    await b?.cleanup()
  })

  test('a decision made on A answers the hook held on B at once', async () => {
    const sessionId = crypto.randomUUID()
    const answer = ask(b, sessionId, 'npm publish')
    const pending = await pendingOn(a, sessionId)
    const t0 = performance.now()
    const r = await call(a.api, 'POST', `/api/approvals/${pending.id}/decision`, { behavior: 'deny', message: 'not today' })
    expect(r.status).toBe(200)
    const body = await answer
    const ms = performance.now() - t0
    expect(body.hookSpecificOutput.decision.behavior).toBe('deny')
    expect(body.hookSpecificOutput.decision.message).toContain('not today')
    // woken by the event, not by a poll or the 5-minute wait
    expect(ms).toBeLessThan(2000)
    // and the other way round, several at once
    const ids = [crypto.randomUUID(), crypto.randomUUID()]
    const answers = ids.map((id) => ask(a, id, 'make deploy'))
    const both = await Promise.all(ids.map((id) => pendingOn(b, id)))
    const many = await call(b.api, 'POST', '/api/approvals/decision', { ids: both.map((x) => x.id), behavior: 'allow' })
    expect(many.body.decided.length).toBe(2)
    for (const x of await Promise.all(answers)) expect(x.hookSpecificOutput.decision).toEqual({ behavior: 'allow' })
  })

  test('an agent that hangs up on B withdraws its request; A cannot decide it then', async () => {
    const sessionId = crypto.randomUUID()
    const gone = new AbortController()
    const answer = ask(b, sessionId, 'rm -rf dist', gone.signal).catch(() => 'aborted')
    const pending = await pendingOn(a, sessionId)
    gone.abort()
    expect(await answer).toBe('aborted')
    await eventually(async () => (await call(a.api, 'GET', `/api/approvals/${pending.id}`)).body.status === 'withdrawn')
    const r = await call(a.api, 'POST', `/api/approvals/${pending.id}/decision`, { behavior: 'allow' })
    expect([r.status, r.body.error]).toEqual([409, expect.stringContaining('withdrawn')])
  })
})

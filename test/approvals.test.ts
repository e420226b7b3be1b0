// Approvals over real HTTP (docs/api/approvals.md): a PermissionRequest hook event is held
// until a person decides, a rule decides at once (deny wins), the wait header bounds it,
// an agent that hangs up withdraws it; decisions, batches, "remember", needs input,
// roles, events and audit. On both backends (the suite's PostgreSQL run).
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { call, eventually, startServer, tempDir, type TestServer } from './helpers'

const ADMIN = 'approvals-admin-token'
const admin = { authorization: `Bearer ${ADMIN}` }
let s: TestServer
let agent: Record<string, string>
let viewer: Record<string, string>

beforeAll(async () => {
  s = await startServer({ args: ['--auth-token', ADMIN] })
  const token = async (name: string, role: string) => ({ authorization: `Bearer ${(await call(s.api, 'POST', '/api/tokens', { name, role }, admin)).body.token}` })
  agent = await token('ada-agent', 'agent')
  viewer = await token('vic-viewer', 'viewer')
})
afterAll(() => s.cleanup())

let n = 0
/** A Claude Code (or Codex) session sending hook events as the agent token. */
function session(kind: 'claude-code' | 'codex' = 'claude-code', name = `agent${++n}`) {
  const id = `${n}-${crypto.randomUUID()}`
  const post = (event: Record<string, unknown>, headers: Record<string, string> = {}, signal?: AbortSignal) =>
    fetch(`${s.api}/api/hooks/${kind}`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'x-muster-agent': name, 'x-muster-project': 'shop', ...agent, ...headers },
      body: JSON.stringify({ session_id: id, cwd: '/tmp/shop', ...event }),
      signal,
    })
  /** A PermissionRequest: the response promise (held until decided). */
  const ask = (tool: string, input: unknown, headers: Record<string, string> = {}, signal?: AbortSignal) =>
    post({ hook_event_name: 'PermissionRequest', tool_name: tool, tool_input: input, permission_mode: 'default' }, headers, signal).then(async (r) => ({ status: r.status, body: await r.json() }))
  return { id, name, post, ask }
}

const list = async (q = '') => (await call(s.api, 'GET', `/api/approvals${q}`, undefined, viewer)).body as any[]
/** The pending approval of `sessionId`, once it is there. */
const pendingOf = (sessionId: string) => eventually(async () => (await list('?status=pending')).find((a) => a.session_id === sessionId))
const decide = (id: string, body: unknown, h = admin) => call(s.api, 'POST', `/api/approvals/${id}/decision`, body, h)
const events = async (topic: string) => (await call(s.api, 'GET', `/api/events/history?topic=${topic}&after_id=0&last=1000`, undefined, admin)).body as any[]
const ALLOW = { hookSpecificOutput: { hookEventName: 'PermissionRequest', decision: { behavior: 'allow' } } }

describe('a held request', () => {
  test('pending until the admin allows it; then the held hook answers allow; events and audit', async () => {
    const c = session()
    const answer = c.ask('Bash', { command: 'npm run deploy', description: 'deploy' })
    const a = await pendingOf(c.id)
    expect(a).toMatchObject({
      kind: 'permission', agent: 'claude-code', name: c.name, session_id: c.id, project: 'shop', tool: 'Bash',
      input: { command: 'npm run deploy', description: 'deploy' }, input_truncated: false, summary: 'npm run deploy',
      status: 'pending', rule_id: null, decided_by: null, message: null, decided_at: null,
    })
    const wait = Date.parse(a.expires_at) - Date.parse(a.created_at)
    expect(wait).toBe(5 * 60_000)
    expect(typeof a.instance_id).toBe('string')
    expect((await call(s.api, 'GET', `/api/approvals/${a.id}`, undefined, viewer)).body).toEqual(a)
    const r = await decide(a.id, { behavior: 'allow' })
    expect(r.status).toBe(200)
    expect(r.body).toMatchObject({ id: a.id, status: 'allowed', decided_by: 'admin' })
    expect(await answer).toEqual({ status: 200, body: ALLOW })
    const requested = (await events('approval.requested')).find((e) => e.data.id === a.id)
    expect(requested.data).not.toHaveProperty('input')
    expect(requested.data).toMatchObject({ summary: 'npm run deploy', status: 'pending' })
    expect((await events('approval.decided')).find((e) => e.data.id === a.id).data).toEqual({ id: a.id, behavior: 'allow', decided_by: 'admin', rule_id: null })
    const entries = (await call(s.api, 'GET', '/api/audit?action=approval.decide', undefined, admin)).body as any[]
    expect(entries.some((e) => e.resource === `approvals/${a.id}/decision` && e.actor === 'admin' && e.detail.includes('allow'))).toBe(true)
    // decided once: again is 409 naming its status
    const again = await decide(a.id, { behavior: 'deny' })
    expect(again.status).toBe(409)
    expect(again.body.error).toContain('allowed')
  })

  test('a deny answers with who denied and their words; Codex shell commands are summarised', async () => {
    const c = session('codex')
    const answer = c.ask('Bash', { command: 'rm -rf build' })
    const a = await pendingOf(c.id)
    expect(a).toMatchObject({ agent: 'codex', summary: 'rm -rf build' })
    expect((await decide(a.id, { behavior: 'deny', message: 'not on this branch' })).body).toMatchObject({ status: 'denied', message: 'not on this branch' })
    const { body } = await answer
    expect(body.hookSpecificOutput.hookEventName).toBe('PermissionRequest')
    expect(body.hookSpecificOutput.decision.behavior).toBe('deny')
    expect(body.hookSpecificOutput.decision.message).toContain('admin')
    expect(body.hookSpecificOutput.decision.message).toContain('"not on this branch"')
  })

  test('no decision within X-Muster-Approval-Wait: expired, answer {}, event; a late decision is 409', async () => {
    const c = session()
    const t0 = Date.now()
    const answer = await c.ask('Write', { file_path: '/tmp/shop/a.ts', content: 'x' }, { 'x-muster-approval-wait': '1s' })
    expect(Date.now() - t0).toBeGreaterThanOrEqual(950)
    expect(answer).toEqual({ status: 200, body: {} })
    const a = (await list()).find((x) => x.session_id === c.id)
    expect(a).toMatchObject({ status: 'expired', summary: '/tmp/shop/a.ts' })
    expect((await events('approval.expired')).some((e) => e.data.id === a.id)).toBe(true)
    const late = await decide(a.id, { behavior: 'allow' })
    expect([late.status, late.body.code]).toEqual([409, 409])
    expect(late.body.error).toContain('expired')
  })

  test('a bad wait header is 400 and makes nothing', async () => {
    const c = session()
    for (const wait of ['11m', 'soon', '0s', '500ms']) {
      const r = await c.ask('Bash', { command: 'ls' }, { 'x-muster-approval-wait': wait })
      expect(r.status).toBe(400)
      expect(r.body.error).toContain('X-Muster-Approval-Wait')
    }
    expect((await list()).some((a) => a.session_id === c.id)).toBe(false)
  })

  test('an agent that hangs up withdraws its request; deciding it then is 409', async () => {
    const c = session()
    const gone = new AbortController()
    const answer = c.ask('Bash', { command: 'make release' }, {}, gone.signal).catch(() => 'aborted')
    const a = await pendingOf(c.id)
    gone.abort()
    expect(await answer).toBe('aborted')
    const withdrawn = await eventually(async () => (await call(s.api, 'GET', `/api/approvals/${a.id}`, undefined, viewer)).body.status === 'withdrawn')
    expect(withdrawn).toBe(true)
    expect((await events('approval.withdrawn')).some((e) => e.data.id === a.id)).toBe(true)
    const r = await decide(a.id, { behavior: 'allow' })
    expect(r.status).toBe(409)
    expect(r.body.error).toContain('withdrawn')
  })

  test('a held request whose token is revoked answers 401 and is withdrawn', async () => {
    const made = (await call(s.api, 'POST', '/api/tokens', { name: 'soon-revoked', role: 'agent' }, admin)).body
    const c = session()
    const answer = c.ask('Bash', { command: 'make clean' }, { authorization: `Bearer ${made.token}` })
    const a = await pendingOf(c.id)
    expect((await call(s.api, 'DELETE', `/api/tokens/${made.id}`, undefined, admin)).status).toBe(200)
    const r = await answer
    expect([r.status, r.body.code]).toEqual([401, 401])
    expect(r.body.error).toContain('token revoked')
    expect((await call(s.api, 'GET', `/api/approvals/${a.id}`, undefined, viewer)).body.status).toBe('withdrawn')
  })

  test('several held at once, decided together: each hook answers; skipped ones name their status', async () => {
    const c = session()
    const answers = [1, 2, 3].map((i) => c.ask('Bash', { command: `echo ${i}` }))
    const pending = (await eventually(async () => {
      const mine = (await list('?status=pending')).filter((a) => a.session_id === c.id)
      return mine.length === 3 && mine
    })) as any[]
    const first = pending.find((a: any) => a.summary === 'echo 1')
    await decide(first.id, { behavior: 'deny' })
    const r = await call(s.api, 'POST', '/api/approvals/decision', { ids: pending.map((a: any) => a.id).concat('nope'), behavior: 'allow', message: 'go' }, admin)
    expect(r.status).toBe(200)
    expect(r.body.decided.map((a: any) => a.summary).sort()).toEqual(['echo 2', 'echo 3'])
    expect(r.body.decided.every((a: any) => a.status === 'allowed' && a.message === 'go')).toBe(true)
    expect(r.body.skipped).toEqual([{ id: first.id, status: 'denied' }, { id: 'nope', status: 'not_found' }])
    const bodies = (await Promise.all(answers)).map((x) => x.body.hookSpecificOutput.decision.behavior)
    expect(bodies).toEqual(['deny', 'allow', 'allow'])
  })
})

describe('rules', () => {
  test('a matching rule decides at once; deny wins; list oldest first; delete 204 then 404', async () => {
    const allow = await call(s.api, 'POST', '/api/approval-rules', { tool: 'Bash', match: 'npm test*', decision: 'allow' }, admin)
    expect(allow.status).toBe(201)
    expect(allow.body).toMatchObject({ tool: 'Bash', match: 'npm test*', agents: '*', decision: 'allow', message: null })
    expect(typeof allow.body.id).toBe('string')
    const c = session('claude-code', 'ruled-agent')
    expect((await c.ask('Bash', { command: 'npm test -- a/b.test.ts' })).body).toEqual(ALLOW)
    const auto = (await list()).find((a) => a.session_id === c.id)
    expect(auto).toMatchObject({ status: 'allowed', rule_id: allow.body.id, decided_by: 'rule' })
    const deny = await call(s.api, 'POST', '/api/approval-rules', { match: 'npm test*--update*', agents: 'ruled-*', decision: 'deny', message: 'snapshots are reviewed' }, admin)
    const denied = (await c.ask('Bash', { command: 'npm test --update-snapshots' })).body
    expect(denied.hookSpecificOutput.decision.behavior).toBe('deny')
    expect(denied.hookSpecificOutput.decision.message).toContain('snapshots are reviewed')
    expect(denied.hookSpecificOutput.decision.message).toContain(deny.body.id)
    // another agent name: the deny rule does not apply
    expect((await session().ask('Bash', { command: 'npm test --update' })).body).toEqual(ALLOW)
    const rules = (await call(s.api, 'GET', '/api/approval-rules', undefined, viewer)).body as any[]
    expect(rules.map((r) => r.id).slice(-2)).toEqual([allow.body.id, deny.body.id])
    for (const id of [allow.body.id, deny.body.id]) expect((await call(s.api, 'DELETE', `/api/approval-rules/${id}`, undefined, admin)).status).toBe(204)
    expect((await call(s.api, 'DELETE', `/api/approval-rules/${allow.body.id}`, undefined, admin)).status).toBe(404)
    const audit = (await call(s.api, 'GET', '/api/audit?action=approval.rule.delete', undefined, admin)).body as any[]
    expect(audit.filter((e) => e.outcome === 'success').length).toBeGreaterThanOrEqual(2)
    const created = (await call(s.api, 'GET', '/api/audit?action=approval.rule.create', undefined, admin)).body as any[]
    for (const id of [allow.body.id, deny.body.id]) expect(created.some((e) => e.outcome === 'success' && e.actor === 'admin' && e.detail.includes(id))).toBe(true)
  })

  test('bad rules are 400 and make nothing', async () => {
    const before = (await call(s.api, 'GET', '/api/approval-rules', undefined, admin)).body.length
    for (const body of [{ decision: 'maybe' }, {}, { decision: 'allow', tool: '' }, { decision: 'allow', message: 'x'.repeat(2001) }]) {
      const r = await call(s.api, 'POST', '/api/approval-rules', body, admin)
      expect([r.status, r.body.code]).toEqual([400, 400])
    }
    expect((await call(s.api, 'GET', '/api/approval-rules', undefined, admin)).body.length).toBe(before)
  })

  test('remember: the decision becomes a rule for the same tool, agent and exact summary', async () => {
    const c = session()
    const answer = c.ask('Bash', { command: 'git push origin feat*' })
    const a = await pendingOf(c.id)
    expect((await decide(a.id, { behavior: 'allow', remember: true })).status).toBe(200)
    expect((await answer).body).toEqual(ALLOW)
    const rule = ((await call(s.api, 'GET', '/api/approval-rules', undefined, admin)).body as any[]).at(-1)
    expect(rule).toMatchObject({ tool: 'Bash', agents: c.name, match: 'git push origin feat\\*', decision: 'allow' })
    const created = (await call(s.api, 'GET', '/api/audit?action=approval.rule.create', undefined, admin)).body as any[]
    expect(created.some((e) => e.resource === `approval-rules/${rule.id}` && e.actor === 'admin')).toBe(true)
    expect((await c.ask('Bash', { command: 'git push origin feat*' })).body).toEqual(ALLOW)
    // the exact summary only: a longer command is asked again
    const other = c.ask('Bash', { command: 'git push origin feature' }, { 'x-muster-approval-wait': '1s' })
    expect((await other).body).toEqual({})
    await call(s.api, 'DELETE', `/api/approval-rules/${rule.id}`, undefined, admin)
  })
})

describe('status codes', () => {
  test('404 unknown, 400 bad behavior / limit / status, 409 for needs input', async () => {
    expect((await call(s.api, 'GET', '/api/approvals/nope', undefined, viewer)).status).toBe(404)
    expect((await decide('nope', { behavior: 'allow' })).status).toBe(404)
    const c = session()
    const answer = c.ask('Bash', { command: 'date' }, { 'x-muster-approval-wait': '2s' })
    const a = await pendingOf(c.id)
    for (const body of [{ behavior: 'maybe' }, {}, { behavior: 'allow', remember: 'yes' }]) {
      const r = await decide(a.id, body)
      expect([r.status, r.body.code]).toEqual([400, 400])
    }
    expect((await call(s.api, 'GET', `/api/approvals/${a.id}`, undefined, viewer)).body.status).toBe('pending')
    for (const q of ['?limit=0', '?limit=1001', '?limit=x', '?status=maybe']) expect((await call(s.api, 'GET', `/api/approvals${q}`, undefined, viewer)).status).toBe(400)
    for (const body of [{ ids: [], behavior: 'allow' }, { ids: ['x'], behavior: 'maybe' }, { behavior: 'allow' }])
      expect((await call(s.api, 'POST', '/api/approvals/decision', body, admin)).status).toBe(400)
    expect((await list('?limit=1')).length).toBe(1)
    // newest first
    const all = await list('?limit=1000')
    expect(all[0].id).toBe(a.id)
    expect(all.map((x) => x.created_at)).toEqual(all.map((x) => x.created_at).sort().reverse())
    expect((await list(`?name=${c.name}`)).every((x) => x.name === c.name)).toBe(true)
    await decide(a.id, { behavior: 'allow' })
    await answer
  })

  test('roles: agent and viewer tokens get 403 on decisions and rules; a viewer reads', async () => {
    const c = session()
    const answer = c.ask('Bash', { command: 'whoami' }, { 'x-muster-approval-wait': '3s' })
    const a = await pendingOf(c.id)
    for (const h of [agent, viewer]) {
      for (const [method, path, body] of [
        ['POST', `/api/approvals/${a.id}/decision`, { behavior: 'allow' }],
        ['POST', '/api/approvals/decision', { ids: [a.id], behavior: 'allow' }],
        ['POST', '/api/approval-rules', { decision: 'allow' }],
        ['DELETE', '/api/approval-rules/x', undefined],
      ] as const) {
        const r = await call(s.api, method, path, body, h)
        expect([path, r.status]).toEqual([path, 403])
      }
      // another spelling of the path decides nothing either
      for (const path of [`/api/approvals/${a.id}/decision/`, '/api/approvals/decision/', `/API/approvals/${a.id}/decision`, `/api//approvals/${a.id}/decision`, `/api/approvals/${a.id}%2Fdecision`])
        expect((await call(s.api, 'POST', path, { behavior: 'allow' }, h)).status).toBeGreaterThanOrEqual(400)
      expect((await call(s.api, 'GET', '/api/approvals', undefined, h)).status).toBe(200)
      expect((await call(s.api, 'GET', '/api/approval-rules', undefined, h)).status).toBe(200)
    }
    expect((await call(s.api, 'GET', `/api/approvals/${a.id}`, undefined, viewer)).body.status).toBe('pending')
    expect((await call(s.api, 'GET', '/api/approvals')).status).toBe(401)
    await decide(a.id, { behavior: 'deny' })
    expect((await answer).body.hookSpecificOutput.decision.behavior).toBe('deny')
  })

  test('a long input is cut at 16 KB (input_truncated), the summary at 500 characters', async () => {
    const c = session()
    const command = 'echo ' + 'x'.repeat(20_000)
    const answer = c.ask('Bash', { command }, { 'x-muster-approval-wait': '1s' })
    const a = await pendingOf(c.id)
    expect(a.summary).toBe(command.slice(0, 500))
    expect(a.input_truncated).toBe(true)
    expect(typeof a.input).toBe('string')
    expect(a.input.length).toBe(16 * 1024)
    await answer
  })
})

describe('needs input', () => {
  test("a Notification that the agent waits is a pending 'input' approval, 409 to decide, withdrawn by the session's next event", async () => {
    const c = session()
    expect((await c.post({ hook_event_name: 'Notification', message: 'Claude is waiting for your input', notification_type: 'idle_prompt' })).status).toBe(200)
    const a = await pendingOf(c.id)
    expect(a).toMatchObject({ kind: 'input', summary: 'Claude is waiting for your input', tool: '', expires_at: null })
    const r = await decide(a.id, { behavior: 'allow' })
    expect(r.status).toBe(409)
    expect(r.body.error).toContain('message')
    // a permission prompt notification is not one (the PermissionRequest hook covers it)
    await c.post({ hook_event_name: 'Notification', message: 'Claude needs your permission to use Bash', notification_type: 'permission_prompt' })
    expect((await call(s.api, 'GET', `/api/approvals/${a.id}`, undefined, viewer)).body.status).toBe('withdrawn')
    expect((await list()).filter((x) => x.session_id === c.id).length).toBe(1)
    expect((await events('approval.withdrawn')).some((e) => e.data.id === a.id)).toBe(true)
  })
})

describe('a holder that went away', () => {
  test('a request whose server was killed while holding it is expired after its wait; a notice from before still ends', async () => {
    const dataDir = tempDir('muster-approvals-killed-')
    const first = await startServer({ dataDir })
    const sessionId = crypto.randomUUID()
    const held = fetch(`${first.api}/api/hooks/claude-code`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'x-muster-approval-wait': '1s' },
      body: JSON.stringify({ session_id: sessionId, hook_event_name: 'PermissionRequest', cwd: '/tmp/shop', tool_name: 'Bash', tool_input: { command: 'make' } }),
    }).catch(() => 'cut')
    const a = await eventually(async () => ((await call(first.api, 'GET', '/api/approvals?status=pending')).body as any[]).find((x) => x.session_id === sessionId))
    // and a "needs input" notice of another session, from before the restart
    const idle = crypto.randomUUID()
    const hookEvent = (api: string, event: Record<string, unknown>) =>
      call(api, 'POST', '/api/hooks/claude-code', { session_id: idle, cwd: '/tmp/shop', ...event })
    expect((await hookEvent(first.api, { hook_event_name: 'Notification', message: 'Claude is waiting for your input', notification_type: 'idle_prompt' })).status).toBe(200)
    const notice = ((await call(first.api, 'GET', '/api/approvals?status=pending')).body as any[]).find((x) => x.session_id === idle)
    await first.kill()
    expect(await held).toBe('cut')
    const second = await startServer({ dataDir })
    try {
      expect((await call(second.api, 'GET', `/api/approvals/${a.id}`)).body.status).toBe('pending')
      // the session's next event, on the restarted server, withdraws the notice
      expect((await hookEvent(second.api, { hook_event_name: 'UserPromptSubmit', prompt: 'go on' })).status).toBe(200)
      expect((await call(second.api, 'GET', `/api/approvals/${notice.id}`)).body.status).toBe('withdrawn')
      // past expires_at and the grace, the leader's job expires it
      await eventually(async () => (await call(second.api, 'GET', `/api/approvals/${a.id}`)).body.status === 'expired', 15_000, 200)
      const events = (await call(second.api, 'GET', '/api/events/history?topic=approval.expired&after_id=0&last=100')).body as any[]
      expect(events.some((e) => e.data.id === a.id)).toBe(true)
    } finally {
      await second.cleanup()
    }
  }, 30_000)

  test('at shutdown a held request answers {} at once and is expired; the server exits without waiting for it', async () => {
    const dataDir = tempDir('muster-approvals-stop-')
    const first = await startServer({ dataDir })
    const sessionId = crypto.randomUUID()
    const held = fetch(`${first.api}/api/hooks/claude-code`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ session_id: sessionId, hook_event_name: 'PermissionRequest', cwd: '/tmp/shop', tool_name: 'Bash', tool_input: { command: 'make' } }),
    }).then((r) => r.json())
    const a = await eventually(async () => ((await call(first.api, 'GET', '/api/approvals?status=pending')).body as any[]).find((x) => x.session_id === sessionId))
    const t0 = Date.now()
    await first.stop()
    expect(Date.now() - t0).toBeLessThan(3000)
    expect(await held).toEqual({})
    const second = await startServer({ dataDir })
    try {
      expect((await call(second.api, 'GET', `/api/approvals/${a.id}`)).body.status).toBe('expired')
    } finally {
      await second.cleanup()
    }
  }, 30_000)
})

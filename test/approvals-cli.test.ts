// The person's CLI against a live server: `muster approvals [--wait]`, `approve`, `deny`,
// `approval-rules`; `muster hook codex` holding a PermissionRequest for a decision; and a
// webhook (a phone) receiving the approval events.
import { afterAll, expect, test } from 'bun:test'
import { call, eventually, startServer } from './helpers'
import { removeWorkdirs, runCli, spawnCli, workdir } from './cli-run'

const received: { topic: string; data: any }[] = []
const phone = Bun.serve({
  hostname: '127.0.0.1',
  port: 0,
  async fetch(req) {
    const body = await req.json()
    received.push({ topic: body.topic, data: body.data })
    return new Response('ok')
  },
})

const s = await startServer()
const dir = workdir({ server: s.api })
afterAll(async () => {
  phone.stop(true)
  await s.cleanup()
  removeWorkdirs()
})
const cli = (...args: string[]) => runCli(['-o', 'json', ...args], { cwd: dir })

/** A Codex PermissionRequest sent through `muster hook codex`, as Codex's command hook runs it. */
const hook = (session: string, command: string, wait = '30s') =>
  runCli(['hook', 'codex', '--approval-wait', wait], {
    cwd: dir,
    env: { SERVICE_SERVER: s.api, MUSTER_AGENT: 'cli-codex' },
    stdin: JSON.stringify({ session_id: session, hook_event_name: 'PermissionRequest', cwd: dir, tool_name: 'Bash', tool_input: { command } }),
  })

test('approvals --wait returns once a request arrives; approve answers the held hook; webhooks carry the events', async () => {
  expect((await call(s.api, 'POST', '/api/webhooks', { id: 'phone', url: `http://127.0.0.1:${phone.port}/`, patterns: ['approval.*'] })).status).toBe(200)
  const waiting = spawnCli(['-o', 'json', 'approvals', '--wait', '20s'], { cwd: dir })
  await Bun.sleep(300)
  const session = crypto.randomUUID()
  const held = hook(session, 'cargo publish')
  await waiting.proc.exited
  const listed = JSON.parse(waiting.lines().join('\n'))
  const pending = listed.find((a: any) => a.session_id === session)
  expect(pending).toMatchObject({ status: 'pending', summary: 'cargo publish', agent: 'codex', name: 'cli-codex' })

  const r = await cli('approve', pending.id)
  expect([r.code, r.json.status]).toEqual([0, 'allowed'])
  const answer = await held
  expect(answer.code).toBe(0)
  expect(answer.json).toEqual({ hookSpecificOutput: { hookEventName: 'PermissionRequest', decision: { behavior: 'allow' } } })
  await eventually(() => received.some((e) => e.topic === 'approval.decided' && e.data.id === pending.id))
  expect(received.find((e) => e.topic === 'approval.requested' && e.data.id === pending.id)!.data).toMatchObject({ summary: 'cargo publish' })
  // a second decision is the server's 409, exit 1
  const again = await cli('deny', pending.id, '--message', 'late')
  expect([again.code, again.error.code]).toEqual([1, 409])
})

test('deny several at once with a message; without --wait the list is at once', async () => {
  const sessions = [crypto.randomUUID(), crypto.randomUUID()]
  const held = sessions.map((id, i) => hook(id, `rm -rf build${i}`))
  const ids = await eventually(async () => {
    const list = ((await cli('approvals')).json as any[]).filter((a) => sessions.includes(a.session_id))
    return list.length === 2 && list.map((a) => a.id)
  })
  const r = await cli('deny', ...(ids as string[]), '--message', 'keep the build dir')
  expect(r.code).toBe(0)
  expect(r.json.decided.length).toBe(2)
  for (const answer of await Promise.all(held)) {
    expect(answer.json.hookSpecificOutput.decision.behavior).toBe('deny')
    expect(answer.json.hookSpecificOutput.decision.message).toContain('keep the build dir')
  }
  expect(((await cli('approvals', '--status', 'denied')).json as any[]).filter((a) => sessions.includes(a.session_id)).length).toBe(2)
  expect((await cli('approvals', '--status', 'maybe')).code).toBe(2)
})

test('approval-rules add, list, delete; a rule answers the hook at once', async () => {
  const add = await cli('approval-rules', 'add', '--tool', 'Bash', '--match', 'ls*', '--decision', 'allow')
  expect([add.code, add.json.decision, add.json.match]).toEqual([0, 'allow', 'ls*'])
  const answer = await hook(crypto.randomUUID(), 'ls -la')
  expect(answer.json.hookSpecificOutput.decision.behavior).toBe('allow')
  expect(((await cli('approval-rules', 'list')).json as any[]).map((r) => r.id)).toContain(add.json.id)
  expect((await cli('approval-rules', 'delete', add.json.id)).code).toBe(0)
  expect((await cli('approval-rules', 'delete', add.json.id)).code).toBe(1)
  expect((await cli('approval-rules', 'add', '--decision', 'maybe')).code).toBe(2)
})

test('approve --remember: the same command is allowed by a rule from then on', async () => {
  const held = hook(crypto.randomUUID(), 'npm run e2e')
  const pending = (await eventually(async () => ((await cli('approvals', '--status', 'pending')).json as any[]).find((a) => a.summary === 'npm run e2e'))) as any
  const r = await cli('approve', pending.id, '--remember')
  expect([r.code, r.json.status]).toEqual([0, 'allowed'])
  expect((await held).json.hookSpecificOutput.decision.behavior).toBe('allow')
  const rule = ((await cli('approval-rules', 'list')).json as any[]).find((x) => x.match === 'npm run e2e')
  expect(rule).toMatchObject({ tool: 'Bash', agents: 'cli-codex', decision: 'allow' })
  const again = await hook(crypto.randomUUID(), 'npm run e2e')
  expect(again.json.hookSpecificOutput.decision.behavior).toBe('allow')
  const ruled = ((await cli('approvals', '--status', 'allowed')).json as any[]).find((a) => a.rule_id === rule.id)
  expect(ruled).toMatchObject({ decided_by: 'rule', summary: 'npm run e2e' })
  expect((await cli('approval-rules', 'delete', rule.id)).code).toBe(0)
})

test('no decision within --approval-wait: the hook prints {} and the approval is expired', async () => {
  const session = crypto.randomUUID()
  const answer = await hook(session, 'sleep 1', '1s')
  expect([answer.code, answer.json]).toEqual([0, {}])
  const list = (await cli('approvals', '--status', 'expired')).json as any[]
  expect(list.some((a) => a.session_id === session)).toBe(true)
})

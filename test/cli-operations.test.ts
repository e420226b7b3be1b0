// A CLI command for every API operation: the OpenAPI document is checked
// against the command tree, and the commands added for the last gaps (rules
// lifecycle, templates update, contract list/delete/history/diff, specs
// history/diff, webhooks get/disable, intent, capabilities, liveness check,
// event subscriptions) run against a live server.
import { afterAll, describe, expect, test } from 'bun:test'
import type { Command } from 'commander'
import { buildProgram } from '../cli'
import { EXAMPLES } from '../cli/examples'
import { call, startServer } from './helpers'
import { removeWorkdirs, runCli, workdir } from './cli-run'

const TOKEN = 'cli-ops-token'
const auth = { authorization: `Bearer ${TOKEN}` }
const s = await startServer({ args: ['--auth-token', TOKEN] })
const dir = workdir({ server: s.api, token: TOKEN })
afterAll(async () => {
  await s.cleanup()
  removeWorkdirs()
})
const cli = (...args: string[]) => runCli(args, { cwd: dir })

/** Which command performs each operation of /openapi.json. */
const COMMAND_OF: Record<string, string> = {
  'GET /health': 'status',
  'GET /api/state': 'state list',
  'GET /api/state/{key}': 'state get',
  'PUT /api/state/{key}': 'state set',
  'POST /api/state/{key}': 'state rollback',
  'DELETE /api/state/{key}': 'state delete',
  'GET /api/specs/{project}': 'specs list',
  'GET /api/specs/{project}/{name}': 'specs get',
  'PUT /api/specs/{project}/{name}': 'specs set',
  'DELETE /api/specs/{project}/{name}': 'specs delete',
  'GET /api/audit': 'audit',
  'GET /api/audit/summary': 'audit summary',
  'GET /api/metrics': 'metrics',
  'GET /api/metrics/agents': 'metrics agents',
  'GET /api/metrics/agents/{id}': 'metrics agents',
  'GET /api/llm/usage': 'llm usage',
  'POST /api/llm/usage': 'llm record',
  'GET /api/llm/usage/summary': 'llm summary',
  'GET /api/backup': 'backup',
  'POST /api/restore': 'restore',
  'GET /api/contracts/{project}': 'contract list',
  'GET /api/contracts/{project}/{name}': 'contract get',
  'PUT /api/contracts/{project}/{name}': 'contract set',
  'DELETE /api/contracts/{project}/{name}': 'contract delete',
  'POST /api/contracts/{project}/{name}/validate': 'contract validate',
  'POST /api/contracts/{project}/{name}/test': 'contract test',
  'GET /api/compliance/history': 'compliance history',
  'POST /api/compliance/run': 'compliance run',
  'POST /api/events/publish': 'events publish',
  'GET /api/events/history': 'events history',
  'GET /api/events/subscriptions': 'events subscriptions',
  'GET /api/events/subscribe': 'events subscribe',
  'POST /api/webhooks': 'webhooks add',
  'GET /api/webhooks': 'webhooks list',
  'GET /api/webhooks/{id}': 'webhooks get',
  'GET /api/locks': 'lock list',
  'GET /api/locks/{name}': 'lock get',
  'PUT /api/locks/{name}': 'lock acquire',
  'DELETE /api/locks/{name}': 'lock release',
  'POST /api/reservations': 'reserve',
  'POST /api/hooks/{agent}': 'hook',
  'GET /api/sessions': 'sessions',
  'GET /api/reservations': 'reservations',
  'POST /api/reservations/check': 'check',
  'GET /api/reservations/{id}': 'reservation',
  'DELETE /api/reservations/{id}': 'release',
  'POST /api/reservations/{id}/renew': 'renew',
  'POST /api/queues/{queue}/tasks': 'task add',
  'GET /api/queues/{queue}/tasks': 'task list',
  'GET /api/queues': 'task list',
  'POST /api/queues/{queue}/claim': 'task claim',
  'POST /api/tasks/{id}/ack': 'task ack',
  'POST /api/tasks/{id}/nack': 'task nack',
  'POST /api/tasks/{id}/extend': 'task extend',
  'GET /api/tasks/{id}': 'task get',
  'DELETE /api/tasks/{id}': 'task cancel',
  'POST /api/tasks/{id}/notes': 'task note',
  'POST /api/tasks/{id}/retry': 'task retry',
  'POST /api/messages': 'send',
  'GET /api/inbox': 'inbox',
  'POST /api/messages/{id}/ack': 'ack',
  'GET /api/messages/{id}': 'message',
  'GET /api/threads/{thread}': 'thread',
  'GET /api/messages': 'messages',
  'GET /api/webhooks/{id}/deliveries': 'webhooks deliveries',
  'DELETE /api/webhooks/{id}': 'webhooks delete',
  'POST /api/webhooks/{id}/test': 'webhooks test',
  'POST /api/webhooks/{id}/enable': 'webhooks enable',
  'POST /api/webhooks/{id}/disable': 'webhooks disable',
  'PATCH /api/webhooks/{id}': 'webhooks update',
  'POST /api/webhooks/{id}/redeliver': 'webhooks redeliver',
  'POST /api/webhooks/{id}/deliveries/{delivery}/redeliver': 'webhooks redeliver',
  'POST /api/instances/register': 'register',
  'GET /api/instances': 'instances list',
  'GET /api/instances/stale': 'instances stale',
  'GET /api/instances/{id}': 'instances get',
  'DELETE /api/instances/{id}': 'instances delete',
  'POST /api/instances/{id}/heartbeat': 'heartbeat',
  'POST /api/instances/{id}/activate': 'activate',
  'POST /api/instances/{id}/capabilities': 'capabilities',
  'PUT /api/instances/{id}/intent': 'intent',
  'POST /api/liveness/check': 'instances check',
  'GET /api/validate/{project}/rules': 'rules get',
  'PUT /api/validate/{project}/rules': 'rules set',
  'POST /api/validate/{project}': 'validate',
  'GET /api/rules': 'rules list',
  'POST /api/rules/propose': 'rules propose',
  'PUT /api/rules/{project}/{ruleID}': 'rules put',
  'DELETE /api/rules/{project}/{ruleID}': 'rules delete',
  'POST /api/rules/{project}/{ruleID}/accept': 'rules accept',
  'POST /api/rules/{project}/{ruleID}/reject': 'rules reject',
  'GET /api/rules/export': 'rules export',
  'POST /api/rules/import': 'rules import',
  'POST /api/templates': 'templates create',
  'GET /api/templates': 'templates list',
  'GET /api/templates/{id}': 'templates get',
  'PUT /api/templates/{id}': 'templates update',
  'DELETE /api/templates/{id}': 'templates delete',
  'POST /api/templates/{id}/apply': 'templates apply',
  'POST /api/tokens': 'token create',
  'GET /api/tokens': 'token list',
  'DELETE /api/tokens/{id}': 'token revoke',
  'GET /api/whoami': 'whoami',
  'GET /api/llm/usage/buckets': 'llm spend',
  'GET /api/budgets': 'budgets list',
  'GET /api/budgets/{name}': 'budgets get',
  'PUT /api/budgets/{name}': 'budgets set',
  'DELETE /api/budgets/{name}': 'budgets delete',
  'GET /api/projects': 'project list',
  'GET /api/projects/{project}': 'project get',
  'PUT /api/projects/{project}': 'project set',
  'GET /api/approvals': 'approvals',
  'GET /api/approvals/{id}': 'approval',
  'POST /api/approvals/{id}/decision': 'approve',
  'POST /api/approvals/decision': 'approve',
  'POST /api/approval-rules': 'approval-rules add',
  'GET /api/approval-rules': 'approval-rules list',
  'DELETE /api/approval-rules/{id}': 'approval-rules delete',
}
/** MCP is the agents' discovery door and /metrics is for Prometheus to scrape, not data operations: no command. */
// For machines, not people: MCP clients, Prometheus, the probes of an orchestrator (a person runs `muster status`), and the agents' OpenTelemetry exporters.
const NO_COMMAND = ['POST /mcp', 'GET /metrics', 'GET /livez', 'GET /readyz', 'POST /v1/logs', 'POST /v1/metrics']

describe('coverage', () => {
  test('every operation in /openapi.json has a CLI command, and every command has help examples', async () => {
    const doc = (await call(s.api, 'GET', '/openapi.json', undefined, auth)).body
    const operations = Object.entries(doc.paths as Record<string, object>).flatMap(([path, ops]) =>
      Object.keys(ops).map((method) => `${method.toUpperCase()} ${path}`),
    )
    const paths: string[] = []
    const walk = (cmd: Command, prefix: string[]) => {
      for (const c of cmd.commands) {
        paths.push([...prefix, c.name()].join(' '))
        walk(c, [...prefix, c.name()])
      }
    }
    walk(buildProgram(), [])
    const missing = operations.filter((op) => !NO_COMMAND.includes(op) && !paths.includes(COMMAND_OF[op] ?? ''))
    expect(missing).toEqual([])
    expect(paths.filter((p) => !EXAMPLES[p])).toEqual([])
  })
})

describe('rules lifecycle', () => {
  test('propose, list --status, accept and reject, get and set a project', async () => {
    const p = await cli('rules', 'propose', 'ops', 'no-todo', '--pattern', 'TODO', '--severity', 'warning', '--applies-to', '*.ts,*.js', '--context', 'review')
    expect([p.code, p.json]).toEqual([0, { project: 'ops', rule_id: 'no-todo', status: 'proposed' }])
    expect((await cli('rules', 'propose', 'ops', 'no-fixme', '--pattern', 'FIXME')).code).toBe(0)
    const proposed = await cli('rules', 'list', '--status', 'proposed', '--project', 'ops')
    expect(proposed.json.map((r: any) => r.rule_id)).toEqual(['no-fixme', 'no-todo'])
    expect(proposed.json[1]).toMatchObject({ severity: 'warning', applies_to: ['*.ts', '*.js'], context: 'review', source: 'learned' })
    expect((await cli('rules', 'accept', 'ops', 'no-todo')).json).toEqual({ project: 'ops', rule_id: 'no-todo', status: 'accepted' })
    expect((await cli('rules', 'reject', 'ops', 'no-fixme')).json).toEqual({ project: 'ops', rule_id: 'no-fixme', status: 'rejected' })
    const again = await cli('rules', 'accept', 'ops', 'no-fixme')
    expect([again.code, again.error.code]).toEqual([1, 404])
    expect((await cli('rules', 'get', 'ops')).json.rules.map((r: any) => r.rule_id)).toEqual(['no-todo'])
    const set = await cli('rules', 'set', 'ops', '--data', '[{"rule_id":"no-log","pattern":"console\\\\.log","stack":"node"}]')
    expect(set.json).toEqual({ project: 'ops', count: 1 })
    expect((await cli('rules', 'get', 'ops', '--stack', 'node')).json.rules.map((r: any) => r.rule_id)).toEqual(['no-log'])
    expect((await cli('rules', 'get', 'ops', '--stack', 'react')).json.rules).toEqual([])
    // Bad input: a choice commander knows is exit 2; what only the server knows is its 400; nothing stored.
    expect((await cli('rules', 'propose', 'ops', 'x', '--pattern', 'a', '--severity', 'fatal')).code).toBe(2)
    const bad = await cli('rules', 'propose', 'ops', 'x', '--pattern', '(?=a)')
    expect([bad.code, bad.error.code]).toEqual([1, 400])
    expect((await cli('rules', 'list', '--project', 'ops')).json.map((r: any) => r.rule_id).sort()).toEqual(['no-fixme', 'no-log']) // set replaced the accepted no-todo
    // One rule at a time: put adds beside the others, delete removes one.
    const put = await cli('rules', 'put', 'ops', 'no-any', '--data', '{"pattern":": any\\b","severity":"warning"}')
    expect([put.code, put.json]).toMatchObject([0, { rule_id: 'no-any', source: 'local', status: 'accepted', severity: 'warning' }])
    expect((await cli('rules', 'get', 'ops')).json.rules.map((r: any) => r.rule_id)).toEqual(['no-any', 'no-log'])
    expect((await cli('rules', 'delete', 'ops', 'no-any')).json).toEqual({ deleted: 'ops/no-any' })
    const gone = await cli('rules', 'delete', 'ops', 'no-any')
    expect([gone.code, gone.error.code]).toEqual([1, 404])
  })
})

describe('versioned documents', () => {
  test('specs history, diff and get --version', async () => {
    await cli('specs', 'set', 'ops/api', '--data', '{"v":1,"a":true}')
    await cli('specs', 'set', 'ops/api', '--data', '{"v":2,"a":true}')
    const h = await cli('specs', 'history', 'ops/api', '--limit', '1')
    expect(h.json).toMatchObject({ project: 'ops', name: 'api', versions: [{ version: 2 }] })
    const d = await cli('specs', 'diff', 'ops/api', '--v1', '1', '--v2', '2')
    expect(d.json.diffs).toEqual([{ operation: 'replace', path: '/v', old_value: 1, new_value: 2 }])
    expect((await cli('specs', 'get', 'ops/api', '--version', '1')).stdout).toBe('{"v":1,"a":true}')
    const none = await cli('specs', 'diff', 'ops/api', '--v1', '1', '--v2', '9')
    expect([none.code, none.error]).toEqual([1, { error: 'version 9 not found', code: 404 }])
  })

  test('contract list, history, diff, get --version, delete; a failing contract test is exit 3', async () => {
    const contract = (status: number) => ({ kind: 'contract', version: '1', endpoints: { 'GET /ping': { response_status: status } } })
    await cli('contract', 'set', 'ops/ping', '--data', JSON.stringify(contract(200)))
    await cli('contract', 'set', 'ops/ping', '--data', JSON.stringify(contract(204)))
    const list = await cli('contract', 'list', 'ops')
    expect(list.json.contracts).toEqual([expect.objectContaining({ name: 'ping', version: 2, endpoints: ['GET /ping'], valid: true })])
    expect((await cli('contract', 'history', 'ops/ping')).json.versions.map((v: any) => v.version)).toEqual([2, 1])
    const diff = await cli('contract', 'diff', 'ops/ping', '--v1', '1', '--v2', '2')
    expect(diff.json.diffs).toEqual([{ operation: 'replace', path: '/endpoints/GET ~1ping/response_status', old_value: 200, new_value: 204 }])
    expect(JSON.parse((await cli('contract', 'get', 'ops/ping', '--version', '1')).stdout)).toEqual(contract(200))
    // Nothing listens on port 9: the test fails, the result is still printed.
    const t = await cli('contract', 'test', 'ops/ping', '--endpoint', 'GET /ping', '--base-url', 'http://127.0.0.1:9')
    expect([t.code, t.json.pass]).toEqual([3, false])
    expect(t.stderr).toBe('muster: contract test of GET /ping failed\n')
    expect((await cli('contract', 'delete', 'ops/ping')).json).toEqual({ deleted: 'ops/ping' })
    expect((await cli('contract', 'list', 'ops')).json.contracts).toEqual([])
  })
})

describe('templates, webhooks, instances, events', () => {
  test('templates update changes only the fields given and bumps the version', async () => {
    await cli('templates', 'create', 'ops-t', '--name', 'Ops', '--tag', 'a', '--data', '[{"rule_id":"r","pattern":"x"}]')
    const u = await cli('templates', 'update', 'ops-t', '--description', 'now described', '--tag', 'b', '--tag', 'c')
    expect(u.code).toBe(0)
    expect(u.json).toMatchObject({ id: 'ops-t', name: 'Ops', description: 'now described', tags: ['b', 'c'], version: 2, data: [{ rule_id: 'r' }] })
    const missing = await cli('templates', 'update', 'nope', '--name', 'x')
    expect([missing.code, missing.error.code]).toEqual([1, 404])
  })

  test('webhooks get and disable', async () => {
    await cli('webhooks', 'add', 'ops-hook', 'http://127.0.0.1:9/hook', '--secret', 'k')
    const got = await cli('webhooks', 'get', 'ops-hook')
    expect(got.json).toMatchObject({ id: 'ops-hook', active: true })
    expect(got.stdout).not.toContain('"k"')
    expect((await cli('webhooks', 'disable', 'ops-hook')).json).toMatchObject({ id: 'ops-hook', active: false })
    expect((await cli('webhooks', 'enable', 'ops-hook')).json).toMatchObject({ active: true })
  })

  test('intent, capabilities (of the registered instance or a given one), instances check, events subscriptions', async () => {
    const d = workdir({ server: s.api, token: TOKEN })
    const reg = (await runCli(['register', 'ops-agent'], { cwd: d })).json
    const intent = await runCli(['intent', 'writing tests'], { cwd: d })
    expect(intent.json).toMatchObject({ id: reg.id, intent: 'writing tests' })
    expect((await runCli(['capabilities', 'review,tests'], { cwd: d })).json).toEqual({ id: reg.id, capabilities: ['review', 'tests'] })
    expect((await cli('capabilities', 'docs', reg.id)).json).toEqual({ id: reg.id, capabilities: ['docs'] })
    const noId = await cli('intent', 'x')
    expect(noId.code).toBe(2)
    expect(noId.stderr).toContain('run `register <name>` first')
    expect((await cli('instances', 'check')).json).toMatchObject({ checked: true, count: 0 })
    expect(Array.isArray((await cli('events', 'subscriptions')).json)).toBe(true)
  })
})

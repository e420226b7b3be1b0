// `muster budgets` and `muster llm summary` against a live server with tokens: each does
// what its route does, an agent token may list but not set, bad flags are usage errors.
import { afterAll, expect, setDefaultTimeout, test } from 'bun:test'
import { call, startServer } from './helpers'
import { removeWorkdirs, runCli, workdir } from './cli-run'

setDefaultTimeout(30_000)
const ADMIN = 'budgets-cli-admin'
const s = await startServer({ args: ['--auth-token', ADMIN] })
const dir = workdir({ server: s.api, token: ADMIN })
afterAll(async () => {
  await s.cleanup()
  removeWorkdirs()
})
const cli = (args: string[], env: Record<string, string> = {}) => runCli(['-o', 'json', ...args], { cwd: dir, env })

test('set (defaults: all, day, warn), get, list (also budgets alone), delete; an agent token lists but may not set', async () => {
  const set = await cli(['budgets', 'set', 'ada-daily', '--scope', 'agent', '--target', 'ada', '--limit', '2.5', '--action', 'deny'])
  expect(set.code).toBe(0)
  expect(set.json).toMatchObject({ name: 'ada-daily', scope: 'agent', target: 'ada', limit_usd: 2.5, window: 'day', action: 'deny', spent_usd: 0 })
  const team = await cli(['budgets', 'set', 'team', '--limit', '100'])
  expect(team.json).toMatchObject({ scope: 'all', target: '', window: 'day', action: 'warn' })
  expect((await cli(['budgets', 'get', 'team'])).json.limit_usd).toBe(100)
  const names = (r: any) => r.json.map((b: any) => b.name)
  expect(names(await cli(['budgets']))).toEqual(['ada-daily', 'team'])
  expect(names(await cli(['budgets', 'list']))).toEqual(['ada-daily', 'team'])
  const agentToken = (await call(s.api, 'POST', '/api/tokens', { name: 'cli-agent', role: 'agent' }, { authorization: `Bearer ${ADMIN}` })).body.token
  expect(names(await cli(['budgets', '--token', agentToken]))).toEqual(['ada-daily', 'team'])
  const refused = await cli(['budgets', 'set', 'team', '--limit', '1', '--token', agentToken])
  expect(refused.code).toBe(1)
  expect(refused.stderr).toContain('admin token')
  expect((await cli(['budgets', 'delete', 'team'])).code).toBe(0)
  const missing = await cli(['budgets', 'get', 'team'])
  expect([missing.code, missing.stderr]).toEqual([1, expect.stringContaining('budget team not found')])
  for (const bad of [['budgets', 'set', 'x'], ['budgets', 'set', 'x', '--limit', '-1'], ['budgets', 'set', 'x', '--limit', '1', '--window', 'month']])
    expect((await cli(bad)).code).toBe(2)
})

test('llm summary shows the records of models the price table lacks', async () => {
  const body = (model: string) => ({ resourceLogs: [{ scopeLogs: [{ logRecords: [{
    timeUnixNano: String(BigInt(Date.now()) * 1_000_000n),
    attributes: [
      { key: 'event.name', value: { stringValue: 'codex.sse_event' } },
      { key: 'event.kind', value: { stringValue: 'response.completed' } },
      { key: 'conversation.id', value: { stringValue: crypto.randomUUID() } },
      { key: 'model', value: { stringValue: model } },
      { key: 'input_token_count', value: { stringValue: '100' } },
      { key: 'output_token_count', value: { stringValue: '10' } },
    ],
  }] }] }] })
  for (const model of ['gpt-x', 'gpt-x', 'gpt-y'])
    expect((await call(s.api, 'POST', '/v1/logs', body(model), { authorization: `Bearer ${ADMIN}` })).status).toBe(200)
  const summary = await cli(['llm', 'summary', '--by', 'model'])
  expect(summary.code).toBe(0)
  expect(summary.json.unpriced_models).toEqual({ 'gpt-x': 2, 'gpt-y': 1 })
})

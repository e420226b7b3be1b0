// Budgets over real HTTP (oversight.md "Budgets"): the routes and their roles, spend per
// scope kept as usage is recorded (REST or OTLP), the 80% and 100% events once per window,
// and enforcement: warn lines in hook context, deny on PreToolUse and on claims.
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { call, register, startApp, type InProcessServer } from './helpers'
import { claudeJsonAt } from './otlp-fixtures'
import { rawQuery } from './pg'
import { windowStart } from '../services/budgets'

const ADMIN = 'budgets-admin-token'
const admin: Record<string, string> = { authorization: `Bearer ${ADMIN}` }
let s: InProcessServer
let agent: Record<string, string>
let viewer: Record<string, string>

beforeAll(async () => {
  s = await startApp(['--auth-token', ADMIN])
  agent = { authorization: `Bearer ${(await call(s.api, 'POST', '/api/tokens', { name: 'budget-agent', role: 'agent' }, admin)).body.token}` }
  viewer = { authorization: `Bearer ${(await call(s.api, 'POST', '/api/tokens', { name: 'budget-viewer', role: 'viewer' }, admin)).body.token}` }
})
afterAll(() => s.cleanup())

const put = (name: string, body: unknown, who = admin) => call(s.api, 'PUT', `/api/budgets/${name}`, body, who)
const get = (name: string, who = admin) => call(s.api, 'GET', `/api/budgets/${name}`, undefined, who)
const del = (name: string, who = admin) => call(s.api, 'DELETE', `/api/budgets/${name}`, undefined, who)
const spend = (body: Record<string, unknown>) => call(s.api, 'POST', '/api/llm/usage', { provider: 'anthropic', model: 'm', ...body }, admin)
const events = async (topic: string) => (await call(s.api, 'GET', `/api/events/history?topic=${topic}&after_id=0&last=500`, undefined, admin)).body as any[]
const midnight = () => new Date(new Date().toISOString().slice(0, 10) + 'T00:00:00.000Z')

let n = 0
const uniq = (what: string) => `${what}-${++n}-${Math.random().toString(36).slice(2, 7)}`

/** A Claude Code hook session named `name` in `project`, opened by SessionStart. */
async function session(name: string, project = uniq('proj')) {
  const id = crypto.randomUUID()
  const post = (event: string, extra: Record<string, unknown> = {}) =>
    call(s.api, 'POST', '/api/hooks/claude-code', { session_id: id, hook_event_name: event, cwd: `/tmp/${project}`, ...extra }, {
      ...admin,
      'x-muster-agent': name,
      'x-muster-project': project,
    })
  const send = async (event: string, extra: Record<string, unknown> = {}) => {
    const r = await post(event, extra)
    expect(r.status).toBe(200)
    return r.body
  }
  // who the session acts as comes in headers, never in the text the model reads
  const token = (await post('SessionStart', { source: 'startup' })).headers.get('x-muster-instance-token')!
  const row = ((await call(s.api, 'GET', '/api/sessions', undefined, admin)).body as any[]).find((x) => x.session_id === id)
  return { id, project, token, instance: row.instance_id as string, send }
}
const bash = { tool_name: 'Bash', tool_input: { command: 'ls' } }

describe('routes', () => {
  test('PUT creates (201) then replaces (200); GET shows spent_usd and window_start; DELETE 204, then 404; audited', async () => {
    const name = uniq('b')
    const body = { scope: 'project', target: uniq('p'), limit_usd: 5, window: 'day', action: 'warn' }
    const created = await put(name, body)
    expect(created.status).toBe(201)
    expect(created.body).toEqual({
      name, ...body, spent_usd: 0, window_start: midnight().toISOString(),
      created_at: expect.any(String), updated_at: expect.any(String),
    })
    const replaced = await put(name, { ...body, limit_usd: 7, action: 'deny' })
    expect(replaced.status).toBe(200)
    expect(replaced.body).toMatchObject({ limit_usd: 7, action: 'deny', created_at: created.body.created_at })
    expect((await get(name)).body).toEqual(replaced.body)
    expect(((await call(s.api, 'GET', '/api/budgets', undefined, admin)).body as any[]).find((b) => b.name === name)).toEqual(replaced.body)
    const week = await put(uniq('w'), { scope: 'all', limit_usd: 1, window: 'week', action: 'warn' })
    const monday = midnight()
    monday.setUTCDate(monday.getUTCDate() - ((monday.getUTCDay() + 6) % 7))
    expect(week.body).toMatchObject({ target: '', window_start: monday.toISOString() })
    expect(new Date(week.body.window_start).getUTCDay()).toBe(1)
    expect((await put(uniq('t'), { scope: 'agent', target: 'x', limit_usd: 1, window: 'total', action: 'warn' })).body.window_start).toBe('1970-01-01T00:00:00.000Z')
    expect((await del(week.body.name)).status).toBe(204)
    const gone = await del(name)
    expect([gone.status, gone.text]).toEqual([204, ''])
    expect((await get(name)).body).toEqual({ error: `budget ${name} not found`, code: 404 })
    expect((await del(name)).status).toBe(404)
    const audit = (await call(s.api, 'GET', `/api/audit?limit=200`, undefined, admin)).body as any[]
    expect(audit.find((e) => e.action === 'budget.put' && e.resource === `budgets/${name}`)).toMatchObject({ actor: 'admin', outcome: 'success' })
    expect(audit.find((e) => e.action === 'budget.delete' && e.resource === `budgets/${name}` && e.outcome === 'success')).toBeDefined()
  })

  test('bad input is 400 naming the field, and changes nothing', async () => {
    const ok = { scope: 'agent', target: 'ada', limit_usd: 1, window: 'day', action: 'deny' }
    const cases: [string, unknown, string][] = [
      ['bad name!', ok, 'invalid budget name'],
      ['x'.repeat(101), ok, 'invalid budget name'],
      ['b1', { ...ok, scope: 'team' }, 'invalid scope'],
      ['b1', { ...ok, target: undefined }, 'target is required for scope agent'],
      ['b1', { ...ok, target: '  ' }, 'target is required'],
      ['b1', { ...ok, scope: 'task', target: 'abc' }, 'invalid target'],
      ['b1', { ...ok, limit_usd: 0 }, 'invalid limit_usd'],
      ['b1', { ...ok, limit_usd: -3 }, 'invalid limit_usd'],
      ['b1', { ...ok, limit_usd: '5' }, ''],
      ['b1', { ...ok, window: 'month' }, 'invalid window'],
      ['b1', { ...ok, action: 'block' }, 'invalid action'],
      ['b1', '[]', ''],
    ]
    for (const [name, body, message] of cases) {
      const r = await put(encodeURIComponent(name), body)
      expect([name, r.status, r.body.code]).toEqual([name, 400, 400])
      expect(r.body.error).toContain(message)
    }
    expect((await get('b1')).status).toBe(404)
  })

  test('an agent token may read budgets, not change them (403, before the body is read); a viewer reads only', async () => {
    const name = uniq('roles')
    expect((await put(name, { scope: 'all', limit_usd: 100, window: 'day', action: 'warn' })).status).toBe(201)
    expect((await put(name, 'not even json', agent)).body).toEqual({ error: 'this call needs the admin token (an agent token may not make it)', code: 403 })
    expect((await del(name, agent)).status).toBe(403)
    expect((await put(name, {}, viewer)).body).toEqual({ error: 'read-only token', code: 403 })
    expect((await del(name, viewer)).status).toBe(403)
    // other spellings of the path change nothing either (refused, or served by no route)
    const change = { scope: 'all', limit_usd: 1, window: 'day', action: 'deny' }
    for (const path of [`/api/budgets/${name}/`, `/api//budgets/${name}`, `/api/%62udgets/${name}`, `/API/budgets/${name}`]) {
      expect([403, 404]).toContain((await call(s.api, 'PUT', path, change, agent)).status)
      expect([403, 404]).toContain((await call(s.api, 'DELETE', path, undefined, agent)).status)
    }
    for (const who of [agent, viewer]) {
      expect((await get(name, who)).body).toMatchObject({ name, limit_usd: 100 })
      expect((await call(s.api, 'GET', '/api/budgets', undefined, who)).status).toBe(200)
    }
    expect((await get(name)).body.limit_usd).toBe(100)
    expect((await del(name)).status).toBe(204)
  })
})

describe('spend', () => {
  test('each scope sums what falls in it, recorded before the budget (summed once) and after (added as recorded)', async () => {
    const who = await register({ api: s.api }, { name: uniq('agent') }, admin)
    const project = uniq('proj')
    const queue = uniq('queue')
    const task = (await call(s.api, 'POST', `/api/queues/${queue}/tasks`, { title: 't' }, admin)).body
    const other = (await call(s.api, 'POST', `/api/queues/${uniq('queue')}/tasks`, { title: 'o' }, admin)).body
    await spend({ instance_id: who.id, cost_usd: 0.5 })
    await spend({ project, cost_usd: 0.25 })
    await spend({ task_id: task.id, cost_usd: 0.125 })
    await spend({ task_id: other.id, cost_usd: 4 })
    const names = { agent: uniq('a'), project: uniq('p'), task: uniq('t'), queue: uniq('q') }
    const target = { agent: who.name, project, task: String(task.id), queue }
    for (const scope of ['agent', 'project', 'task', 'queue'] as const)
      expect((await put(names[scope], { scope, target: target[scope], limit_usd: 100, window: 'day', action: 'warn' })).body.spent_usd).toBe(
        { agent: 0.5, project: 0.25, task: 0.125, queue: 0.125 }[scope],
      )
    await spend({ instance_id: who.id, project, task_id: task.id, cost_usd: 1 })
    const spent = async (scope: keyof typeof names) => (await get(names[scope])).body.spent_usd
    expect([await spent('agent'), await spent('project'), await spent('task'), await spent('queue')]).toEqual([1.5, 1.25, 1.125, 1.125])
    // all: every record; the same usage is counted once however it came (OTLP too)
    const all = uniq('all')
    const before = (await call(s.api, 'GET', '/api/llm/usage/summary', undefined, admin)).body.total.total_cost_usd
    expect((await put(all, { scope: 'all', target: 'ignored', limit_usd: 1000, window: 'total', action: 'warn' })).body).toMatchObject({ target: '', spent_usd: before })
    const h = await session(who.name, project)
    const now = claudeJsonAt('logs', h.id, Date.now())
    await call(s.api, 'POST', '/v1/logs', now, { ...admin, 'content-type': 'application/json' })
    await call(s.api, 'POST', '/v1/logs', now, { ...admin, 'content-type': 'application/json' })
    expect((await get(all)).body.spent_usd).toBeCloseTo(before + 0.0005115, 9)
    expect(await spent('agent')).toBeCloseTo(1.5005115, 9)
    expect(await spent('project')).toBeCloseTo(1.2505115, 9)
    for (const name of [...Object.values(names), all]) await del(name)
  })

  test('a record dated in an earlier window (a late OTLP batch) is not spend of the current one; a total budget counts it', async () => {
    const who = await register({ api: s.api }, { name: uniq('agent') }, admin)
    const project = uniq('proj')
    const day = uniq('day')
    const total = uniq('total')
    expect((await put(day, { scope: 'project', target: project, limit_usd: 10, window: 'day', action: 'warn' })).status).toBe(201)
    expect((await put(total, { scope: 'project', target: project, limit_usd: 10, window: 'total', action: 'warn' })).status).toBe(201)
    const h = await session(who.name, project)
    const yesterday = claudeJsonAt('logs', h.id, Date.now() - 86_400_000)
    expect((await call(s.api, 'POST', '/v1/logs', yesterday, { ...admin, 'content-type': 'application/json' })).status).toBe(200)
    expect((await call(s.api, 'GET', `/api/llm/usage?session_tag=${h.id}`, undefined, admin)).body.length).toBe(1)
    expect((await get(day)).body.spent_usd).toBe(0)
    expect((await get(total)).body.spent_usd).toBeCloseTo(0.0005115, 9)
    // what a PUT sums over the window's records says the same
    expect((await put(day, { scope: 'project', target: project, limit_usd: 10, window: 'week', action: 'warn' })).status).toBe(200)
    expect((await put(day, { scope: 'project', target: project, limit_usd: 10, window: 'day', action: 'warn' })).body.spent_usd).toBe(0)
    for (const name of [day, total]) await del(name)
  })

  test('budget.warning at 80% and budget.exceeded at 100%, each once per window; raising the limit sends them again', async () => {
    const project = uniq('proj')
    const name = uniq('ev')
    await put(name, { scope: 'project', target: project, limit_usd: 1, window: 'day', action: 'warn' })
    const mine = async (topic: string) => (await events(topic)).filter((e) => e.data.name === name).map((e) => e.data)
    await spend({ project, cost_usd: 0.5 })
    expect(await mine('budget.warning')).toEqual([])
    await spend({ project, cost_usd: 0.3 })
    expect(await mine('budget.warning')).toEqual([{ name, scope: 'project', target: project, limit_usd: 1, spent_usd: 0.8 }])
    expect(await mine('budget.exceeded')).toEqual([])
    await spend({ project, cost_usd: 0.25 })
    await spend({ project, cost_usd: 0.25 })
    expect(await mine('budget.warning')).toHaveLength(1)
    expect(await mine('budget.exceeded')).toEqual([{ name, scope: 'project', target: project, limit_usd: 1, spent_usd: 1.05 }])
    await put(name, { scope: 'project', target: project, limit_usd: 1.5, window: 'day', action: 'warn' })
    expect(await mine('budget.warning')).toHaveLength(2)
    expect(await mine('budget.exceeded')).toHaveLength(1)
    await del(name)
  })
})

describe('windows', () => {
  test('a day starts at UTC midnight, a week on Monday at UTC midnight, total at the epoch', () => {
    const sunday = Date.UTC(2026, 10, 29, 23, 59, 59)
    expect(windowStart('day', sunday)).toBe('2026-11-29T00:00:00.000Z')
    expect(windowStart('week', sunday)).toBe('2026-11-23T00:00:00.000Z')
    expect(windowStart('week', Date.UTC(2026, 10, 23, 0, 0, 0))).toBe('2026-11-23T00:00:00.000Z')
    expect(windowStart('total', sunday)).toBe('1970-01-01T00:00:00.000Z')
  })

  test('a new window lifts an exceeded budget: what an older window spent counts for nothing, and its events come again', async () => {
    const agentName = uniq('window')
    const h = await session(agentName)
    const name = uniq('win')
    await put(name, { scope: 'agent', target: agentName, limit_usd: 0.5, window: 'day', action: 'deny' })
    await spend({ instance_id: h.instance, cost_usd: 1 })
    expect((await h.send('PreToolUse', bash)).hookSpecificOutput.permissionDecision).toBe('deny')
    // the stored spend is yesterday's, as it is after midnight UTC
    const yesterday = new Date(Date.parse(midnight().toISOString()) - 86_400_000).toISOString()
    await rawQuery(s.dataDir, 'UPDATE budgets SET window_start = ?, warned_window = ?, exceeded_window = ? WHERE name = ?', yesterday, yesterday, yesterday, name)
    expect((await get(name)).body).toMatchObject({ spent_usd: 0, window_start: midnight().toISOString() })
    // Written behind the server's back: the hooks read the reached budgets again within a second (services/budgets.ts).
    await Bun.sleep(1100)
    expect(await h.send('PreToolUse', bash)).toEqual({})
    await spend({ instance_id: h.instance, cost_usd: 0.75 })
    expect((await get(name)).body.spent_usd).toBe(0.75)
    expect((await events('budget.exceeded')).filter((e) => e.data.name === name).map((e) => e.data.spent_usd)).toEqual([1, 0.75])
    expect((await h.send('PreToolUse', bash)).hookSpecificOutput.permissionDecision).toBe('deny')
    await del(name)
  })
})

describe('enforcement', () => {
  test('deny: every PreToolUse of a session in scope is denied naming the budget, what was spent and who may raise it; raising the limit lifts it', async () => {
    const agentName = uniq('spender')
    const h = await session(agentName)
    const bystander = await session(uniq('bystander'), h.project + '-other')
    const name = uniq('deny')
    await put(name, { scope: 'agent', target: agentName, limit_usd: 0.5, window: 'day', action: 'deny' })
    expect(await h.send('PreToolUse', bash)).toEqual({})
    await spend({ instance_id: h.instance, cost_usd: 0.6 })
    const denied = (await h.send('PreToolUse', bash)).hookSpecificOutput
    expect(denied.permissionDecision).toBe('deny')
    expect(denied.permissionDecisionReason).toContain(`budget "${name}" (agent ${agentName}) is exceeded: $0.6000 spent of $0.5000 this day`)
    expect(denied.permissionDecisionReason).toContain('admin token')
    expect(denied.permissionDecisionReason).toContain(`muster budgets set ${name} --limit`)
    expect(denied.permissionDecisionReason).toContain('or it lifts when the next day starts (UTC).')
    // an edit too, and the session's other events go on
    const edit = await h.send('PreToolUse', { tool_name: 'Write', tool_input: { file_path: `/tmp/${h.project}/a.ts`, content: '' } })
    expect(edit.hookSpecificOutput.permissionDecision).toBe('deny')
    expect(await h.send('PostToolUse', bash)).toEqual({})
    expect(await bystander.send('PreToolUse', bash)).toEqual({})
    await put(name, { scope: 'agent', target: agentName, limit_usd: 2, window: 'day', action: 'deny' })
    expect(await h.send('PreToolUse', bash)).toEqual({})
    await del(name)
  })

  test('deny: a claim is 409 {budget} for a claimer in scope, or for a task in scope; nothing is claimed', async () => {
    const claimer = await session(uniq('claimer'))
    const queue = uniq('queue')
    const task = (await call(s.api, 'POST', `/api/queues/${queue}/tasks`, { title: 'costly', project: claimer.project }, admin)).body
    const claim = (token: string) => call(s.api, 'POST', `/api/queues/${queue}/claim`, {}, { ...admin, 'x-instance-token': token })
    const byQueue = uniq('q')
    await put(byQueue, { scope: 'queue', target: queue, limit_usd: 0.1, window: 'day', action: 'deny' })
    const earlier = (await call(s.api, 'POST', `/api/queues/${queue}/tasks`, { title: 'done before' }, admin)).body
    await spend({ task_id: earlier.id, cost_usd: 0.2 })
    const r = await claim(claimer.token)
    expect(r.status).toBe(409)
    expect(r.body).toMatchObject({ code: 409, budget: byQueue })
    expect(r.body.error).toContain(`budget "${byQueue}" (queue ${queue}) is exceeded`)
    expect((await call(s.api, 'GET', `/api/tasks/${task.id}`, undefined, admin)).body.status).toBe('ready')
    await del(byQueue)
    // the claimer's own budget (by its agent name)
    const mine = uniq('mine')
    const name = ((await call(s.api, 'GET', `/api/instances/${claimer.instance}`, undefined, admin)).body as any).name
    await put(mine, { scope: 'agent', target: name, limit_usd: 0.01, window: 'total', action: 'deny' })
    await spend({ instance_id: claimer.instance, cost_usd: 0.02 })
    expect((await claim(claimer.token)).body).toMatchObject({ code: 409, budget: mine })
    // a warn budget does not stop claims
    await put(mine, { scope: 'agent', target: name, limit_usd: 0.01, window: 'total', action: 'warn' })
    expect((await claim(claimer.token)).status).toBe(200)
    await del(mine)
  })

  test('warn: one line in the next hook context of each session in scope, once per session; other sessions see nothing', async () => {
    const project = uniq('proj')
    const a = await session(uniq('w1'), project)
    const b = await session(uniq('w2'), project)
    const outside = await session(uniq('w3'))
    const name = uniq('warn')
    await put(name, { scope: 'project', target: project, limit_usd: 1, window: 'day', action: 'warn' })
    await spend({ project, cost_usd: 1.25 })
    expect(await a.send('PreToolUse', bash)).toEqual({})
    const first = (await a.send('PostToolUse', bash)).hookSpecificOutput.additionalContext as string
    expect(first.split('\n').filter((l) => l.includes(name))).toEqual([
      `Muster budget "${name}" (project ${project}) is over its limit: $1.25 spent of $1.00 this day. Keep further model calls short, and tell the user if the work needs more.`,
    ])
    expect(await a.send('PostToolUse', bash)).toEqual({})
    expect((await b.send('UserPromptSubmit', { prompt: 'go on' })).hookSpecificOutput.additionalContext).toContain(name)
    expect(await outside.send('PostToolUse', bash)).toEqual({})
    await del(name)
  })
})

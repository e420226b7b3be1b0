// Retrying a failed or cancelled task over real HTTP (status codes, what the task keeps,
// event and audit, dependencies, held claims woken), and the CLI: `task retry` and the
// reason `task claim` gives on stderr when it gets nothing.
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { call, register as registerOn, startServer, type TestServer } from './helpers'
import { removeWorkdirs, runCli, workdir } from './cli-run'

let s: TestServer
beforeAll(async () => (s = await startServer()))
afterAll(async () => {
  await s.cleanup()
  removeWorkdirs()
})

type Res = Awaited<ReturnType<typeof call>>
const api = (method: string, path: string, body?: unknown, token?: string): Promise<Res> =>
  call(s.api, method, path, body, token ? { 'x-instance-token': token } : {})
const register = (name: string, capabilities: string[] = []) => registerOn(s, { name, capabilities })
const add = async (queue: string, body: Record<string, unknown>) => {
  const r = await api('POST', `/api/queues/${queue}/tasks`, body)
  expect(r.status).toBe(201)
  return r.body
}
const claim = (queue: string, token: string, body?: Record<string, unknown>) => api('POST', `/api/queues/${queue}/claim`, body, token)
const retry = (id: number | string, token?: string) => api('POST', `/api/tasks/${id}/retry`, undefined, token)
const get = async (id: number) => (await api('GET', `/api/tasks/${id}`)).body
const events = async (topic: string) => ((await api('GET', `/api/events/history?topic=${topic}&last=1000`)).body as any[]).sort((a, b) => a.id - b.id)
const audits = async (action: string) => (await api('GET', `/api/audit?action=${action}&limit=50`)).body as any[]

/** A task of `queue` that failed: claimed once by `worker` and nacked with `error`, its only attempt. */
async function failed(queue: string, worker: { token: string }, error = 'tests failed', extra: Record<string, unknown> = {}) {
  const t = await add(queue, { title: `to fail in ${queue}`, max_attempts: 1, ...extra })
  const c = (await claim(queue, worker.token)).body
  expect(c.id).toBe(t.id)
  const n = await api('POST', `/api/tasks/${t.id}/nack`, { claim_id: c.claim_id, error }, worker.token)
  expect(n.body).toMatchObject({ status: 'failed', attempts: 1, last_error: error })
  return n.body
}

describe('POST /api/tasks/{id}/retry', () => {
  test('a failed task: 200, ready, attempts 0, no claim, last_error kept; event task.retried and audit task.retry; claimable again', async () => {
    const w = await register('retry-worker')
    const f = await failed('retry-q', w, 'compiler crashed')
    expect(f.claimed_by).toBe(w.id)
    const r = await retry(f.id)
    expect(r.status).toBe(200)
    expect(r.body).toMatchObject({
      id: f.id,
      status: 'ready',
      attempts: 0,
      claimed_by: null,
      claim_id: null,
      visible_until: null,
      available_at: null,
      reservation_id: null,
      last_error: 'compiler crashed',
      fence: f.fence,
      result: null,
      notes: [],
    })
    expect(Date.parse(r.body.updated_at)).toBeGreaterThanOrEqual(Date.parse(f.updated_at))
    expect(await get(f.id)).toEqual(r.body)

    const ev = (await events('task.retried')).filter((e) => e.data.id === f.id)
    expect(ev).toHaveLength(1)
    expect(ev[0]).toMatchObject({
      source: 'coordination',
      data: { id: f.id, queue: 'retry-q', status: 'ready', previous_status: 'failed', previous_attempts: 1, last_error: 'compiler crashed' },
    })
    expect(ev[0].data.instance_id).toBeUndefined()
    const entry = (await audits('task.retry')).find((a) => a.resource === `tasks/${f.id}/retry`)
    expect(entry).toMatchObject({ action: 'task.retry', outcome: 'success', detail: `task ${f.id} (was failed after 1 of 1 attempts) now ready` })

    // A fresh run: attempts count from 1 again, and a nack spends them as before.
    const again = (await claim('retry-q', w.token)).body
    expect(again).toMatchObject({ id: f.id, status: 'claimed', attempts: 1, claimed_by: w.id })
    expect(again.fence).toBeGreaterThan(f.fence)
    const n = await api('POST', `/api/tasks/${f.id}/nack`, { claim_id: again.claim_id, error: 'again' }, w.token)
    expect(n.body).toMatchObject({ status: 'failed', last_error: 'again' })
  })

  test('a cancelled task: ready again; one cancelled while claimed lost its claim and its reservation; the caller instance is in the event', async () => {
    const w = await register('retry-cancel-worker')
    const t = await add('retry-cancel-q', { title: 'edit', project: 'retry-p', paths: ['src/**'] })
    const c = (await claim('retry-cancel-q', w.token)).body
    expect(c.reservation_id).toBeString()
    const cancelled = (await api('DELETE', `/api/tasks/${t.id}`)).body
    expect(cancelled).toMatchObject({ status: 'cancelled', reservation_id: null })
    expect((await api('GET', `/api/reservations/${c.reservation_id}`)).status).toBe(404)

    const r = await retry(t.id, w.token)
    expect(r.status).toBe(200)
    expect(r.body).toMatchObject({ status: 'ready', attempts: 0, claimed_by: null, reservation_id: null, last_error: null })
    const ev = (await events('task.retried')).find((e) => e.data.id === t.id)
    expect(ev.data).toMatchObject({ status: 'ready', previous_status: 'cancelled', previous_attempts: 1, instance_id: w.id, last_error: null })
    // Claimed again, it takes its files again.
    const c2 = (await claim('retry-cancel-q', w.token)).body
    expect(c2).toMatchObject({ id: t.id, attempts: 1 })
    expect((await api('GET', `/api/reservations/${c2.reservation_id}`)).body).toMatchObject({ project: 'retry-p', paths: ['src/**'], reason: `task ${t.id}` })

    // Never claimed: cancelled while ready, retried to ready.
    const idle = await add('retry-cancel-q', { title: 'idle' })
    await api('DELETE', `/api/tasks/${idle.id}`)
    expect((await retry(idle.id)).body).toMatchObject({ status: 'ready', attempts: 0 })
  })

  test('409 for blocked, ready, claimed and done, naming the status and what to do; nothing changes, no event', async () => {
    const w = await register('retry-409')
    const done = await add('retry-409-q', { title: 'done', priority: 9 })
    const d = (await claim('retry-409-q', w.token)).body
    await api('POST', `/api/tasks/${done.id}/ack`, { claim_id: d.claim_id, result: { ok: 1 } }, w.token)
    const claimed = await add('retry-409-q', { title: 'claimed', priority: 5 })
    await claim('retry-409-q', w.token)
    const ready = await add('retry-409-q', { title: 'ready' })
    const blocked = await add('retry-409-q', { title: 'blocked', depends_on: [ready.id] })
    const cases: [any, string, string][] = [
      [done, 'done', 'add a new task'],
      [claimed, 'claimed', 'its claimer can nack it'],
      [ready, 'ready', 'waits for a claimer'],
      [blocked, 'blocked', 'waits for its dependencies'],
    ]
    for (const [t, status, advice] of cases) {
      const before = await get(t.id)
      const r = await retry(t.id)
      expect(r.status).toBe(409)
      expect(r.body).toMatchObject({ code: 409, status })
      expect(r.body.error).toStartWith(`task ${t.id} is ${status}: only a failed or cancelled task can be retried; `)
      expect(r.body.error).toContain(advice)
      expect(await get(t.id)).toEqual(before)
    }
    const ids = new Set(cases.map(([t]) => t.id))
    expect((await events('task.retried')).filter((e) => ids.has(e.data.id))).toEqual([])
    expect((await audits('task.retry')).filter((a) => a.resource === `tasks/${done.id}/retry`)).toMatchObject([{ outcome: 'error', detail: 'status 409' }])
  })

  test('404 for an unknown or malformed id', async () => {
    expect(await retry(999_999_999)).toMatchObject({ status: 404, body: { error: 'task 999999999 not found', code: 404 } })
    expect((await retry('abc')).status).toBe(404)
    expect((await retry(0)).status).toBe(404)
    expect((await api('DELETE', '/api/tasks/999999999')).body).toEqual({ error: 'task 999999999 not found', code: 404 })
  })

  test('dependencies: a dependent failed by its dependency is 409 until that is retried, then blocked until it is done', async () => {
    const w = await register('retry-deps')
    const a = await failed('retry-deps-q', w, 'broken', { priority: 1 })
    // Added after a failed: it starts failed, as a dependent of a failed task does.
    const bt = await add('retry-deps-q', { title: 'after a', depends_on: [a.id] })
    expect(bt).toMatchObject({ status: 'failed', last_error: `dependency ${a.id} failed` })

    const early = await retry(bt.id)
    expect(early.status).toBe(409)
    expect(early.body).toMatchObject({ code: 409, status: 'failed', dependency: a.id })
    expect(early.body.error).toBe(`task ${bt.id} depends on task ${a.id}, which is failed: retry task ${a.id} first, then this one`)

    expect((await retry(a.id)).body.status).toBe('ready')
    const rb = await retry(bt.id)
    expect(rb.body).toMatchObject({ status: 'blocked', attempts: 0, last_error: `dependency ${a.id} failed` })
    const ev = (await events('task.retried')).find((e) => e.data.id === bt.id)
    expect(ev.data.status).toBe('blocked')

    const c = (await claim('retry-deps-q', w.token)).body
    expect(c.id).toBe(a.id)
    await api('POST', `/api/tasks/${a.id}/ack`, { claim_id: c.claim_id }, w.token)
    expect((await get(bt.id)).status).toBe('ready')
  })

  test('a claim held with wait_ms is answered by the retry itself', async () => {
    const w = await register('retry-held')
    const other = await register('retry-held-other')
    const f = await failed('retry-held-q', other)
    const t0 = Date.now()
    const held = claim('retry-held-q', w.token, { wait_ms: 20_000 })
    await Bun.sleep(300)
    expect((await retry(f.id)).status).toBe(200)
    const got = await held
    expect(got.status).toBe(200)
    expect(got.body).toMatchObject({ id: f.id, status: 'claimed', claimed_by: w.id, attempts: 1 })
    expect(Date.now() - t0).toBeLessThan(3000)
  })
})

describe('muster task retry, and why a claim got nothing', () => {
  test('task retry: prints the task; 409 is exit 1 with the server error', async () => {
    const dir = workdir({ server: s.api })
    const cli = (...args: string[]) => runCli(args, { cwd: dir })
    expect((await cli('register', 'cli-retrier')).code).toBe(0)
    const t = (await cli('task', 'add', 'cli-retry-q', '--title', 'flaky', '--max-attempts', '1')).json
    await cli('task', 'claim', 'cli-retry-q')
    expect((await cli('task', 'nack', String(t.id), '--error', 'boom')).json.status).toBe('failed')

    const r = await cli('task', 'retry', String(t.id))
    expect(r.code).toBe(0)
    expect(r.json).toMatchObject({ id: t.id, status: 'ready', attempts: 0, last_error: 'boom' })
    const again = await cli('task', 'retry', String(t.id))
    expect(again.code).toBe(1)
    expect(again.error).toMatchObject({ code: 409, status: 'ready' })
    expect((await cli('task', 'retry', '999999999')).error).toEqual({ error: 'task 999999999 not found', code: 404 })
  })

  test('task claim that gets nothing: null on stdout, exit 0, the reason on stderr', async () => {
    const dir = workdir({ server: s.api })
    const cli = (...args: string[]) => runCli(args, { cwd: dir })
    expect((await cli('register', 'cli-hinted', '--capabilities', 'python')).code).toBe(0)

    // An empty queue.
    const empty = await cli('task', 'claim', 'cli-hint-empty')
    expect(empty.code).toBe(0)
    expect(empty.stdout.trim()).toBe('null')
    expect(empty.stderr).toBe(
      'muster: nothing to claim: no ready task in queue cli-hint-empty (the queue has no tasks); ' +
        'add one with `muster task add cli-hint-empty --title …` or hold with --wait 30s\n',
    )

    // Tasks, none ready.
    const helper = await register('cli-hint-helper')
    await add('cli-hint-busy', { title: 'taken' })
    await claim('cli-hint-busy', helper.token)
    const busy = await cli('task', 'claim', 'cli-hint-busy', '--wait', '200ms')
    expect(busy.stdout.trim()).toBe('null')
    expect(busy.stderr).toContain('no ready task in queue cli-hint-busy (1 claimed)')

    // Ready tasks this instance cannot take: capabilities, a delay, files reserved by another instance.
    await add('cli-hint-q', { title: 'gpu', requires: ['gpu', 'python'] })
    await add('cli-hint-q', { title: 'gpu linux', requires: ['gpu', 'linux'] })
    const delayed = await add('cli-hint-q', { title: 'delayed', priority: 10 })
    const c = (await claim('cli-hint-q', helper.token)).body
    expect(c.id).toBe(delayed.id)
    await api('POST', `/api/tasks/${delayed.id}/nack`, { claim_id: c.claim_id, delay_ms: 600_000 }, helper.token)
    const r = await api('POST', '/api/reservations', { project: 'cli-hint-p', paths: ['src/**'] }, helper.token)
    expect(r.status).toBe(201)
    await add('cli-hint-q', { title: 'files', project: 'cli-hint-p', paths: ['src/a.ts'] })

    const none = await cli('task', 'claim', 'cli-hint-q')
    expect(none.code).toBe(0)
    expect(none.stdout.trim()).toBe('null')
    const line = none.stderr.trim()
    expect(line).toStartWith('muster: nothing to claim: 4 ready tasks in queue cli-hint-q but none this instance can take; of all 4: ')
    expect(line).toContain('2 need capabilities this instance lacks: gpu, linux (it has: python; if it really has them: `muster capabilities python,gpu,linux`)')
    expect(line).toMatch(/1 is delayed after a nack, the first claimable at \d{4}-\d\d-\d\dT/)
    expect(line).toContain('1 names files that another instance may hold reserved (`muster reservations --project cli-hint-p` shows who)')
    expect(line.split('\n')).toHaveLength(1)

    // With the capability it takes one; the hint is only for an empty claim.
    expect((await cli('capabilities', 'python,gpu')).code).toBe(0)
    const got = await cli('task', 'claim', 'cli-hint-q')
    expect(got.json).toMatchObject({ title: 'gpu', status: 'claimed' })
    expect(got.stderr).toBe('')
  })
})

// Task hand-off over real HTTP: tasks that name their files are claimed together
// with an exclusive reservation of them (and only when it could be granted), every
// way a claim ends releases it, and notes follow the task from attempt to attempt.
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { call, eventually, register, startServer, type Agent, type TestServer } from './helpers'

let s: TestServer
beforeAll(async () => (s = await startServer()))
afterAll(() => s.cleanup())

let n = 0
const project = () => `handoff-${++n}-${Math.random().toString(36).slice(2, 7)}`
const api = (method: string, path: string, body?: unknown, who?: Agent | null) => call(s.api, method, path, body, who?.h ?? {})
const add = async (queue: string, body: Record<string, unknown>) => {
  const r = await api('POST', `/api/queues/${queue}/tasks`, body)
  expect(r.status).toBe(201)
  return r.body
}
const claim = (queue: string, who: Agent, body: Record<string, unknown> = {}) => api('POST', `/api/queues/${queue}/claim`, body, who)
const get = async (id: number) => (await api('GET', `/api/tasks/${id}`)).body
const reservation = async (id: string) => api('GET', `/api/reservations/${id}`)
const events = async (topic: string) => (await api('GET', `/api/events/history?topic=${topic}&after_id=0&last=1000`)).body as any[]
/** The reservation.released events of one reservation, as [reason, instance_id]. */
const releases = async (id: string) => (await events('reservation.released')).filter((e) => e.data.id === id).map((e) => [e.data.reason, e.data.instance_id])

describe('create', () => {
  test('project and paths are checked as for reservations; paths without project 400; nothing is created', async () => {
    const bad: [Record<string, unknown>, string][] = [
      [{ paths: ['src/**'] }, 'project is required'],
      [{ project: '', paths: ['a'] }, 'project is required'],
      [{ project: 'p', paths: [] }, 'paths is required'],
      [{ project: 'p', paths: ['/etc/passwd'] }, 'leading /'],
      [{ project: 'p', paths: ['src/../../x'] }, 'invalid paths'],
      [{ project: 'p', paths: [''] }, 'invalid paths'],
      [{ project: 'p', paths: Array.from({ length: 101 }, (_, i) => `f${i}`) }, 'invalid paths'],
    ]
    for (const [body, message] of bad) {
      const r = await api('POST', '/api/queues/handoff-bad/tasks', { title: 'x', ...body })
      expect({ body, status: r.status }).toEqual({ body, status: 400 })
      expect(r.body.error).toContain(message)
    }
    expect((await api('GET', '/api/queues/handoff-bad/tasks')).body).toEqual([])

    const alone = await add('handoff-create', { title: 'project only', project: 'web' })
    expect(alone).toMatchObject({ project: 'web', paths: null, reservation_id: null, notes: [] })
    const named = await add('handoff-create', { title: 'with files', project: 'web', paths: ['src/**', 'README.md'] })
    expect(named).toMatchObject({ status: 'ready', project: 'web', paths: ['src/**', 'README.md'], reservation_id: null, notes: [] })
    expect(await get(named.id)).toEqual(named)
  })
})

describe('claim', () => {
  test('reserves the paths in the same unit: exclusive, no expiry, reason "task <id>"; the task shows reservation_id', async () => {
    const w = await register(s, 'handoff-claimer')
    const p = project()
    const t = await add('handoff-claim', { title: 'edit', project: p, paths: ['src/**'] })
    const c = await claim('handoff-claim', w)
    expect(c.status).toBe(200)
    expect(c.body).toMatchObject({ id: t.id, status: 'claimed', notes: [] })
    expect(c.body.reservation_id).toBeString()
    const listed = (await api('GET', `/api/reservations?project=${p}`)).body
    expect(listed).toEqual([
      {
        id: c.body.reservation_id,
        project: p,
        instance_id: w.id,
        paths: ['src/**'],
        exclusive: true,
        fence: expect.any(Number),
        reason: `task ${t.id}`,
        created_at: expect.any(String),
        expires_at: null,
      },
    ])
    expect((await get(t.id)).reservation_id).toBe(c.body.reservation_id)
    expect((await events('reservation.granted')).some((e) => e.data.id === c.body.reservation_id)).toBe(true)
    // Others now meet the task's reservation like any other.
    const other = await register(s, 'handoff-other')
    expect((await api('POST', '/api/reservations', { project: p, paths: ['src/a.ts'] }, other)).status).toBe(409)
  })

  test('a task whose paths another instance holds (exclusive or shared) is skipped and stays ready; the next one is claimed', async () => {
    const holder = await register(s, 'handoff-holder')
    const w = await register(s, 'handoff-skipper')
    const p = project()
    expect((await api('POST', '/api/reservations', { project: p, paths: ['src/**'] }, holder)).status).toBe(201)
    expect((await api('POST', '/api/reservations', { project: p, paths: ['docs/*.md'], exclusive: false }, holder)).status).toBe(201)
    const blocked = await add('handoff-skip', { title: 'src', project: p, paths: ['src/a.ts'], priority: 10 })
    const shared = await add('handoff-skip', { title: 'docs', project: p, paths: ['docs/x.md'], priority: 5 })
    const free = await add('handoff-skip', { title: 'lib', project: p, paths: ['lib/**'] })
    const plain = await add('handoff-skip', { title: 'no files' })

    const c = await claim('handoff-skip', w)
    expect(c.body).toMatchObject({ id: free.id, status: 'claimed' })
    expect((await claim('handoff-skip', w)).body.id).toBe(plain.id)
    expect((await claim('handoff-skip', w)).status).toBe(204)
    for (const t of [blocked, shared]) expect(await get(t.id)).toMatchObject({ status: 'ready', attempts: 0, reservation_id: null })
    // The holder's own reservations never stand in its way.
    const own = await claim('handoff-skip', holder)
    expect(own.body).toMatchObject({ id: blocked.id, status: 'claimed' })
  })

  test('the scan goes on past a batch of held-back tasks', async () => {
    const holder = await register(s, 'handoff-wall')
    const w = await register(s, 'handoff-deep')
    const p = project()
    await api('POST', '/api/reservations', { project: p, paths: ['**'] }, holder)
    for (let i = 0; i < 70; i++) await add('handoff-deep', { title: `held ${i}`, project: p, paths: [`m${i}/**`] })
    const free = await add('handoff-deep', { title: 'free', project: project(), paths: ['m0/**'] })
    expect((await claim('handoff-deep', w)).body.id).toBe(free.id)
    expect((await claim('handoff-deep', w)).status).toBe(204)
  })

  test('a held claim is woken when the blocking reservation is released', async () => {
    const holder = await register(s, 'handoff-blocker')
    const w = await register(s, 'handoff-patient')
    const p = project()
    const r = (await api('POST', '/api/reservations', { project: p, paths: ['app/**'] }, holder)).body
    const t = await add('handoff-wake', { title: 'app', project: p, paths: ['app/main.ts'] })
    const t0 = Date.now()
    const held = claim('handoff-wake', w, { wait_ms: 20_000 })
    await Bun.sleep(300)
    expect((await api('DELETE', `/api/reservations/${r.id}`, undefined, holder)).status).toBe(200)
    const got = await held
    expect(got.body).toMatchObject({ id: t.id, status: 'claimed', claimed_by: w.id })
    expect(Date.now() - t0).toBeLessThan(3000)
  })
})

describe('the claim ends: its reservation is released', () => {
  test('ack, nack, cancel and the last nack (failed): reason released, reservation_id cleared', async () => {
    const w = await register(s, 'handoff-ender')
    const p = project()
    const endings: [string, (t: any, c: any) => Promise<any>, string][] = [
      ['ack', (t, c) => api('POST', `/api/tasks/${t.id}/ack`, { claim_id: c.claim_id }, w), 'done'],
      ['nack', (t, c) => api('POST', `/api/tasks/${t.id}/nack`, { claim_id: c.claim_id, delay_ms: 600_000 }, w), 'ready'],
      ['cancel', (t) => api('DELETE', `/api/tasks/${t.id}`), 'cancelled'],
      ['last nack', (t, c) => api('POST', `/api/tasks/${t.id}/nack`, { claim_id: c.claim_id }, w), 'failed'],
    ]
    for (const [how, end, status] of endings) {
      const t = await add('handoff-end', { title: how, project: p, paths: [`${how}/**`], max_attempts: how === 'last nack' ? 1 : 3 })
      const c = (await claim('handoff-end', w)).body
      expect({ how, id: c.id }).toEqual({ how, id: t.id })
      const r = await end(t, c)
      expect({ how, status: r.body.status, reservation_id: r.body.reservation_id }).toEqual({ how, status, reservation_id: null })
      expect((await reservation(c.reservation_id)).status).toBe(404)
      expect(await releases(c.reservation_id)).toEqual([['released', w.id]])
    }
  })

  test('visibility timeout: released when the claim is requeued', async () => {
    const w = await register(s, 'handoff-slow')
    const t = await add('handoff-vis', { title: 'slow', project: project(), paths: ['x/**'] })
    const c = (await claim('handoff-vis', w, { visibility_ms: 1000 })).body
    await eventually(async () => (await get(t.id)).status === 'ready', 4000)
    expect((await get(t.id)).reservation_id).toBeNull()
    expect(await releases(c.reservation_id)).toEqual([['released', w.id]])
  })

  test('the claimer deregisters: released once, with reason holder_deregistered', async () => {
    const w = await register(s, 'handoff-leaver')
    const p = project()
    const t = await add('handoff-dereg', { title: 'orphan', project: p, paths: ['y/**'] })
    const c = (await claim('handoff-dereg', w)).body
    const other = (await api('POST', '/api/reservations', { project: p, paths: ['z/**'] }, w)).body
    expect((await api('DELETE', `/api/instances/${w.id}`)).status).toBe(200)
    expect(await get(t.id)).toMatchObject({ status: 'ready', reservation_id: null })
    expect(await releases(c.reservation_id)).toEqual([['holder_deregistered', w.id]])
    expect(await releases(other.id)).toEqual([['holder_deregistered', w.id]])
  })

  test('released by force while claimed: the task keeps running (reservation_id kept), and its end releases nothing more', async () => {
    const w = await register(s, 'handoff-forced')
    const t = await add('handoff-force', { title: 'keep going', project: project(), paths: ['f/**'] })
    const c = (await claim('handoff-force', w)).body
    expect((await api('DELETE', `/api/reservations/${c.reservation_id}?force=1`)).status).toBe(200)
    expect(await get(t.id)).toMatchObject({ status: 'claimed', reservation_id: c.reservation_id })
    expect((await api('POST', `/api/tasks/${t.id}/ack`, { claim_id: c.claim_id }, w)).body).toMatchObject({ status: 'done', reservation_id: null })
    expect(await releases(c.reservation_id)).toEqual([['forced', w.id]])
  })
})

describe('notes', () => {
  test('201 {at, by, attempt, text}; 400 bad text or no token, 403 unknown token, 404 unknown task; event and audit', async () => {
    const w = await register(s, 'handoff-writer')
    const t = await add('handoff-notes', { title: 'noted' })
    const note = (body: unknown, who: Agent | null = w, id: number = t.id) => api('POST', `/api/tasks/${id}/notes`, body, who)
    expect((await note({ text: 'x' }, null)).body).toEqual({ error: 'X-Instance-Token is required', code: 400 })
    expect((await note({ text: 'x' }, { ...w, h: { 'x-instance-token': 'ab'.repeat(32) } })).status).toBe(403)
    expect((await note({ text: 'x' }, w, 999_999)).body).toEqual({ error: 'task not found', code: 404 })
    for (const body of [{}, { text: '' }, { text: '  ' }, { text: 5 }, { text: 'é'.repeat(8193) }]) expect((await note(body)).status).toBe(400)
    expect((await get(t.id)).notes).toEqual([])

    const r = await note({ text: 'x'.repeat(16 * 1024) })
    expect(r.status).toBe(201)
    expect(r.body).toEqual({ at: expect.any(String), by: 'handoff-writer', attempt: 0, text: 'x'.repeat(16 * 1024) })
    expect((await events('task.noted')).find((e) => e.data.id === t.id)).toMatchObject({ source: 'coordination', data: { id: t.id, queue: 'handoff-notes' } })
    const audit = (await api('GET', `/api/audit?action=task.note&actor=${w.id}`)).body
    expect(audit.map((e: any) => [e.resource, e.outcome])).toContainEqual([`tasks/${t.id}/notes`, 'success'])
  })

  test('notes follow the task across attempts: oldest first in the claim answer, reads and lists', async () => {
    const first = await register(s, 'handoff-first')
    const second = await register(s, 'handoff-second')
    const t = await add('handoff-carry', { title: 'relay' })
    const note = (text: string, who: Agent) => api('POST', `/api/tasks/${t.id}/notes`, { text }, who)
    await note('before anyone', first)
    const c1 = (await claim('handoff-carry', first)).body
    await note('tried the easy fix: tests still fail', first)
    await api('POST', `/api/tasks/${t.id}/nack`, { claim_id: c1.claim_id, error: 'gave up' }, first)
    const c2 = (await claim('handoff-carry', second)).body
    const expected = [
      { at: expect.any(String), by: 'handoff-first', attempt: 0, text: 'before anyone' },
      { at: expect.any(String), by: 'handoff-first', attempt: 1, text: 'tried the easy fix: tests still fail' },
    ]
    expect(c2).toMatchObject({ id: t.id, attempts: 2, notes: expected })
    await note('second look', second)
    const all = [...expected, { at: expect.any(String), by: 'handoff-second', attempt: 2, text: 'second look' }]
    expect((await get(t.id)).notes).toEqual(all)
    const listed = (await api('GET', '/api/queues/handoff-carry/tasks')).body
    expect(listed.map((x: any) => x.notes)).toEqual([all])
    expect((await api('POST', `/api/tasks/${t.id}/ack`, { claim_id: c2.claim_id }, second)).body.notes).toEqual(all)
  })
})

// Paths that reach the overlap rule from a hook event, a check or a task pass the limits
// a reservation does (docs/coordination.md), before any work: a hook's edit of a path
// beyond them is answered without an opinion (never a deny) with an edit.unchecked event;
// a check or a task is a 400. One long path must not hold the server.
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { call, register, startServer, type TestServer } from './helpers'

let s: TestServer
beforeAll(async () => (s = await startServer()))
afterAll(() => s.cleanup())

let n = 0
function session(headers: Record<string, string> = {}) {
  const id = `limits${++n}-${crypto.randomUUID()}`
  const project = `lim${n}${Math.random().toString(36).slice(2, 6)}`
  const root = `/tmp/limits-${n}/${project}`
  const send = async (event: Record<string, unknown>, agent = 'claude-code') => {
    const r = await call(s.api, 'POST', `/api/hooks/${agent}`, { session_id: id, cwd: root, ...event }, { 'x-muster-project': project, ...headers })
    expect(r.status).toBe(200)
    return r.body
  }
  const edit = (file_path: string) => send({ hook_event_name: 'PreToolUse', tool_name: 'Edit', tool_input: { file_path, old_string: 'a', new_string: 'b' } })
  return { id, project, root, send, edit }
}

/** `segments` path segments of one character each: `a/a/…/a.ts`. */
const deep = (segments: number) => `${'a/'.repeat(segments - 1)}a.ts`
const unchecked = async (sessionId: string) =>
  ((await call(s.api, 'GET', '/api/events/history?topic=edit.unchecked&after_id=0&last=500')).body as any[]).filter((e) => e.data.session_id === sessionId)
const reservationsIn = async (project: string) => (await call(s.api, 'GET', `/api/reservations?project=${project}`)).body as any[]

describe('hook events', () => {
  test('an edit of a path past the limits: no opinion, nothing reserved, edit.unchecked naming the limit (no token)', async () => {
    const c = session({ 'x-muster-reserve': '10m' })
    const answer = await c.edit(`${c.root}/${deep(2000)}`)
    expect(answer).toEqual({})
    expect(await reservationsIn(c.project)).toEqual([])
    const [e] = await unchecked(c.id)
    expect(e.data).toMatchObject({ session_id: c.id, instance_id: expect.any(String), tool: 'Edit', files: 1, problem: 'a pattern is at most 1024 characters' })
    expect(JSON.stringify(e)).not.toMatch(/token/i)
    const line = s.stdout().split('\n').find((l) => l.includes('hook edit not checked') && l.includes(c.id))!
    for (const part of ['WARN', 'Edit', 'a pattern is at most 1024 characters', c.project]) expect(line).toContain(part)
    expect(line).not.toMatch(/token/i)
    expect(await c.edit(`${c.root}/${deep(65)}`)).toEqual({})
    expect((await unchecked(c.id))[1].data.problem).toContain('has 65 path segments; at most 64')
    // a path within the limits is still reserved as before
    expect(await c.edit(`${c.root}/src/ok.ts`)).toEqual({})
    expect((await reservationsIn(c.project)).map((r) => r.paths)).toEqual([['src/ok.ts']])
  })

  test('a held file is still denied beside a refused path; one past the limits never denies', async () => {
    const c = session()
    const holder = await register(s, `holder${n}`)
    expect((await call(s.api, 'POST', '/api/reservations', { project: c.project, paths: ['**'] }, holder.h)).status).toBe(201)
    expect((await c.edit(`${c.root}/src/x.ts`)).hookSpecificOutput.permissionDecision).toBe('deny')
    expect(await c.edit(`${c.root}/${'x'.repeat(300)}.ts`)).toEqual({})
    expect((await unchecked(c.id))[0].data.problem).toContain('a segment of 303 characters; at most 255')
  })

  test('a 100 KB file_path of 50,000 segments is answered at once, and the server goes on answering', async () => {
    const c = session({ 'x-muster-reserve': '10m' })
    const started = performance.now()
    const [answer, health] = await Promise.all([c.edit(`${c.root}/${deep(50_000)}`), call(s.api, 'GET', '/health')])
    expect(answer).toEqual({})
    expect(health.status).toBe(200)
    // Not a speed target (bench/large-bodies.ts has that): the event took 17 s when its cost grew with the square of the path.
    expect(performance.now() - started).toBeLessThan(4000)
    expect(await reservationsIn(c.project)).toEqual([])
    expect((await unchecked(c.id)).length).toBe(1)
  })

  test('apply_patch naming more files than a reservation may hold, or a name past the limits: no opinion, edit.unchecked', async () => {
    const c = session()
    const holder = await register(s, `holder${n}`)
    expect((await call(s.api, 'POST', '/api/reservations', { project: c.project, paths: ['src/**'] }, holder.h)).status).toBe(201)
    const patch = (files: string[]) => ['*** Begin Patch', ...files.map((f) => `*** Add File: ${f}\n+x`), '*** End Patch'].join('\n')
    const apply = (files: string[]) => c.send({ hook_event_name: 'PreToolUse', tool_name: 'apply_patch', tool_input: { command: patch(files) } }, 'codex')
    const many = Array.from({ length: 101 }, (_, i) => `src/f${i}.ts`)
    expect(await apply(many)).toEqual({})
    expect((await unchecked(c.id)).at(-1).data).toMatchObject({ tool: 'apply_patch', files: 101, problem: expect.stringContaining('more than 100 files') })
    expect(await apply(['src/a.ts', deep(100)])).toEqual({})
    expect((await unchecked(c.id)).length).toBe(2)
    // within the limits, the same patch is denied as before
    expect((await apply(many.slice(0, 100))).hookSpecificOutput.permissionDecision).toBe('deny')
  })

  test('an apply_patch line padded with spaces is read in linear time', async () => {
    const c = session()
    const started = performance.now()
    const command = `*** Begin Patch\n*** Add File: a${' '.repeat(200_000)}b\n*** End Patch`
    expect(await c.send({ hook_event_name: 'PreToolUse', tool_name: 'apply_patch', tool_input: { command } }, 'codex')).toEqual({})
    expect(performance.now() - started).toBeLessThan(4000)
  })
})

describe('checks and tasks', () => {
  test('POST /api/reservations/check and a task with a path past the limits: 400 {error, code}, nothing read or created', async () => {
    const project = `limits-check-${n}`
    for (const path of [deep(50_000), deep(65), 'x'.repeat(1025)]) {
      const check = await call(s.api, 'POST', '/api/reservations/check', { project, paths: [path] })
      expect(check.status).toBe(400)
      expect(check.body).toMatchObject({ error: expect.stringContaining('invalid paths'), code: 400 })
      const task = await call(s.api, 'POST', '/api/queues/limits/tasks', { title: 'long path', project, paths: [path] })
      expect(task.status).toBe(400)
      expect(task.body).toMatchObject({ error: expect.stringContaining('invalid paths'), code: 400 })
    }
    expect((await call(s.api, 'GET', '/api/queues/limits/tasks')).body).toEqual([])
  })
})

// `muster task ...` as agents run it: the claim id is remembered in the CLI's identity
// (.muster/ at the git root) beside the instance token, so ack and nack need only the task id.
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { call, startServer, type TestServer } from './helpers'
import { identityOf, removeWorkdirs, runCli, workdir } from './cli-run'

let s: TestServer
beforeAll(async () => (s = await startServer()))
afterAll(async () => {
  await s.cleanup()
  removeWorkdirs()
})


describe('muster task', () => {
  test('add, claim (claim id saved), ack without copying it, list', async () => {
    const dir = workdir({ server: s.api })
    const cli = (...args: string[]) => runCli(args, { cwd: dir })
    expect((await cli('register', 'cli-worker', '--capabilities', 'gpu')).code).toBe(0)

    const a = await cli('task', 'add', 'cli-q', '--title', 'first', '--payload', '{"n":1}', '--priority', '2', '--requires', 'gpu')
    expect(a.code).toBe(0)
    expect(a.json).toMatchObject({ queue: 'cli-q', title: 'first', payload: { n: 1 }, priority: 2, requires: ['gpu'], status: 'ready' })
    const b = await cli('task', 'add', 'cli-q', '--title', 'second', '--depends-on', String(a.json.id), '--max-attempts', '5')
    expect(b.json).toMatchObject({ status: 'blocked', depends_on: [a.json.id], max_attempts: 5 })

    const c = await cli('task', 'claim', 'cli-q', '--visibility', '5m')
    expect(c.code).toBe(0)
    expect(c.json).toMatchObject({ id: a.json.id, status: 'claimed' })
    expect(identityOf(dir)!.claims).toEqual({ [a.json.id]: c.json.claim_id })
    expect(identityOf(dir)!.instance_token).toBeString()

    const done = await cli('task', 'ack', String(a.json.id), '--result', '{"ok":true}')
    expect(done.code).toBe(0)
    expect(done.json).toMatchObject({ status: 'done', result: { ok: true } })
    expect(identityOf(dir)!.claims).toBeUndefined()

    const list = await cli('task', 'list', 'cli-q')
    // Claim order: priority 2 before 0.
    expect(list.json.map((t: any) => [t.title, t.status])).toEqual([
      ['first', 'done'],
      ['second', 'ready'],
    ])
    expect((await cli('task', 'list', 'cli-q', '--status', 'done')).json).toHaveLength(1)
    expect((await cli('task', 'list')).json.find((q: any) => q.queue === 'cli-q').counts).toMatchObject({ ready: 1, done: 1 })
  })

  test('nack with --error and --delay; claim --wait answers null when nothing comes; a lost claim is 409 exit 1 and forgotten', async () => {
    const dir = workdir({ server: s.api })
    const cli = (...args: string[]) => runCli(args, { cwd: dir })
    await cli('register', 'cli-nacker')
    const t = (await cli('task', 'add', 'cli-nack-q', '--title', 'flaky')).json
    await cli('task', 'claim', 'cli-nack-q')
    const n = await cli('task', 'nack', String(t.id), '--error', 'boom', '--delay', '10m')
    expect(n.json).toMatchObject({ status: 'ready', last_error: 'boom' })
    expect(Date.parse(n.json.available_at)).toBeGreaterThan(Date.now() + 500_000)
    const none = await cli('task', 'claim', 'cli-nack-q', '--wait', '200ms')
    expect(none.code).toBe(0)
    expect(none.stdout.trim()).toBe('null')

    const u = (await cli('task', 'add', 'cli-nack-q', '--title', 'taken away')).json
    await cli('task', 'claim', 'cli-nack-q')
    expect((await call(s.api, 'DELETE', `/api/tasks/${u.id}`)).status).toBe(200)
    const lost = await cli('task', 'ack', String(u.id))
    expect(lost.code).toBe(1)
    expect(lost.error).toEqual({ error: 'claim lost', code: 409 })
    expect(identityOf(dir)!.claims).toBeUndefined()
  })

  test('usage errors: no saved claim, bad JSON, bad duration, missing --title (exit 2)', async () => {
    const dir = workdir({ server: s.api })
    const cli = (...args: string[]) => runCli(args, { cwd: dir })
    const noClaim = await cli('task', 'ack', '12')
    expect(noClaim.code).toBe(2)
    expect(noClaim.stderr).toContain('no claim saved for task 12')
    expect((await cli('task', 'add', 'q', '--title', 't', '--payload', '{nope')).code).toBe(2)
    expect((await cli('task', 'claim', 'q', '--wait', 'soon')).code).toBe(2)
    expect((await cli('task', 'add', 'q')).code).toBe(2)
    expect((await cli('task', 'add', 'q', '--title', 't', '--depends-on', 'x')).code).toBe(2)
    // Without `register` the server says what is missing.
    const unregistered = await cli('task', 'claim', 'q')
    expect(unregistered.code).toBe(1)
    expect(unregistered.error).toEqual({ error: 'X-Instance-Token is required', code: 400 })
  })
})

describe('muster task: hand-off', () => {
  test('add --project --path (repeatable and variadic); claim reserves them; note from an argument and from stdin', async () => {
    const dir = workdir({ server: s.api })
    const cli = (...args: string[]) => runCli(args, { cwd: dir })
    expect((await cli('task', 'note', '1', 'hi')).error).toEqual({ error: 'X-Instance-Token is required', code: 400 })
    expect((await cli('register', 'cli-handoff')).code).toBe(0)

    const a = await cli('task', 'add', 'cli-handoff-q', '--title', 'edit', '--project', 'cli-p', '--path', 'src/**', '--path', 'docs/a.md', 'README.md')
    expect(a.code).toBe(0)
    expect(a.json).toMatchObject({ project: 'cli-p', paths: ['src/**', 'docs/a.md', 'README.md'], reservation_id: null, notes: [] })
    const bad = await cli('task', 'add', 'cli-handoff-q', '--title', 'no project', '--path', 'src/**')
    expect(bad.code).toBe(1)
    expect(bad.error.error).toContain('project is required')

    const note = await cli('task', 'note', String(a.json.id), 'start with src/cli.ts')
    expect(note.code).toBe(0)
    expect(note.json).toMatchObject({ by: 'cli-handoff', attempt: 0, text: 'start with src/cli.ts' })
    const piped = await runCli(['task', 'note', String(a.json.id), '-'], { cwd: dir, stdin: 'from\nstdin' })
    expect(piped.json).toMatchObject({ attempt: 0, text: 'from\nstdin' })

    const c = await cli('task', 'claim', 'cli-handoff-q')
    expect(c.json).toMatchObject({ id: a.json.id, status: 'claimed', notes: [{ text: 'start with src/cli.ts' }, { text: 'from\nstdin' }] })
    const held = (await call(s.api, 'GET', `/api/reservations/${c.json.reservation_id}`)).body
    expect(held).toMatchObject({ project: 'cli-p', paths: ['src/**', 'docs/a.md', 'README.md'], exclusive: true, reason: `task ${a.json.id}` })
    expect((await cli('task', 'note', '999999', 'x')).error).toEqual({ error: 'task not found', code: 404 })
  })
})

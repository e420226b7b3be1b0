// The inbox commands as agents run them: `send` (flags, `--body -`, '*'), `inbox`
// (cursor, --unacked, --wait held until a send), `ack`, `thread`, `message` with its
// receipts, `messages` search; server errors exit 1 with {error, code}, bad
// invocations exit 2 and send nothing.
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { call, startServer, type TestServer } from './helpers'
import { removeWorkdirs, runCli, spawnCli, workdir } from './cli-run'

let s: TestServer
let alice: string
let bob: string
beforeAll(async () => {
  s = await startServer()
  alice = workdir({ server: s.api })
  bob = workdir({ server: s.api })
  expect((await runCli(['register', 'alice'], { cwd: alice })).code).toBe(0)
  expect((await runCli(['register', 'bob'], { cwd: bob })).code).toBe(0)
})
afterAll(async () => {
  await s.cleanup()
  removeWorkdirs()
})

const asAlice = (...args: string[]) => runCli(args, { cwd: alice })
const asBob = (...args: string[]) => runCli(args, { cwd: bob })
/** The newest message id: unchanged when nothing was sent. */
const newest = async () => (await call(s.api, 'GET', '/api/messages?limit=1')).body[0]?.id

describe('send, inbox, ack, thread, message', () => {
  test('a message goes to a name; inbox reads do not consume; ack is once; a reply joins the thread', async () => {
    const sent = await asBob('send', 'alice', '--subject', 'users schema changed', '--body', 'rebase on main', '--ack')
    expect(sent.code).toBe(0)
    expect(sent.stdout.trim().split('\n')).toHaveLength(1) // compact JSON
    // A copy: toMatchObject with expect.any() writes the matcher into the object it checks (bun's own behaviour).
    const m = { ...sent.json }
    expect(sent.json).toMatchObject({ id: expect.any(Number), from: 'bob', to: ['alice'], subject: 'users schema changed', body: 'rebase on main', ack_required: true, importance: 'normal', thread: String(m.id) })

    const first = await asAlice('inbox', '--after', String(m.id - 1))
    expect([first.code, first.stderr]).toEqual([0, ''])
    expect(first.json.cursor).toBe(m.id)
    expect(first.json.messages.map((x: any) => [x.id, x.subject, x.acked_at])).toEqual([[m.id, 'users schema changed', null]])
    expect(first.json.messages[0].delivered_at).toEqual(expect.any(String))
    // The same read again returns the same message; past the cursor there is nothing.
    expect((await asAlice('inbox', '--after', String(m.id - 1))).json.messages.map((x: any) => x.id)).toEqual([m.id])
    expect((await asAlice('inbox', '--after', String(m.id))).json).toEqual({ messages: [], cursor: m.id })
    expect((await asBob('inbox', '--after', String(m.id - 1))).json.messages).toEqual([]) // not its own

    const acked = await asAlice('ack', String(m.id))
    expect(acked.json).toEqual({ id: m.id, acked_at: expect.any(String) })
    expect((await asAlice('ack', String(m.id))).json).toEqual(acked.json)
    expect((await asAlice('inbox', '--unacked', '--after', String(m.id - 1))).json.messages).toEqual([])

    const receipts = (await asBob('message', String(m.id))).json.receipts
    expect(receipts).toEqual([{ to: 'alice', delivered_at: first.json.messages[0].delivered_at, acked_at: acked.json.acked_at }])

    const reply = await asAlice('send', 'bob', '--subject', 'rebased', '--reply-to', String(m.id))
    expect(reply.json).toMatchObject({ from: 'alice', reply_to: m.id, thread: String(m.id), body: '' })
    expect((await asBob('thread', String(m.id))).json.map((x: any) => x.id)).toEqual([m.id, reply.json.id])
  })

  test('--body - reads stdin; --ack-within implies --ack; --importance, --thread; \'*\' reaches every other agent', async () => {
    const body = 'line one\nline "two"\n'
    const r = await runCli(['send', 'alice', '--subject', 'migration', '--body', '-', '--ack-within', '90s', '--importance', 'urgent', '--thread', 'db'], { cwd: bob, stdin: body })
    expect(r.code).toBe(0)
    expect(r.json).toMatchObject({ body, ack_required: true, ack_within_ms: 90_000, importance: 'urgent', thread: 'db' })
    const all = await asBob('send', '*', '--subject', 'deploy freeze')
    expect(all.json).toMatchObject({ to: ['*'], from: 'bob' })
    expect((await asAlice('inbox', '--after', String(r.json.id - 1))).json.messages.map((x: any) => x.id)).toEqual([r.json.id, all.json.id])
    expect((await asBob('inbox', '--after', String(r.json.id - 1))).json.messages).toEqual([])
    expect((await asAlice('thread', 'db')).json.map((x: any) => x.subject)).toEqual(['migration'])
  })

  test('without a registered instance the sender is "human"; inbox and ack need one', async () => {
    const nobody = workdir({ server: s.api })
    const r = await runCli(['send', 'alice', '--subject', 'from a person'], { cwd: nobody })
    expect(r.json).toMatchObject({ from: 'human', from_instance_id: null })
    const inbox = await runCli(['inbox'], { cwd: nobody })
    expect([inbox.code, inbox.error.code]).toEqual([1, 400])
    expect(inbox.error.error).toContain('X-Instance-Token')
    const ack = await runCli(['ack', String(r.json.id)], { cwd: nobody })
    expect([ack.code, ack.error.code]).toEqual([1, 400])
  })

  test('messages searches whole words, newest first, with --from/--to/--thread/--limit', async () => {
    const a = (await asBob('send', 'alice', '--subject', 'Kestrel review', '--body', 'please look at the parser')).json
    const b = (await asAlice('send', 'bob', '--subject', 'kestrel done', '--body', 'parser merged')).json
    expect((await asBob('messages', 'kestrel', 'parser')).json.map((x: any) => x.id)).toEqual([b.id, a.id])
    expect((await asBob('messages', 'kestrel', '--from', 'bob')).json.map((x: any) => x.id)).toEqual([a.id])
    expect((await asBob('messages', 'kestrel', '--to', 'bob')).json.map((x: any) => x.id)).toEqual([b.id])
    expect((await asBob('messages', 'kestrel', '--limit', '1')).json.map((x: any) => x.id)).toEqual([b.id])
    expect((await asBob('messages', 'kestr')).json).toEqual([]) // whole words only
    expect((await asBob('messages', '--thread', String(a.id))).json.map((x: any) => x.id)).toEqual([a.id])
  })
})

describe('inbox --wait', () => {
  test('held until a message for this name arrives, then printed; an empty page when none comes in time', async () => {
    const after = (await asAlice('inbox')).json.messages.at(-1)?.id ?? 0
    const idle = await asAlice('inbox', '--after', String(after), '--wait', '300ms')
    expect([idle.code, idle.json]).toEqual([0, { messages: [], cursor: after }])

    const held = spawnCli(['inbox', '--after', String(after), '--wait', '20s'], { cwd: alice })
    await Bun.sleep(700)
    await call(s.api, 'POST', '/api/messages', { to: ['someone-else'], subject: 'not for alice' })
    await Bun.sleep(200)
    expect(held.proc.exitCode).toBeNull()
    const sent = await call(s.api, 'POST', '/api/messages', { to: ['alice'], subject: 'wake up' })
    expect(sent.status).toBe(201)
    expect(await held.proc.exited).toBe(0)
    const page = JSON.parse(held.lines()[0]!)
    expect(page).toMatchObject({ cursor: sent.body.id, messages: [{ id: sent.body.id, subject: 'wake up' }] })
  })
})

describe('errors', () => {
  test('server refusals exit 1 with {error, code}; bad invocations exit 2 and send nothing', async () => {
    const m = (await asBob('send', 'alice', '--subject', 'private')).json
    const notMine = await asBob('ack', String(m.id))
    expect([notMine.code, notMine.error.code]).toEqual([1, 403])
    const unknown = await asAlice('ack', '999999')
    expect([unknown.code, unknown.error.code]).toEqual([1, 404])
    expect([(await asAlice('thread', 'no-such-thread')).error?.code]).toEqual([404])
    expect((await asAlice('message', '999999')).error.code).toBe(404)
    const tooLong = await asBob('send', 'alice', '--subject', 'x'.repeat(201))
    expect([tooLong.code, tooLong.error.code]).toEqual([1, 400])
    const badReply = await asBob('send', 'alice', '--subject', 's', '--reply-to', '999999')
    expect([badReply.code, badReply.error.code]).toEqual([1, 400])

    const before = await newest()
    for (const args of [
      ['send', 'alice'], // no --subject
      ['send', '--subject', 's'], // no recipient
      ['send', 'alice', '--subject', 's', '--importance', 'critical'],
      ['send', 'alice', '--subject', 's', '--ack-within', 'soon'],
      ['send', 'alice', '--subject', 's', '--reply-to', 'abc'],
      ['ack', 'abc'],
      ['message', '0'],
      ['inbox', '--limit', '0'],
      ['inbox', '--wait', 'forever'],
    ]) {
      const r = await asBob(...args)
      expect([args.join(' '), r.code]).toEqual([args.join(' '), 2])
    }
    expect(await newest()).toBe(before)
  })
})

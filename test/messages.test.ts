// The inbox over real HTTP (agents.md "Inbox"): send and its validation, inbox pages
// (cursor, limit, unacked, wait), receipts, acks, threads, search, overdue acks,
// events and audit; and, on PostgreSQL, a held inbox read on one replica answered by
// a send through another.
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { call, eventually, register, startServer, tempDir, type Agent, type TestServer } from './helpers'
import { databaseFor, onPostgres, rawQuery } from './pg'

let s: TestServer
beforeAll(async () => (s = await startServer()))
afterAll(() => s.cleanup())

let n = 0
/** A name no other test uses (the server is shared). */
const unique = (base: string) => `${base}-${++n}-${Math.random().toString(36).slice(2, 7)}`
const agent = (base: string, server = s) => register(server, unique(base))
const send = (from: Pick<Agent, 'h'> | null, body: unknown, server = s) => call(server.api, 'POST', '/api/messages', body, from?.h ?? {})
const inbox = (a: Agent, query = '', server = s) => call(server.api, 'GET', `/api/inbox${query}`, undefined, a.h)
const ack = (a: Pick<Agent, 'h'>, id: number | string) => call(s.api, 'POST', `/api/messages/${id}/ack`, undefined, a.h)
const events = async (topic: string) => (await call(s.api, 'GET', `/api/events/history?topic=${topic}&after_id=0&last=1000`)).body as any[]
const ids = (r: { body: any }) => (r.body.messages as any[]).map((m) => m.id)

describe('send', () => {
  test('201 with the message; from the instance name, or "human" without a token; message.sent without body; audited', async () => {
    const ann = await agent('ann')
    const bo = unique('bo')
    const r = await send(ann, { to: [bo], subject: 'Schema change', body: 'moving users.email', importance: 'high', ack_required: true })
    expect(r.status).toBe(201)
    expect(r.body).toEqual({
      id: expect.any(Number),
      from: ann.name,
      from_instance_id: ann.id,
      to: [bo],
      subject: 'Schema change',
      body: 'moving users.email',
      thread: String(r.body.id),
      reply_to: null,
      importance: 'high',
      ack_required: true,
      ack_within_ms: null,
      created_at: expect.any(String),
    })
    const person = await send(null, { to: [bo, bo, 'cy'], subject: 'hi' })
    expect(person.status).toBe(201)
    expect(person.body).toMatchObject({ from: 'human', from_instance_id: null, to: [bo, 'cy'], body: '', importance: 'normal', ack_required: false })
    expect(person.body.id).toBeGreaterThan(r.body.id)
    const ev = (await events('message.sent')).find((e) => e.data.id === r.body.id)
    expect(ev).toMatchObject({ source: 'messages' })
    expect(ev.data).toEqual({ id: r.body.id, from: ann.name, to: [bo], subject: 'Schema change', thread: String(r.body.id), importance: 'high' })
    const audit = (await call(s.api, 'GET', `/api/audit?action=message.send&actor=${ann.id}`)).body
    expect(audit[0]).toMatchObject({ outcome: 'success', resource: 'messages' })
  })

  test('400 for what the contract refuses, and nothing is stored; 403 for an unknown token', async () => {
    const marker = unique('bad')
    const ok = { to: [marker], subject: 's' }
    const bodies: unknown[] = [
      {},
      { subject: 's' },
      { to: [], subject: 's' },
      { to: Array.from({ length: 101 }, (_, i) => `n${i}`), subject: 's' },
      { to: [''], subject: 's' },
      { to: ['x'.repeat(1001)], subject: 's' },
      { to: ['*', marker], subject: 's' },
      { to: [marker] },
      { ...ok, subject: '' },
      { ...ok, subject: 'x'.repeat(201) },
      { ...ok, body: 'é'.repeat(32 * 1024 + 1) },
      { ...ok, importance: 'critical' },
      { ...ok, thread: '' },
      { ...ok, thread: 't'.repeat(101) },
      { ...ok, reply_to: 999_999_999 },
      { ...ok, reply_to: 0 },
      { ...ok, ack_within_ms: 5000 },
      { ...ok, ack_required: true, ack_within_ms: 999 },
      { ...ok, ack_required: true, ack_within_ms: 604_800_001 },
      { to: ['*'], subject: 's', ack_required: true, ack_within_ms: 5000 },
      '[1]',
    ]
    for (const body of bodies) {
      const r = await send(null, body)
      expect(r.status, JSON.stringify(body).slice(0, 80)).toBe(400)
      expect(r.body).toEqual({ error: expect.any(String), code: 400 })
    }
    expect((await send(null, { ...ok, reply_to: 999_999_999 })).body.error).toContain('reply_to')
    expect((await send({ h: { 'x-instance-token': 'nope' } }, ok)).status).toBe(403)
    expect((await call(s.api, 'GET', `/api/messages?to=${marker}`)).body).toEqual([])
    // The bounds themselves are accepted.
    const edge = await send(null, { to: [marker], subject: 'x'.repeat(200), body: 'b'.repeat(64 * 1024), thread: 't'.repeat(100), ack_required: true, ack_within_ms: 604_800_000 })
    expect(edge.status).toBe(201)
  })

  test('a reply joins the replied-to thread; an explicit thread wins; GET /api/threads/{thread} oldest first; unknown 404', async () => {
    const a = await agent('th')
    const first = (await send(a, { to: ['x'], subject: 'q' })).body
    const reply = (await send(null, { to: [a.name], subject: 're: q', reply_to: first.id })).body
    expect(reply).toMatchObject({ reply_to: first.id, thread: String(first.id) })
    const named = unique('topic')
    const other = (await send(null, { to: [a.name], subject: 'elsewhere', reply_to: reply.id, thread: named })).body
    expect(other.thread).toBe(named)
    const again = (await send(null, { to: [a.name], subject: 'more', reply_to: other.id })).body
    expect(again.thread).toBe(named)
    const thread = await call(s.api, 'GET', `/api/threads/${first.id}`)
    expect(thread.status).toBe(200)
    expect(thread.body.map((m: any) => m.id)).toEqual([first.id, reply.id])
    expect((await call(s.api, 'GET', `/api/threads/${named}`)).body.map((m: any) => m.id)).toEqual([other.id, again.id])
    expect((await call(s.api, 'GET', `/api/threads/${unique('none')}`)).status).toBe(404)
  })
})

describe('inbox', () => {
  test('instance token required: 400 without, 403 unknown; nothing there yet: cursor 0', async () => {
    // First in the inbox tests: no broadcast has been sent on this server yet.
    expect((await inbox(await agent('first'))).body).toEqual({ messages: [], cursor: 0 })
    expect((await call(s.api, 'GET', '/api/inbox')).body).toEqual({ error: 'X-Instance-Token is required', code: 400 })
    expect((await call(s.api, 'GET', '/api/inbox', undefined, { 'x-instance-token': 'nope' })).status).toBe(403)
  })

  test('named and broadcast messages (not its own broadcasts), oldest first, with after, limit and cursor; reading does not consume', async () => {
    const me = await agent('reader')
    const other = await agent('other')
    const before = (await inbox(me)).body.cursor
    const m1 = (await send(other, { to: [me.name], subject: '1' })).body.id
    await send(other, { to: [other.name], subject: 'not mine' })
    const m2 = (await send(other, { to: ['*'], subject: '2' })).body.id
    await send(me, { to: ['*'], subject: 'my own broadcast' })
    const m3 = (await send(null, { to: [other.name, me.name], subject: '3' })).body.id
    const all = await inbox(me, `?after=${before}`)
    expect(all.status).toBe(200)
    expect(ids(all)).toEqual([m1, m2, m3])
    expect(all.body.cursor).toBe(m3)
    expect(all.body.messages[0]).toMatchObject({ id: m1, from: other.name, subject: '1', delivered_at: expect.any(String), acked_at: null })
    const page = await inbox(me, `?after=${before}&limit=2`)
    expect(ids(page)).toEqual([m1, m2])
    expect(page.body.cursor).toBe(m2)
    expect(ids(await inbox(me, `?after=${page.body.cursor}&limit=2`))).toEqual([m3])
    const empty = await inbox(me, `?after=${m3}`)
    expect(empty.body).toEqual({ messages: [], cursor: m3 })
    // Not consumed: the same call answers the same, delivered_at set once.
    const again = await inbox(me, `?after=${before}`)
    expect(again.body).toEqual(all.body)
    for (const q of ['?limit=0', '?limit=1001', '?after=-1', '?after=x', '?wait=61s', '?wait=soon'])
      expect((await inbox(me, q)).status, q).toBe(400)
  })

  test('bad parameters are 400 {error, code}; a parameter the inbox does not take is ignored', async () => {
    const ann = await agent('ann')
    const bo = await agent('bo')
    for (let i = 0; i < 3; i++) expect((await send(ann, { to: [bo.name], subject: `s${i}` })).status).toBe(201)
    const page = await inbox(bo, '?after=0&limit=2&unacked=1')
    expect(page.status).toBe(200)
    expect(ids(page)).toHaveLength(2)
    expect(await inbox(bo, '?after=0&limit=2&unacked=1&other=x')).toEqual(page)
    for (const bad of ['?limit=0', '?after=-1', '?limit=1001', '?wait=61s'])
      expect(await inbox(bo, bad)).toMatchObject({ status: 400, body: { error: expect.stringMatching(/^invalid /), code: 400 } })
  })

  test('unacked=1 leaves acked messages out', async () => {
    const me = await agent('fresh')
    const none = await inbox(me, '?unacked=1')
    // Broadcasts of other tests may be there; a name no one wrote to has only those.
    expect(none.body.messages.every((m: any) => m.to[0] === '*')).toBe(true)
    const a = (await send(null, { to: [me.name], subject: 'a' })).body.id
    const b = (await send(null, { to: [me.name], subject: 'b' })).body.id
    expect((await ack(me, a)).status).toBe(200)
    const unacked = await inbox(me, `?after=${a - 1}&unacked=1`)
    expect(ids(unacked)).toEqual([b])
    expect(ids(await inbox(me, `?after=${a - 1}`))).toEqual([a, b])
    const other = await register(s, unique('blank'))
    const quiet = await call(s.api, 'GET', `/api/inbox?after=${b}`, undefined, other.h)
    expect(quiet.body).toEqual({ messages: [], cursor: b })
  })

  test('wait: held until a message for the name commits, then answered; a message for another name does not answer it', async () => {
    const me = await agent('waiter')
    const after = (await send(null, { to: [me.name], subject: 'earlier' })).body.id
    const started = performance.now()
    const held = inbox(me, `?after=${after}&wait=10s`)
    await Bun.sleep(300)
    await send(null, { to: [unique('someone-else')], subject: 'not for the waiter' })
    await Bun.sleep(200)
    const sent = (await send(null, { to: [me.name], subject: 'wake up' })).body.id
    const r = await held
    expect(r.status).toBe(200)
    expect(ids(r)).toEqual([sent])
    const took = performance.now() - started
    expect(took).toBeGreaterThan(450)
    expect(took).toBeLessThan(3000)
    // A broadcast answers a waiting name too.
    const wide = inbox(me, `?after=${sent}&wait=10s`)
    await Bun.sleep(200)
    const b = (await send(null, { to: ['*'], subject: 'everyone' })).body.id
    expect(ids(await wide)).toContain(b)
  })

  test('wait ends with 200 and an empty list when nothing came', async () => {
    const me = await agent('patient')
    const last = (await send(null, { to: [me.name], subject: 'x' })).body.id
    // Broadcasts other tests send meanwhile would answer it: unacked=1 after acking them is not enough, so read after a far id.
    const started = performance.now()
    const r = await inbox(me, `?after=${last + 1_000_000}&wait=600ms`)
    expect(r.status).toBe(200)
    expect(r.body).toEqual({ messages: [], cursor: last + 1_000_000 })
    expect(performance.now() - started).toBeGreaterThan(550)
  })
})

describe('ack and receipts', () => {
  test('200 {id, acked_at}; again the same acked_at; message.acked {id, by} once; delivered set too; audited', async () => {
    const me = await agent('acker')
    const m = (await send(null, { to: [me.name, 'zed'], subject: 'please ack', ack_required: true })).body
    const first = await ack(me, m.id)
    expect(first.status).toBe(200)
    expect(first.body).toEqual({ id: m.id, acked_at: expect.any(String) })
    const second = await ack(me, m.id)
    expect(second.body).toEqual(first.body)
    const acked = (await events('message.acked')).filter((e) => e.data.id === m.id)
    expect(acked.map((e) => e.data)).toEqual([{ id: m.id, by: me.name }])
    const got = await call(s.api, 'GET', `/api/messages/${m.id}`)
    expect(got.body.receipts).toEqual([
      { to: me.name, delivered_at: first.body.acked_at, acked_at: first.body.acked_at },
      { to: 'zed', delivered_at: null, acked_at: null },
    ])
    const audit = (await call(s.api, 'GET', `/api/audit?action=message.ack&actor=${me.id}`)).body
    expect(audit.length).toBe(2)
    expect(audit[0]).toMatchObject({ outcome: 'success', resource: `messages/${m.id}/ack` })
  })

  test('403 not addressed to the caller (nor its own broadcast); 404 unknown or not a positive integer; 400 without a token', async () => {
    const me = await agent('stranger')
    const m = (await send(null, { to: ['someone'], subject: 'private' })).body
    const r = await ack(me, m.id)
    expect(r.status).toBe(403)
    expect(r.body.error).toContain(me.name)
    const own = (await send(me, { to: ['*'], subject: 'mine' })).body
    expect((await ack(me, own.id)).status).toBe(403)
    for (const id of ['999999999', '0', '-1', 'abc', '1.5', '01'])
      expect((await ack(me, id)).status, id).toBe(404)
    for (const id of ['999999999', 'abc', '0']) expect((await call(s.api, 'GET', `/api/messages/${id}`)).status, id).toBe(404)
    expect((await call(s.api, 'POST', `/api/messages/${m.id}/ack`)).status).toBe(400)
    expect((await call(s.api, 'GET', `/api/messages/${m.id}`)).body.receipts).toEqual([{ to: 'someone', delivered_at: null, acked_at: null }])
  })

  test('a broadcast has a receipt per name that received or acked it; delivered_at is set once', async () => {
    const a = await agent('bc-a')
    const b = await agent('bc-b')
    const c = await agent('bc-c')
    const m = (await send(c, { to: ['*'], subject: 'all hands' })).body
    expect((await call(s.api, 'GET', `/api/messages/${m.id}`)).body.receipts).toEqual([])
    const read = (await inbox(a, `?after=${m.id - 1}`)).body.messages.find((x: any) => x.id === m.id)
    expect(read.delivered_at).toEqual(expect.any(String))
    await Bun.sleep(5)
    expect((await inbox(a, `?after=${m.id - 1}`)).body.messages.find((x: any) => x.id === m.id).delivered_at).toBe(read.delivered_at)
    const acked = (await ack(b, m.id)).body
    const receipts = (await call(s.api, 'GET', `/api/messages/${m.id}`)).body.receipts
    expect(receipts).toHaveLength(2)
    expect(receipts).toContainEqual({ to: a.name, delivered_at: read.delivered_at, acked_at: null })
    expect(receipts).toContainEqual({ to: b.name, delivered_at: acked.acked_at, acked_at: acked.acked_at })
  })
})

describe('search', () => {
  test('q: every word, whole words, any case; filters from/to/thread; newest first; limit', async () => {
    const tag = `tag${Math.random().toString(36).slice(2, 8)}`
    const a = await agent('search')
    const m1 = (await send(a, { to: ['dev'], subject: `Database ${tag}`, body: 'The migration of users starts at noon.' })).body.id
    const m2 = (await send(null, { to: ['ops'], subject: `deploy ${tag}`, body: 'Users should expect downtime' })).body.id
    const m3 = (await send(null, { to: ['*'], subject: `${tag} notes`, body: 'nothing to see', thread: `t-${tag}` })).body.id
    const q = async (query: string) => ((await call(s.api, 'GET', `/api/messages?${query}`)).body as any[]).map((m) => m.id)
    expect(await q(`q=${tag}`)).toEqual([m3, m2, m1])
    expect(await q(`q=${tag.toUpperCase()}+USERS`)).toEqual([m2, m1])
    expect(await q(`q=${tag}+users+migration`)).toEqual([m1])
    expect(await q(`q=${tag}+user`)).toEqual([]) // "user" is not a word of either
    expect(await q(`q=${tag}+noo`)).toEqual([])
    expect(await q(`q=${tag}&from=${a.name}`)).toEqual([m1])
    expect(await q(`q=${tag}&from=human`)).toEqual([m3, m2])
    expect(await q(`q=${tag}&to=ops`)).toEqual([m2])
    expect(await q(`q=${tag}&to=*`)).toEqual([m3])
    expect(await q(`thread=t-${tag}`)).toEqual([m3])
    expect(await q(`q=${tag}&limit=2`)).toEqual([m3, m2])
    // FTS syntax in words is text: no 500, and it means the words themselves.
    for (const bad of ['"', 'a"b', 'users OR', 'NEAR(users', 'users*', '-users', 'users:', '(', '^', `${tag} AND`])
      expect((await call(s.api, 'GET', `/api/messages?q=${encodeURIComponent(bad)}`)).status, bad).toBe(200)
    expect(await q(`q=${encodeURIComponent(`"${tag}" users.`)}`)).toEqual([m2, m1])
    expect((await call(s.api, 'GET', '/api/messages?limit=0')).status).toBe(400)
  })

  test.skipIf(onPostgres)("SQLite's word index takes the messages sent in a batch a second later, with no search asking for it", async () => {
    const word = `batch${Math.random().toString(36).slice(2, 8)}`
    const sent = await Promise.all([1, 2, 3].map(async (i) => (await send(null, { to: ['dev'], subject: `${word} ${i}`, body: 'in one batch' })).body.id as number))
    const through = async () => (await rawQuery<{ id: number }>(s.dataDir, 'SELECT id FROM messages_fts_through'))[0].id
    await eventually(async () => (await through()) >= Math.max(...sent), 5000, 100)
    const found = await rawQuery<{ rowid: number }>(s.dataDir, 'SELECT rowid FROM messages_fts WHERE messages_fts MATCH ? ORDER BY rowid', `"${word}"`)
    expect(found.map((r) => r.rowid)).toEqual(sent.toSorted((x, y) => x - y))
  })
})

describe('overdue', () => {
  test('message.overdue {id, to, from} once per unacked named recipient, within a second of the deadline', async () => {
    const a = await agent('late')
    const b = await agent('prompt')
    const sender = await agent('boss')
    const m = (await send(sender, { to: [a.name, b.name], subject: 'ack within 1.5s', ack_required: true, ack_within_ms: 1500 })).body
    expect((await ack(b, m.id)).status).toBe(200)
    const deadline = Date.parse(m.created_at) + 1500
    const raised = await eventually(async () => {
      const mine = (await events('message.overdue')).filter((e) => e.data.id === m.id)
      return mine.length ? mine : false
    }, 5000, 20) as any[]
    expect(raised.map((e) => e.data)).toEqual([{ id: m.id, to: a.name, from: sender.name }])
    expect(Date.parse(raised[0].created_at) - deadline).toBeGreaterThanOrEqual(0)
    expect(Date.parse(raised[0].created_at) - deadline).toBeLessThan(1000)
    // Once: acking late raises nothing more, and nothing is raised again.
    expect((await ack(a, m.id)).status).toBe(200)
    await Bun.sleep(1200)
    expect((await events('message.overdue')).filter((e) => e.data.id === m.id)).toHaveLength(1)
  })

  test('a later send with an earlier deadline is raised on time (the job re-arms)', async () => {
    const a = await agent('rearm')
    const long = (await send(null, { to: [a.name], subject: 'slow', ack_required: true, ack_within_ms: 60_000 })).body
    const short = (await send(null, { to: [a.name], subject: 'fast', ack_required: true, ack_within_ms: 1000 })).body
    const raised = await eventually(async () => (await events('message.overdue')).find((e) => e.data.id === short.id), 4000, 20)
    expect(Date.parse(raised.created_at) - (Date.parse(short.created_at) + 1000)).toBeLessThan(1000)
    expect((await events('message.overdue')).some((e) => e.data.id === long.id)).toBe(false)
  })
})

describe('held reads, delivery marks and what the server keeps', () => {
  const receipt = async (id: number, name: string) =>
    ((await call(s.api, 'GET', `/api/messages/${id}`)).body.receipts as any[]).find((r) => r.to === name)

  test('every held read of a name is answered by the message that commits for it, with the delivered_at that is stored', async () => {
    const name = unique('twin')
    const [one, two] = [await register(s, name), await register(s, name)]
    const after = (await send(null, { to: [name], subject: 'before' })).body.id
    const held = [inbox(one, `?after=${after}&wait=10s`), inbox(two, `?after=${after}&wait=10s`)]
    await Bun.sleep(200)
    const m = (await send(null, { to: [name], subject: 'for both' })).body
    const [a, b] = await Promise.all(held)
    expect(ids(a)).toEqual([m.id])
    expect(a.body).toEqual(b.body)
    const shown = a.body.messages[0].delivered_at
    expect({ ...a.body.messages[0] }).toEqual({ ...m, delivered_at: expect.any(String), acked_at: null })
    // The mark is written after the answers: once stored, it is the instant they showed.
    const stored = await eventually(async () => (await receipt(m.id, name))?.delivered_at, 3000, 10)
    expect(stored).toBe(shown)
    expect((await inbox(one, `?after=${after}`)).body.messages[0].delivered_at).toBe(stored)
  })

  test("a broadcast answers the held reads of others, not the sender's own; unacked=1 waits too", async () => {
    const [sender, other] = [await agent('caster'), await agent('hearer')]
    const start = (await send(null, { to: ['*'], subject: 'start' })).body.id
    const own = inbox(sender, `?after=${start}&wait=10s`)
    const theirs = inbox(other, `?after=${start}&wait=10s&unacked=1`)
    await Bun.sleep(200)
    const wide = (await send(sender, { to: ['*'], subject: 'to all' })).body.id
    expect(ids(await theirs)).toEqual([wide])
    expect(await Promise.race([own.then(() => 'answered'), Bun.sleep(300).then(() => 'held')])).toBe('held')
    const direct = (await send(other, { to: [sender.name], subject: 'back to you' })).body.id
    expect(ids(await own)).toEqual([direct])
  })

  test('a page read again shows at once each change to the name: a new message, an ack, a delivery', async () => {
    const me = await agent('again')
    const first = (await send(null, { to: [me.name], subject: 'one' })).body.id
    const q = `?after=${first - 1}&unacked=1`
    const page = (await inbox(me, q)).body
    expect(page.messages.filter((m: any) => m.id === first)).toHaveLength(1)
    expect((await inbox(me, q)).body).toEqual(page)
    await ack(me, first)
    expect(ids(await inbox(me, q))).not.toContain(first)
    expect((await inbox(me, `?after=${first - 1}`)).body.messages.find((m: any) => m.id === first).acked_at).toEqual(expect.any(String))
    const cursor = (await inbox(me, `?after=${first}`)).body.cursor
    const second = (await send(null, { to: [me.name], subject: 'two' })).body.id
    expect(ids(await inbox(me, `?after=${cursor}`))).toContain(second)
  })

  test("an instance's token stops acting as soon as the instance is deregistered, though it was just used", async () => {
    const me = await agent('leaving')
    expect((await inbox(me)).status).toBe(200)
    expect((await call(s.api, 'DELETE', `/api/instances/${me.id}`)).status).toBe(200)
    expect((await inbox(me)).status).toBe(403)
    expect((await send(me, { to: ['x'], subject: 'ghost' })).status).toBe(403)
    expect((await ack(me, 1)).status).toBe(403)
  })
})

describe.skipIf(!onPostgres)('replicas', () => {
  let a: TestServer
  let b: TestServer
  beforeAll(async () => {
    const url = await databaseFor(tempDir('muster-inbox-replicas-'))
    a = await startServer({ args: ['--database', url, '--log-level', 'info'] })
    // A leads (it runs the overdue job) until it is killed.
    await eventually(() => a.stdout().includes('now runs the jobs'), 10_000)
    b = await startServer({ args: ['--database', url, '--log-level', 'info'] })
  })
  afterAll(async () => {
    await a?.cleanup()
    await b?.cleanup()
  })
  const overdue = async (server: TestServer, id: number) =>
    ((await call(server.api, 'GET', '/api/events/history?topic=message.overdue&after_id=0&last=1000')).body as any[]).filter((e) => e.data.id === id)

  test('a held inbox read on replica B is answered by a send through replica A', async () => {
    const me = await register(b, unique('replica'))
    const held = inbox(me, '?wait=10s', b)
    await Bun.sleep(300)
    const started = performance.now()
    const sent = (await send(null, { to: [me.name], subject: 'across' }, a)).body.id
    const r = await held
    expect(ids(r)).toEqual([sent])
    expect(performance.now() - started).toBeLessThan(2000)
  })

  test('a token deregistered through A is refused by B, which used it just before', async () => {
    const me = await register(b, unique('gone'))
    expect((await inbox(me, '', b)).status).toBe(200)
    expect((await call(a.api, 'DELETE', `/api/instances/${me.id}`)).status).toBe(200)
    expect((await inbox(me, '', b)).status).toBe(403)
  })

  test('a deadline sent through B is raised once, on time, by the leader A', async () => {
    const m = (await send(null, { to: ['far'], subject: 'via b', ack_required: true, ack_within_ms: 1000 }, b)).body
    const raised = (await eventually(async () => ((await overdue(b, m.id)).length ? overdue(b, m.id) : false), 4000, 20)) as any[]
    expect(Date.parse(raised[0].created_at) - (Date.parse(m.created_at) + 1000)).toBeLessThan(1000)
    await Bun.sleep(1000)
    expect(await overdue(b, m.id)).toHaveLength(1)
  })

  test('when the leader is killed, the next one raises what comes due', async () => {
    const m = (await send(null, { to: ['later'], subject: 'after the kill', ack_required: true, ack_within_ms: 4000 }, a)).body
    await a.kill()
    const raised = (await eventually(async () => ((await overdue(b, m.id)).length ? overdue(b, m.id) : false), 9000, 50)) as any[]
    expect(raised).toHaveLength(1)
    expect(Date.parse(raised[0].created_at) - (Date.parse(m.created_at) + 4000)).toBeLessThan(1000)
  })
})

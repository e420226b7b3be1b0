// A revoked or expired token ends what it holds open (access.md): its WebSockets close with
// 4401 and a reason naming why, and its held reads (inbox, events, state watch, task claim,
// lock line) answer 401 within a second, on the server that revoked it and on every other
// replica. On both backends; the replicas part in the PostgreSQL run.
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { call, register, startServer, tempDir, type TestServer } from './helpers'
import { PG_BASE, databaseFor } from './pg'

const ADMIN_TOKEN = 'revocation-admin'
const admin = { authorization: `Bearer ${ADMIN_TOKEN}` }
const bearer = (token: string) => ({ authorization: `Bearer ${token}` })

/** A WebSocket subscription with what it received and how it closed. */
async function subscribe(base: string, token: string, pattern: string) {
  const frames: { topic: string }[] = []
  const ws = new WebSocket(`${base.replace(/^http/, 'ws')}/api/events/subscribe?pattern=${pattern}&token=${encodeURIComponent(token)}`)
  ws.onmessage = (m) => frames.push(JSON.parse(String(m.data)))
  const closed = new Promise<{ code: number; reason: string; at: number }>((resolve) => (ws.onclose = (e) => resolve({ code: e.code, reason: e.reason, at: Date.now() })))
  await new Promise((resolve, reject) => ((ws.onopen = resolve), (ws.onerror = reject)))
  return { frames, closed, ws }
}

/** A call whose answer is timed. */
const timed = (p: ReturnType<typeof call>) => p.then((r) => ({ ...r, at: Date.now() }))

let names = 0
async function agentToken(server: TestServer, extra: Record<string, unknown> = {}) {
  const r = await call(server.api, 'POST', '/api/tokens', { name: `rev-${++names}`, role: 'agent', ...extra }, admin)
  expect(r.status).toBe(201)
  return r.body as { id: string; token: string; expires_at: string | null }
}

/**
 * Everything a token can hold open on `server`: a WebSocket on the API port and one on the
 * dashboard's, and each kind of held read, the reader acting as an instance of the token.
 */
async function holdEverything(server: TestServer, token: string, tag: string) {
  const h = bearer(token)
  const me = await register(server, `reader-${tag}`, h)
  const other = await register(server, `holder-${tag}`, admin)
  const mine = { ...h, ...me.h }
  await call(server.api, 'PUT', `/api/state/watch-${tag}`, { v: 1 }, admin)
  const etag = (await call(server.api, 'GET', `/api/state/watch-${tag}`, undefined, h)).headers.get('etag')!
  expect((await call(server.api, 'PUT', `/api/locks/line-${tag}`, { ttl_ms: 60_000 }, { ...admin, ...other.h })).status).toBe(200)
  const lastEvent = (await call(server.api, 'GET', '/api/events/history?last=1', undefined, h)).body[0]?.id ?? 0

  const sockets = [await subscribe(server.api, token, `${tag}.*`), await subscribe(server.dashboard, token, `${tag}.*`)]
  // Each socket receives while the token lives.
  await call(server.api, 'POST', '/api/events/publish', { topic: `${tag}.before` }, admin)
  for (const s of sockets) for (let i = 0; i < 100 && s.frames.length === 0; i++) await Bun.sleep(10)
  expect(sockets.map((s) => s.frames.map((f) => f.topic))).toEqual([[`${tag}.before`], [`${tag}.before`]])

  const held = {
    inbox: timed(call(server.api, 'GET', '/api/inbox?wait=20s', undefined, mine)),
    events: timed(call(server.api, 'GET', `/api/events/history?after_id=${lastEvent + 1000000}&wait=20s&topic=${tag}.never`, undefined, h)),
    state: timed(call(server.api, 'GET', `/api/state/watch-${tag}?wait=20s`, undefined, { ...h, 'if-none-match': etag })),
    claim: timed(call(server.api, 'POST', `/api/queues/q-${tag}/claim`, { wait_ms: 20_000 }, mine)),
    lock: timed(call(server.api, 'PUT', `/api/locks/line-${tag}`, { wait_ms: 20_000 }, mine)),
  }
  // Held: none has answered yet.
  await Bun.sleep(300)
  return { sockets, held, me }
}

/** After the token ended at `endedAt`: each socket closed 4401 with `reason`, each held read 401, all within a second; nothing later reached them. */
async function expectAllEnded(server: TestServer, hold: Awaited<ReturnType<typeof holdEverything>>, tag: string, endedAt: number, reason: string) {
  const answers = await Promise.all(Object.entries(hold.held).map(async ([what, p]) => ({ what, ...(await p) })))
  for (const a of answers) {
    expect([a.what, a.status, a.body?.code]).toEqual([a.what, 401, 401])
    expect(a.body.error).toStartWith(reason)
    expect([a.what, a.at - endedAt < 1000]).toEqual([a.what, true])
  }
  for (const s of hold.sockets) {
    const closed = await s.closed
    expect([closed.code, closed.reason]).toEqual([4401, reason])
    expect(closed.at - endedAt).toBeLessThan(1000)
  }
  // What comes later reaches none of them: no frame, no message handed out, no task claimed, no lock taken.
  await call(server.api, 'POST', '/api/events/publish', { topic: `${tag}.after` }, admin)
  const sent = (await call(server.api, 'POST', '/api/messages', { to: [hold.me.name], subject: 'after', body: 'b' }, admin)).body
  await call(server.api, 'POST', `/api/queues/q-${tag}/tasks`, { title: 'after' }, admin)
  await Bun.sleep(200)
  expect(hold.sockets.map((s) => s.frames.map((f) => f.topic))).toEqual([[`${tag}.before`], [`${tag}.before`]])
  expect((await call(server.api, 'GET', `/api/messages/${sent.id}`, undefined, admin)).body.receipts).toEqual([{ to: hold.me.name, delivered_at: null, acked_at: null }])
  expect((await call(server.api, 'GET', `/api/queues/q-${tag}/tasks`, undefined, admin)).body.map((t: { status: string }) => t.status)).toEqual(['ready'])
  const lock = (await call(server.api, 'GET', `/api/locks/line-${tag}`, undefined, admin)).body
  expect(lock.holders.map((h: { instance_id: string }) => h.instance_id)).not.toContain(hold.me.id)
}

describe('one server', () => {
  let s: TestServer
  beforeAll(async () => (s = await startServer({ args: ['--auth-token', ADMIN_TOKEN] })))
  afterAll(() => s.cleanup())

  test('a revoked token: its WebSockets close 4401 "token revoked", its held reads answer 401 within a second', { timeout: 30_000 }, async () => {
    const t = await agentToken(s)
    const hold = await holdEverything(s, t.token, 'rv')
    expect((await call(s.api, 'DELETE', `/api/tokens/${t.id}`, undefined, admin)).status).toBe(200)
    await expectAllEnded(s, hold, 'rv', Date.now(), 'token revoked')
  })

  test('an expired token: the same at its expires_at, timed by the server itself', { timeout: 30_000 }, async () => {
    const t = await agentToken(s, { ttl_ms: 4000 })
    const hold = await holdEverything(s, t.token, 'ex')
    const expiresAt = Date.parse(t.expires_at!)
    await expectAllEnded(s, hold, 'ex', expiresAt, 'token expired')
  })

  test("another token's connections and held reads stay open", { timeout: 30_000 }, async () => {
    const [kept, revoked] = [await agentToken(s), await agentToken(s)]
    const socket = await subscribe(s.api, kept.token, 'keep.*')
    const me = await register(s, 'keeper', bearer(kept.token))
    const inbox = timed(call(s.api, 'GET', '/api/inbox?wait=20s', undefined, { ...bearer(kept.token), ...me.h }))
    await Bun.sleep(200)
    expect((await call(s.api, 'DELETE', `/api/tokens/${revoked.id}`, undefined, admin)).status).toBe(200)
    await call(s.api, 'POST', '/api/messages', { to: ['keeper'], subject: 'still here', body: 'b' }, admin)
    await call(s.api, 'POST', '/api/events/publish', { topic: 'keep.x' }, admin)
    const answer = await inbox
    expect([answer.status, answer.body.messages.map((m: { subject: string }) => m.subject)]).toEqual([200, ['still here']])
    for (let i = 0; i < 100 && socket.frames.length === 0; i++) await Bun.sleep(10)
    expect(socket.frames.map((f) => f.topic)).toEqual(['keep.x'])
    expect(socket.ws.readyState).toBe(WebSocket.OPEN)
    socket.ws.close()
  })
})

describe.skipIf(!PG_BASE)('two replicas', () => {
  test('revoked on one replica or expired: the other closes its WebSockets and answers its held reads 401 within a second', { timeout: 60_000 }, async () => {
    const url = await databaseFor(tempDir('muster-revocation-replicas-'))
    const args = ['--database', url, '--auth-token', ADMIN_TOKEN]
    const [one, two] = await Promise.all([startServer({ args }), startServer({ args })])
    try {
      const t = await agentToken(one)
      const hold = await holdEverything(two, t.token, 'rp')
      expect((await call(one.api, 'DELETE', `/api/tokens/${t.id}`, undefined, admin)).status).toBe(200)
      await expectAllEnded(two, hold, 'rp', Date.now(), 'token revoked')
      // An expiry needs no event: the replica holding the reads times it itself.
      const brief = await agentToken(one, { ttl_ms: 4000 })
      const held = await holdEverything(two, brief.token, 'rpx')
      await expectAllEnded(two, held, 'rpx', Date.parse(brief.expires_at!), 'token expired')
    } finally {
      await Promise.all([one.cleanup(), two.cleanup()])
    }
  })
})

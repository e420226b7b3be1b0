import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { connect, type Socket } from 'node:net'
import { rmSync } from 'node:fs'
import { Bus, SUBSCRIBER_BUFFER } from '../services/bus'
import { openStore } from '../store'
import { setClockOffset } from '../lib/time'
import { call, eventually, startServer, tempDir, type TestServer } from './helpers'

/** Publishes `n` events on `topic` through the bus one after the other: their ids. */
async function publishMany(bus: Bus, topic: string, n: number): Promise<number[]> {
  const ids: number[] = []
  for (let i = 0; i < n; i++) ids.push((await bus.publish(topic, i)).id)
  return ids
}

const TOKEN = 'events-test-token'
const AUTH = { authorization: `Bearer ${TOKEN}` }
const RETENTION = 600

let s: TestServer
beforeAll(async () => (s = await startServer({ args: ['--auth-token', TOKEN, '--prune-interval', '100ms', '--event-retention', String(RETENTION)] })))
afterAll(() => s.cleanup())

const api = (method: string, path: string, body?: unknown) => call(s.api, method, path, body, AUTH)
const publish = async (topic: string, data?: unknown) => {
  const r = await api('POST', '/api/events/publish', data === undefined ? { topic } : { topic, data })
  expect(r.status).toBe(200)
  return r.body as Ev
}
const history = async (query: string) => {
  const r = await api('GET', `/api/events/history?${query}`)
  expect(r.status).toBe(200)
  return r.body as Ev[]
}

type Ev = { id: number; topic: string; data: unknown; source: string; created_at: string }

/** A real WebSocket client collecting every frame as parsed JSON. */
async function subscribe(query = '', headers: Record<string, string> = AUTH) {
  const frames: Ev[] = []
  const ws = new WebSocket(`${s.api.replace(/^http/, 'ws')}/api/events/subscribe${query}`, { headers } as any)
  ws.onmessage = (m) => frames.push(JSON.parse(String(m.data)))
  await new Promise((resolve, reject) => {
    ws.onopen = resolve
    ws.onerror = () => reject(new Error('websocket refused'))
  })
  return {
    frames,
    ws,
    /** Waits until a frame with this id (or higher) arrived. */
    until: (id: number) => eventually(() => frames.some((f) => f.id >= id), 10_000),
    close: () => ws.close(),
  }
}

/** An upgrade attempt over plain fetch: shows the status and body of a refusal. */
const upgradeAttempt = (path: string, headers: Record<string, string> = {}) =>
  call(s.api, 'GET', path, undefined, {
    upgrade: 'websocket',
    connection: 'Upgrade',
    'sec-websocket-key': 'dGhlIHNhbXBsZSBub25jZQ==',
    'sec-websocket-version': '13',
    ...headers,
  })

/**
 * A WebSocket client on a raw TCP socket that stops reading on demand, so the
 * server sees a subscriber that does not drain. Parses the (unmasked) server frames.
 */
async function rawSubscriber(query: string) {
  const url = new URL(s.api)
  const sock: Socket = connect(Number(url.port), url.hostname)
  await new Promise((resolve) => sock.once('connect', resolve))
  sock.write(
    `GET /api/events/subscribe${query} HTTP/1.1\r\nHost: ${url.host}\r\nAuthorization: Bearer ${TOKEN}\r\n` +
      'Upgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n\r\n',
  )
  let buf = Buffer.alloc(0)
  let upgraded = false
  const frames: Ev[] = []
  sock.on('data', (chunk: Buffer) => {
    buf = Buffer.concat([buf, chunk])
    if (!upgraded) {
      const end = buf.indexOf('\r\n\r\n')
      if (end < 0) return
      expect(buf.subarray(0, end).toString()).toStartWith('HTTP/1.1 101')
      upgraded = true
      buf = buf.subarray(end + 4)
    }
    for (;;) {
      if (buf.length < 2) return
      let len = buf[1] & 0x7f
      let at = 2
      if (len === 126) (len = buf.length >= 4 ? buf.readUInt16BE(2) : Infinity), (at = 4)
      else if (len === 127) (len = buf.length >= 10 ? Number(buf.readBigUInt64BE(2)) : Infinity), (at = 10)
      if (buf.length < at + len) return
      if ((buf[0] & 0x0f) === 1) frames.push(JSON.parse(buf.subarray(at, at + len).toString()))
      buf = buf.subarray(at + len)
    }
  })
  await eventually(() => upgraded)
  return { frames, pause: () => sock.pause(), resume: () => sock.resume(), close: () => sock.destroy() }
}

const subscriptions = async () => (await api('GET', '/api/events/subscriptions')).body as { id: number; pattern: string; sent: number; dropped: number; buffered: number }[]

describe('publish', () => {
  test('stores and returns the event; ids strictly increase', async () => {
    const a = await publish('pub.one', { n: 1, list: [1, 'x', null] })
    expect(Object.keys(a)).toEqual(['id', 'topic', 'data', 'source', 'created_at'])
    expect(a).toMatchObject({ topic: 'pub.one', data: { n: 1, list: [1, 'x', null] }, source: '' })
    expect(new Date(a.created_at).toISOString()).toBe(a.created_at)
    const b = await publish('pub.two')
    expect(b.data).toBeNull()
    expect(b.id).toBeGreaterThan(a.id)
    for (const data of ['text', 42, [1, 2], null, false]) expect((await publish('pub.kinds', data)).data).toEqual(data)
  })

  test('400 "topic is required" for a missing or empty topic; nothing stored', async () => {
    const before = await history('last=1')
    for (const body of [{}, { data: 1 }, { topic: '' }, undefined]) {
      const r = await api('POST', '/api/events/publish', body)
      expect(r.status).toBe(400)
      expect(r.body).toEqual({ error: 'topic is required', code: 400 })
    }
    const wrongType = await api('POST', '/api/events/publish', { topic: 7 })
    expect(wrongType.status).toBe(400)
    expect(wrongType.body.code).toBe(400)
    const badJson = await call(s.api, 'POST', '/api/events/publish', '{"topic":', { ...AUTH, 'content-type': 'application/json' })
    expect(badJson.status).toBe(400)
    expect(badJson.body.code).toBe(400)
    expect(await history('last=1')).toEqual(before)
  })

  test('401 without the bearer token', async () => {
    const r = await call(s.api, 'POST', '/api/events/publish', { topic: 'x' })
    expect(r.status).toBe(401)
    expect(r.body).toEqual({ error: 'invalid or missing bearer token', code: 401 })
  })
})

describe('history', () => {
  test('newest first, default topic *, [] when nothing matches', async () => {
    const ids = (await history('last=5')).map((e) => e.id)
    expect(ids).toEqual([...ids].sort((x, y) => y - x))
    expect(new Set(ids).size).toBe(5)
    expect(await history('topic=no.such.topic')).toEqual([])
  })

  test('topic glob is applied before last: the 5 newest matching events', async () => {
    const matching: number[] = []
    for (let i = 0; i < 8; i++) {
      matching.push((await publish('hist.change', i)).id)
      await publish('hist.change.contract', i)
      await publish('other.change', i)
    }
    const got = await history('last=5&topic=hist.*')
    expect(got.map((e) => e.id)).toEqual(matching.slice(-5).reverse())
    expect(got.every((e) => e.topic === 'hist.change')).toBe(true)
    expect((await history('topic=hist.change.*&last=100')).length).toBe(8)
    expect((await history('topic=*.change&last=100')).map((e) => e.topic).sort()).toEqual([...Array(8).fill('hist.change'), ...Array(8).fill('other.change')])
  })

  test('default last is 50', async () => {
    for (let i = 0; i < 55; i++) await publish('many.x', i)
    expect((await history('topic=many.x')).length).toBe(50)
  })

  test('from, to and source combine with topic and last', async () => {
    const first = await publish('win.a', 1)
    await Bun.sleep(5)
    const mid = await publish('win.a', 2)
    await Bun.sleep(5)
    const last = await publish('win.a', 3)
    const q = (extra: string) => history(`topic=win.*&${extra}`)
    expect((await q(`from=${first.created_at}&to=${last.created_at}`)).map((e) => e.id)).toEqual([last.id, mid.id, first.id])
    expect((await q(`from=${mid.created_at}`)).map((e) => e.id)).toEqual([last.id, mid.id])
    expect((await q(`to=${mid.created_at}&last=1`)).map((e) => e.id)).toEqual([mid.id])
    // an offset timestamp names the same instant
    const offset = new Date(Date.parse(mid.created_at)).toISOString().replace('Z', '+00:00')
    expect((await q(`from=${encodeURIComponent(offset)}`)).map((e) => e.id)).toEqual([last.id, mid.id])
    expect(await q('source=state')).toEqual([])
    expect((await q('source=&last=2')).length).toBe(2)
  })

  test('state and spec writes publish change events with their source', async () => {
    const w = await call(s.api, 'PUT', '/api/state/ev/key', '{"v":1}', AUTH)
    expect(w.status).toBe(200)
    const [state] = await history('source=state&topic=state.changed&last=1')
    expect(state).toMatchObject({ topic: 'state.changed', source: 'state', data: { key: 'ev/key', version: 1, hash: w.body.hash, operation: 'put' } })
    await call(s.api, 'DELETE', '/api/state/ev/key', undefined, AUTH)
    expect((await history('source=state&last=1'))[0].data).toMatchObject({ key: 'ev/key', operation: 'delete' })
    expect((await call(s.api, 'PUT', '/api/specs/proj/api', '{"a":1}', AUTH)).status).toBe(200)
    const [spec] = await history('source=specs&last=1')
    expect(spec).toMatchObject({ topic: 'spec.changed', source: 'specs', data: { project: 'proj', name: 'api', version: 1, operation: 'put' } })
    expect((await history('source=specs&topic=state.*')).length).toBe(0)
  })

  test('after_id: only later events, oldest first, with filters and last', async () => {
    const base = (await publish('resume.h', 0)).id
    const ids: number[] = []
    for (let i = 1; i <= 6; i++) {
      ids.push((await publish('resume.h', i)).id)
      await publish('resume.other', i)
    }
    expect((await history(`after_id=${base}&topic=resume.h`)).map((e) => e.id)).toEqual(ids)
    expect((await history(`after_id=${base}&topic=resume.h&last=2`)).map((e) => e.id)).toEqual(ids.slice(0, 2))
    expect((await history(`after_id=${ids[2]}&topic=resume.h&last=2`)).map((e) => e.id)).toEqual(ids.slice(3, 5))
    expect(await history(`after_id=${ids[5] + 100000}`)).toEqual([])
  })

  test('bad parameters are 400 with {error, code}', async () => {
    for (const [query, error] of [
      ['last=0', 'invalid last: expected an integer >= 1'],
      ['last=abc', 'invalid last: expected an integer >= 1'],
      ['after_id=-1', 'invalid after_id: expected an integer >= 0'],
      ['from=yesterday', 'invalid from: expected an RFC 3339 timestamp'],
      ['to=2024-13-45', 'invalid to: expected an RFC 3339 timestamp'],
    ]) {
      const r = await api('GET', `/api/events/history?${query}`)
      expect({ query, status: r.status, body: r.body }).toEqual({ query, status: 400, body: { error, code: 400 } })
    }
  })
})

describe('WebSocket subscribe', () => {
  test('each matching event is one JSON text frame; patterns filter', async () => {
    const all = await subscribe()
    const some = await subscribe('?pattern=wsf.a.*')
    const a = await publish('wsf.a.x', { hello: 'world' })
    const b = await publish('wsf.b.x', 2)
    const c = await publish('wsf.a.x.y', 3)
    const d = await publish('wsf.a.z', null)
    await all.until(d.id)
    await some.until(d.id)
    expect(some.frames).toEqual([a, d])
    expect(all.frames.filter((f) => f.topic.startsWith('wsf.'))).toEqual([a, b, c, d])
    all.close()
    some.close()
  })

  test('auth: refused without a token or with a wrong one; header or ?token= accepted', async () => {
    const none = await upgradeAttempt('/api/events/subscribe')
    expect(none.status).toBe(401)
    expect(none.body).toEqual({ error: 'invalid or missing bearer token', code: 401 })
    expect((await upgradeAttempt('/api/events/subscribe?token=wrong')).status).toBe(401)
    await expect(subscribe('', {})).rejects.toThrow('websocket refused')
    await expect(subscribe('?token=wrong', {})).rejects.toThrow('websocket refused')
    const viaQuery = await subscribe(`?token=${TOKEN}&pattern=auth.*`, {})
    const viaHeader = await subscribe('?pattern=auth.*')
    const e = await publish('auth.ok')
    await viaQuery.until(e.id)
    await viaHeader.until(e.id)
    viaQuery.close()
    viaHeader.close()
    // ?token= is only for upgrades: plain requests still need the header
    expect((await call(s.api, 'GET', `/api/events/history?token=${TOKEN}`)).status).toBe(401)
  })

  test('bad after_id is 400 before the upgrade; a plain GET is 426', async () => {
    const bad = await upgradeAttempt('/api/events/subscribe?after_id=abc', AUTH)
    expect(bad.status).toBe(400)
    expect(bad.body).toEqual({ error: 'invalid after_id: expected an integer >= 0', code: 400 })
    const plain = await api('GET', '/api/events/subscribe')
    expect(plain.status).toBe(426)
    expect(plain.body).toEqual({ error: 'expected a WebSocket upgrade request', code: 426 })
  })

  test('resume across a reconnect: replay then live, no gap, no duplicate', async () => {
    const first = await subscribe('?pattern=seam.*')
    let last = 0
    for (let i = 0; i < 3; i++) last = (await publish('seam.a', i)).id
    await first.until(last)
    first.close()
    // Missed while away: more than one replay page, mixed with events of other topics.
    const missed: Promise<Ev>[] = []
    for (let i = 0; i < 300; i++) missed.push(publish(i % 10 === 0 ? 'seamless.x' : 'seam.b', i))
    await Promise.all(missed)
    // Keep publishing while the new subscription replays and switches to live.
    let publishing = true
    const during = (async () => {
      let n = 0
      while (publishing || n < 20) await publish('seam.c', n++)
      return n
    })()
    const second = await subscribe(`?pattern=seam.*&after_id=${last}`)
    await Bun.sleep(50)
    publishing = false
    await during
    const final = await publish('seam.end')
    await second.until(final.id)
    second.close()
    const stored = await history(`after_id=${last}&topic=seam.*&last=100000`)
    expect(stored.length).toBeGreaterThan(290)
    expect(second.frames.map((f) => f.id)).toEqual(stored.map((e) => e.id))
    expect(second.frames).toEqual(stored)
  })

  test('a subscriber that does not drain loses events alone; others and the publisher are not held up', async () => {
    const slow = await rawSubscriber('?pattern=flood.*')
    const fast = await subscribe('?pattern=flood.*')
    slow.pause()
    const big = 'x'.repeat(128 * 1024)
    const published: Ev[] = []
    const slowInfo = async () => (await subscriptions()).find((x) => x.pattern === 'flood.*' && x.dropped > 0)
    // Publish until the slow client's socket and its 64-event buffer are full, then some more.
    for (let extra = -1; extra < 20 && published.length < 1000; ) {
      const started = performance.now()
      published.push(await publish('flood.big', { n: published.length, big }))
      expect(performance.now() - started).toBeLessThan(1000)
      if (extra >= 0) extra++
      else if (published.length % 10 === 0 && (await slowInfo())) extra = 0
    }
    const lastId = published.at(-1)!.id
    await fast.until(lastId)
    expect(fast.frames.map((f) => f.id)).toEqual(published.map((e) => e.id))
    const infos = (await subscriptions()).filter((x) => x.pattern === 'flood.*')
    expect(infos.length).toBe(2)
    const [lossy, intact] = infos[0].dropped > 0 ? infos : [infos[1], infos[0]]
    expect(intact.dropped).toBe(0)
    expect(lossy.buffered).toBe(64)
    expect(lossy.dropped).toBeGreaterThanOrEqual(20)
    expect(lossy.sent + lossy.buffered + lossy.dropped).toBe(published.length)
    // Once it reads again it gets what was sent and buffered, in order, then live events again.
    slow.resume()
    await eventually(() => slow.frames.length === lossy.sent + lossy.buffered, 10_000)
    const got = slow.frames.map((f) => f.id)
    expect(got).toEqual([...got].sort((x, y) => x - y))
    expect(got.slice(-64)).toEqual(published.slice(-64 - lossy.dropped, -lossy.dropped).map((e) => e.id))
    const after = await publish('flood.small', 'caught up')
    await eventually(() => slow.frames.at(-1)?.id === after.id)
    slow.close()
    fast.close()
    await eventually(async () => !(await subscriptions()).some((x) => x.pattern === 'flood.*'))
  })
})

describe('pruning', () => {
  test(`keeps the newest --event-retention (${RETENTION}) events, oldest ids removed first`, async () => {
    const batch: Promise<Ev>[] = []
    for (let i = 0; i < RETENTION + 50; i++) batch.push(publish('prune.x', i))
    const newest = (await Promise.all(batch)).reduce((m, e) => Math.max(m, e.id), 0)
    const all = await eventually(async () => {
      const h = await history(`last=100000`)
      return h.length === RETENTION && h
    }, 5000) as Ev[]
    expect(all[0].id).toBe(newest)
    expect(all.at(-1)!.id).toBe(newest - RETENTION + 1)
    // ids keep increasing after a prune
    expect((await publish('prune.after')).id).toBe(newest + 1)
  })
})

// The seam and the buffer in-process, against the real store, where the
// interleavings can be forced instead of hoped for.
describe('bus subscriptions (in-process)', () => {
  const dir = tempDir()
  const store = openStore(dir)
  const bus = new Bus(store)
  afterAll(() => {
    store.close()
    rmSync(dir, { recursive: true, force: true })
  })
  const ticks = () => Bun.sleep(1)
  const sink = (status = () => 1) => {
    const frames: number[] = []
    return { frames, send: (f: string) => (frames.push(JSON.parse(f).id), status()), end() {} }
  }

  test('an event stored before the replay query but handed out after it arrives once', async () => {
    const before = await store.events.lastId()
    const out = sink()
    const publishing = bus.publish('seam.dup', 1) // stored now, fanned out a few microtasks later
    const sub = bus.subscribe(out, '*', before) // the replay query already sees it
    const event = await publishing
    await ticks()
    expect(out.frames).toEqual([event.id])
    sub.close()
  })

  test('events published while the replay runs follow it in order', async () => {
    const before = await store.events.lastId()
    const ids = await publishMany(bus, 'seam.old', 300)
    const out = sink()
    const sub = bus.subscribe(out, 'seam.*', before)
    ids.push(...(await publishMany(bus, 'seam.new', 100)))
    await ticks()
    expect(out.frames).toEqual(ids)
    sub.close()
  })

  test(`a backed-up sink buffers ${SUBSCRIBER_BUFFER} events, drops and counts the rest, drains in order`, async () => {
    let backedUp = true
    const out = sink(() => (backedUp ? -1 : 1))
    const sub = bus.subscribe(out, 'buf.*')
    const ids: number[] = []
    for (let i = 0; i < 100; i++) ids.push((await bus.publish('buf.x', i)).id)
    expect(out.frames).toEqual([ids[0]]) // taken by the transport, which then reported backpressure
    expect(sub.info()).toMatchObject({ sent: 1, buffered: SUBSCRIBER_BUFFER, dropped: 100 - 1 - SUBSCRIBER_BUFFER })
    backedUp = false
    sub.drain()
    expect(out.frames).toEqual(ids.slice(0, 1 + SUBSCRIBER_BUFFER))
    const next = await bus.publish('buf.x', 'live')
    expect(out.frames.at(-1)).toBe(next.id)
    expect(sub.info()).toMatchObject({ sent: 2 + SUBSCRIBER_BUFFER, buffered: 0, dropped: 100 - 1 - SUBSCRIBER_BUFFER })
    sub.close()
  })

  /** A sink like the WebSocket one: cork() joins the sends, and may report backpressure after. */
  const corkingSink = (backedUpAfterCork = () => false) => {
    const out = { frames: [] as number[], corks: [] as number[][], send: (f: string) => (out.frames.push(JSON.parse(f).id), 1), end() {} }
    return Object.assign(out, {
      cork(sends: () => void) {
        const before = out.frames.length
        sends()
        out.corks.push(out.frames.slice(before))
        return backedUpAfterCork()
      },
    })
  }
  /** Units started in one event-loop turn: they share one COMMIT. */
  const oneTurn = <T>(units: (() => Promise<T>)[]) => Promise.allSettled(units.map((u) => u()))

  test('the events of one COMMIT reach each subscriber in one corked write, in id order, filtered by its pattern', async () => {
    const all = corkingSink()
    const some = corkingSink()
    const none = corkingSink()
    const subs = [bus.subscribe(all, 'batch.*'), bus.subscribe(some, 'batch.b'), bus.subscribe(none, 'other.*')]
    const settled = await oneTurn(['batch.a', 'batch.b', 'batch.a', 'batch.b'].map((topic) => () => bus.publish(topic, null)))
    const ids = settled.map((r) => (r as PromiseFulfilledResult<{ id: number }>).value.id)
    expect(all.corks).toEqual([ids])
    expect(some.corks).toEqual([[ids[1], ids[3]]])
    expect(none.frames).toEqual([])
    for (const sub of subs) sub.close()
  })

  test('a unit that fails in a shared COMMIT rolls back alone: its event is neither stored nor sent; the others are, once committed', async () => {
    const out = corkingSink()
    const sub = bus.subscribe(out, 'shared.*')
    const settled = await oneTurn([
      () => bus.publish('shared.kept', 1),
      () =>
        store.write(async (tx) => {
          await tx.emit('shared.lost', 2, '')
          throw new Error('refused')
        }),
      () => bus.publish('shared.kept', 3),
    ])
    expect(settled.map((r) => r.status)).toEqual(['fulfilled', 'rejected', 'fulfilled'])
    const kept = [settled[0], settled[2]].map((r) => (r as PromiseFulfilledResult<{ id: number }>).value.id)
    // Acknowledged after the COMMIT: the reader connection, which sees committed data only, has them.
    const stored = await store.events.query({ topic: 'shared.*', afterId: kept[0] - 1, limit: 10 })
    expect(stored.map((e) => [e.id, e.topic])).toEqual(kept.map((id) => [id, 'shared.kept']))
    expect(out.frames).toEqual(kept)
    sub.close()
  })

  test('backpressure seen after a corked write holds later events in the buffer until drain', async () => {
    let backedUp = true
    const out = corkingSink(() => backedUp)
    const sub = bus.subscribe(out, 'press.*')
    const first = (await oneTurn([0, 1].map((n) => () => bus.publish('press.x', n)))).map((r) => (r as PromiseFulfilledResult<{ id: number }>).value.id)
    expect(out.corks).toEqual([first]) // the transport took the whole write, then reported backpressure
    const later = await bus.publish('press.x', 2)
    expect(out.frames).toEqual(first)
    expect(sub.info()).toMatchObject({ sent: 2, buffered: 1, dropped: 0 })
    backedUp = false
    sub.drain()
    expect(out.frames).toEqual([...first, later.id])
    sub.close()
  })
})

// Subscribers whose connections keep up share a pub/sub topic per pattern (services/bus.ts): a
// server's publish stands in for Bun's here, so that what goes by the topic and what goes
// by each connection's own send can be told apart.
describe('bus subscriptions on a shared topic (in-process)', () => {
  const dir = tempDir()
  const store = openStore(dir)
  const bus = new Bus(store)
  afterAll(() => {
    store.close()
    rmSync(dir, { recursive: true, force: true })
  })
  type Out = ReturnType<typeof sharedSink>
  const topics = new Map<string, Set<Out>>()
  let published = 0
  /** When each delivery began: one delivery publishes all its frames in one go (services/bus.ts deliver). */
  const deliveries: number[] = []
  let delivering = false
  bus.serve('test', {
    publish(topic, frame) {
      published++
      if (!delivering) (delivering = true), deliveries.push(performance.now()), queueMicrotask(() => (delivering = false))
      for (const out of topics.get(topic) ?? []) out.frames.push(JSON.parse(frame).id)
    },
  })
  /** A connection on the fake server: `backlog` > 0 while it has not taken what it was given. */
  const sharedSink = () => {
    const out = {
      frames: [] as number[],
      sends: 0,
      backlog: 0,
      send(frame: string) {
        out.sends++
        out.frames.push(JSON.parse(frame).id)
        return out.backlog > 0 ? -1 : 1
      },
      end() {},
      shared: {
        via: 'test',
        subscribe: (topic: string) => void (topics.get(topic) ?? topics.set(topic, new Set()).get(topic)!).add(out),
        unsubscribe: (topic: string) => void topics.get(topic)?.delete(out),
        buffered: () => out.backlog,
      },
    }
    return out
  }
  /** Past the delivery window. */
  const settle = () => Bun.sleep(60)

  test('subscribers that keep up get each matching event by one publish for all, once, in order; sent counts it', async () => {
    const wide = [sharedSink(), sharedSink(), sharedSink()]
    const narrow = sharedSink()
    const subs = [...wide.map((out) => bus.subscribe(out, 'sh.*')), bus.subscribe(narrow, 'sh.b')]
    published = 0
    const ids: number[] = []
    const bs: number[] = []
    for (let i = 0; i < 10; i++) {
      const e = await bus.publish(i % 3 ? 'sh.a' : 'sh.b', i)
      ids.push(e.id)
      if (e.topic === 'sh.b') bs.push(e.id)
    }
    await settle()
    for (const out of wide) expect(out.frames).toEqual(ids)
    expect(narrow.frames).toEqual(bs)
    expect(published).toBe(ids.length + bs.length)
    expect([...wide, narrow].map((out) => out.sends)).toEqual([0, 0, 0, 0])
    expect(subs.map((s) => s.info().sent)).toEqual([10, 10, 10, bs.length])
    for (const s of subs) s.close()
    expect([...topics.values()].every((set) => set.size === 0)).toBe(true)
  })

  test('with 100 connections on a topic, deliveries come at most every 20 ms however often events commit', async () => {
    const outs = Array.from({ length: 100 }, sharedSink)
    const subs = outs.map((out) => bus.subscribe(out, 'win.*'))
    deliveries.length = 0
    const ids: number[] = []
    for (let i = 0; i < 30; i++) {
      ids.push((await bus.publish('win.x', i)).id)
      await Bun.sleep(1)
    }
    await settle()
    for (const out of outs) expect(out.frames).toEqual(ids)
    // Thirty commits over 30 ms or more: a delivery after each would be a write per connection per event.
    expect(deliveries.length).toBeGreaterThanOrEqual(2)
    expect(deliveries.length).toBeLessThan(ids.length)
    // Less than a millisecond left of a window goes to the next turn of the loop, not a timer.
    const gaps = deliveries.slice(1).map((t, i) => t - deliveries[i])
    expect(Math.min(...gaps)).toBeGreaterThanOrEqual(18)
    for (const s of subs) s.close()
  })

  test('a subscriber whose replay read events still waiting for their delivery gets each once', async () => {
    const crowd = Array.from({ length: 100 }, sharedSink)
    const subs = crowd.map((out) => bus.subscribe(out, 'rp.*'))
    const before = await bus.publish('rp.x', 0)
    await settle()
    // Right after a delivery: the next waits out the window, and the replay below reads this event meanwhile.
    const waiting = [(await bus.publish('rp.x', 1)).id, (await bus.publish('rp.x', 2)).id]
    const late = sharedSink()
    const s = bus.subscribe(late, 'rp.*', before.id)
    await settle()
    expect(late.frames).toEqual(waiting)
    const live = await bus.publish('rp.x', 3)
    await settle()
    expect(late.frames).toEqual([...waiting, live.id])
    expect(s.shared).toBe(true)
    for (const x of [...subs, s]) x.close()
  })

  test(`a backed-up connection leaves the topic: ${SUBSCRIBER_BUFFER} events wait for it, the rest are dropped and counted; drained, it catches up and shares again`, async () => {
    const slow = sharedSink()
    const fast = sharedSink()
    const [s, f] = [bus.subscribe(slow, 'bk.*'), bus.subscribe(fast, 'bk.*')]
    const ids = await publishMany(bus, 'bk.x', 1)
    await settle()
    slow.backlog = 1 // it has not taken that frame yet
    ids.push(...(await publishMany(bus, 'bk.x', 100)))
    await settle()
    expect(fast.frames).toEqual(ids)
    expect(slow.frames).toEqual(ids.slice(0, 1))
    expect(s.info()).toMatchObject({ sent: 1, buffered: SUBSCRIBER_BUFFER, dropped: 100 - SUBSCRIBER_BUFFER })
    slow.backlog = 0
    s.drain()
    expect(slow.frames).toEqual(ids.slice(0, 1 + SUBSCRIBER_BUFFER))
    expect(slow.sends).toBe(SUBSCRIBER_BUFFER)
    const live = await bus.publish('bk.x', 'live')
    await settle()
    expect(slow.frames.at(-1)).toBe(live.id)
    expect(slow.sends).toBe(SUBSCRIBER_BUFFER) // back on the topic
    expect(s.info()).toMatchObject({ sent: 2 + SUBSCRIBER_BUFFER, buffered: 0, dropped: 100 - SUBSCRIBER_BUFFER })
    expect(f.info()).toMatchObject({ sent: 102, buffered: 0, dropped: 0 })
    s.close()
    f.close()
  })

  test('a subscriber replaying after_id goes on the topic once caught up, with no gap or duplicate at the seam', async () => {
    const before = await store.events.lastId()
    const ids = await publishMany(bus, 'rp.old', 300)
    const out = sharedSink()
    const sub = bus.subscribe(out, 'rp.*', before)
    ids.push(...(await publishMany(bus, 'rp.new', 50)))
    await eventually(() => !sub.info().replaying)
    await settle()
    const replayed = out.sends
    ids.push(...(await publishMany(bus, 'rp.live', 5)))
    await settle()
    expect(out.frames).toEqual(ids)
    expect(out.sends).toBe(replayed)
    expect(sub.info().sent).toBe(ids.length)
    sub.close()
  })
})

// Times rise with ids, so the store answers from/to with an id range (binary search on the rowid)
// rather than an index; these check that range against every event, with the clock moved by hand.
describe('event times (in-process store)', () => {
  const dir = tempDir()
  const store = openStore(dir)
  const bus = new Bus(store)
  afterAll(() => {
    setClockOffset(0)
    store.close()
    rmSync(dir, { recursive: true, force: true })
  })

  test('a clock that steps back does not take event times back', async () => {
    const first = await bus.publish('clock.x', 1)
    setClockOffset(-3_600_000)
    const second = await bus.publish('clock.x', 2)
    setClockOffset(0)
    expect(second.id).toBeGreaterThan(first.id)
    expect(second.created_at).toBe(first.created_at)
    const stored = await store.events.query({ topic: 'clock.*', from: first.created_at, to: first.created_at, limit: 10 })
    expect(stored.map((e) => e.id)).toEqual([second.id, first.id])
  })

  test('from and to give exactly the events a scan of every event would, with pruned ids below', async () => {
    const all: { id: number; created_at: string }[] = []
    // Runs of equal times and gaps of a second and more, over ids that no longer start at 1.
    for (let i = 0; i < 240; i++) {
      setClockOffset(Math.floor(i / 3) * 1000 + (i % 7 === 0 ? 5000 : 0) * Math.floor(i / 7))
      all.push(await bus.publish('range.x', i))
    }
    setClockOffset(0)
    await store.write(async (tx) => await tx.events.prune(await store.events.pruneCutoff(200), 1000))
    const kept = (await store.events.query({ topic: 'range.*', limit: 1000 })).map((e) => e.id)
    expect(kept.length).toBe(200)
    const times = [...new Set(all.map((e) => e.created_at))]
    const before = new Date(Date.parse(times[0]) - 1).toISOString()
    const after = new Date(Date.parse(times.at(-1)!) + 1).toISOString()
    const bounds = [before, ...times.filter((_, i) => i % 5 === 0), after]
    for (const from of [undefined, ...bounds])
      for (const to of [undefined, ...bounds.filter((_, i) => i % 4 === 1)]) {
        const want = all
          .filter((e) => kept.includes(e.id) && (!from || e.created_at >= from) && (!to || e.created_at <= to))
          .map((e) => e.id)
          .reverse()
        const got = await store.events.query({ topic: 'range.*', from, to, limit: 1000 })
        expect({ from, to, ids: got.map((e) => e.id) }).toEqual({ from, to, ids: want })
      }
  })
})

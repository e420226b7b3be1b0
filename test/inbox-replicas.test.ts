// Held inbox reads on one replica woken by sends through another, many at once
// (issue 51: a fleet run on two replicas reported messages that never woke their
// holder). Every holder on B loops on `GET /api/inbox?wait=…&after=<cursor>` as an
// agent does; senders on A (and on B) send to them concurrently. A woken read answers
// with the one message that woke it, so a lost wake-up shows either as a message no
// read ever returns (a later message's wake moves the cursor past it) or as a read
// that sits out its whole wait: the test asserts every message comes back, once, in
// order, well before the holds' waits end.
// Runs in the suite's PostgreSQL run only (test/run.ts); the SQLite run has one process per data dir.
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { call, eventually, register, startServer, tempDir, type Agent, type TestServer } from './helpers'
import { databaseFor, onPostgres } from './pg'

const HOLDERS = 120
const PER_HOLDER = 6
/** Sends are spread over this long, so they land while reads are held, re-armed and in flight. */
const SPREAD_MS = 3000
/** Far longer than any wake takes: a read that sits it out was not woken. */
const WAIT = '25s'

describe.skipIf(!onPostgres)('held inbox reads across replicas', () => {
  let a: TestServer
  let b: TestServer
  beforeAll(async () => {
    const url = await databaseFor(tempDir('muster-inbox-wake-'))
    a = await startServer({ args: ['--database', url] })
    b = await startServer({ args: ['--database', url] })
  })
  afterAll(async () => {
    await a?.cleanup()
    await b?.cleanup()
  })

  test('every message sent through A (or B) wakes its holder held on B, once, in order, none lost', async () => {
    const run = Math.random().toString(36).slice(2, 7)
    const holders = await Promise.all(Array.from({ length: HOLDERS }, (_, i) => register(b, `wake-${run}-${i}`)))
    const senders = await Promise.all(Array.from({ length: 20 }, (_, i) => register(i % 4 === 3 ? b : a, `sender-${run}-${i}`)))
    const senderAt = (i: number) => ({ who: senders[i % senders.length], server: i % 4 === 3 ? b : a })

    let holding = true
    const got = new Map<string, number[]>(holders.map((h) => [h.name, []]))
    const wokenAt = new Map<number, number>()
    const errors: string[] = []
    const hold = async (h: Agent) => {
      let cursor = 0
      while (holding) {
        let r: Awaited<ReturnType<typeof call>>
        try {
          r = await call(b.api, 'GET', `/api/inbox?wait=${WAIT}&after=${cursor}`, undefined, h.h)
        } catch (err) {
          // The servers stop after the test, under the holds still waiting.
          if (holding) errors.push(String(err))
          break
        }
        if (r.status !== 200) {
          errors.push(`${r.status} ${r.text}`)
          break
        }
        const at = performance.now()
        for (const m of r.body.messages) got.get(h.name)!.push(m.id), wokenAt.set(m.id, at)
        cursor = r.body.cursor
      }
    }
    for (const h of holders) void hold(h)
    // The reads are held (a send before that would be found by the read itself, not woken).
    await Bun.sleep(500)

    const sent = new Map<string, number[]>(holders.map((h) => [h.name, []]))
    const sentAt = new Map<number, number>()
    const answeredAt = new Map<number, number>()
    await Promise.all(
      holders.flatMap((h, i) =>
        Array.from({ length: PER_HOLDER }, async (_, k) => {
          await Bun.sleep(Math.random() * SPREAD_MS)
          const { who, server } = senderAt(i * PER_HOLDER + k)
          const t0 = performance.now()
          const r = await call(server.api, 'POST', '/api/messages', { to: [h.name], subject: `m${k}` }, who.h)
          expect(r.status).toBe(201)
          sent.get(h.name)!.push(r.body.id)
          sentAt.set(r.body.id, t0)
          answeredAt.set(r.body.id, performance.now())
        }),
      ),
    )
    const total = HOLDERS * PER_HOLDER
    const returned = () => [...got.values()].reduce((n, ids) => n + ids.length, 0)
    // Far less than the holds' wait: only woken reads answer this soon.
    await eventually(() => returned() >= total, 10_000, 50).catch(() => {})
    holding = false

    const lost = holders.flatMap((h) => sent.get(h.name)!.filter((id) => !got.get(h.name)!.includes(id)).map((id) => `${id} to ${h.name}`))
    const lags = [...sentAt].map(([id, t0]) => (wokenAt.get(id) ?? Infinity) - t0).sort((x, y) => x - y)
    const early = [...answeredAt].filter(([id, at]) => (wokenAt.get(id) ?? Infinity) < at).length
    console.log(`woken before the sender had its 201: ${early}`)
    console.log(
      `inbox wake across replicas: ${total} messages to ${HOLDERS} holders; returned ${returned()}; lost ${lost.length}; send -> answer p50 ${lags[Math.floor(total / 2)].toFixed(1)} ms, max ${lags.at(-1)!.toFixed(1)} ms`,
    )
    expect(errors).toEqual([])
    expect(lost).toEqual([])
    for (const h of holders) expect(got.get(h.name)).toEqual(sent.get(h.name)!.sort((x, y) => x - y))
  }, 60_000)
})

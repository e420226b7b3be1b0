// Messages are durable: a server killed -9 while sends and acks are in flight loses
// none that it answered (201 send, 200 ack), with its message.sent / message.acked
// event; answers it never gave may or may not have committed. And pruning events
// (--event-retention) never takes messages with them.
import { afterAll, expect, test } from 'bun:test'
import { call, register, startServer, tempDir, type Agent } from './helpers'
import { rmSync } from 'node:fs'

const dir = tempDir()
afterAll(() => rmSync(dir, { recursive: true, force: true }))

test('kill -9 during concurrent sends and acks: every answered send and ack is there after the restart', async () => {
  const a = await startServer({ dataDir: dir })
  const agents: Agent[] = []
  for (let i = 0; i < 4; i++) agents.push(await register(a, `durable-${i}`))
  const sent = new Map<number, { to: string; subject: string; body: string }>()
  const acked = new Map<number, { by: string; acked_at: string }>()
  let killed = false
  const worker = async (w: number) => {
    const me = agents[w % agents.length]
    for (let i = 0; !killed; i++) {
      try {
        const message = { to: [me.name], subject: `w${w} #${i}`, body: `body of ${w}/${i} `.repeat(20), ack_required: true }
        const s = await call(a.api, 'POST', '/api/messages', message)
        if (s.status !== 201) continue
        sent.set(s.body.id, { to: me.name, subject: message.subject, body: message.body })
        const k = await call(a.api, 'POST', `/api/messages/${s.body.id}/ack`, undefined, me.h)
        if (k.status === 200) acked.set(s.body.id, { by: me.name, acked_at: k.body.acked_at })
      } catch {
        return // the connection died with the server
      }
    }
  }
  const workers = Array.from({ length: 8 }, (_, w) => worker(w))
  while (acked.size < 150) await Bun.sleep(5)
  killed = true
  await a.kill()
  await Promise.all(workers)

  const b = await startServer({ dataDir: dir })
  try {
    const events = (await call(b.api, 'GET', '/api/events/history?after_id=0&last=10000&topic=message.*')).body as any[]
    const sentEvents = new Set(events.filter((e) => e.topic === 'message.sent').map((e) => e.data.id))
    const ackEvents = new Set(events.filter((e) => e.topic === 'message.acked').map((e) => `${e.data.id} ${e.data.by}`))
    for (const [id, m] of sent) {
      const got = await call(b.api, 'GET', `/api/messages/${id}`)
      expect(got.status).toBe(200)
      expect(got.body).toMatchObject({ id, to: [m.to], subject: m.subject, body: m.body })
      expect(sentEvents.has(id)).toBe(true)
      const ack = acked.get(id)
      if (ack) {
        expect(got.body.receipts).toEqual([{ to: ack.by, delivered_at: ack.acked_at, acked_at: ack.acked_at }])
        expect(ackEvents.has(`${id} ${ack.by}`)).toBe(true)
      }
    }
    // The inbox after the restart still holds every answered send, and no answered ack is undone.
    for (const me of agents) {
      const page = (await call(b.api, 'GET', '/api/inbox?limit=1000&unacked=1', undefined, me.h)).body.messages as any[]
      for (const m of page) expect(acked.has(m.id)).toBe(false)
    }
    expect(sent.size).toBeGreaterThanOrEqual(150)
  } finally {
    await b.stop()
  }
})

test('pruning events leaves messages and their receipts alone', async () => {
  const s = await startServer({ args: ['--prune-interval', '100ms', '--event-retention', '3'] })
  try {
    const me = await register(s, 'pruned')
    const sent: number[] = []
    for (let i = 0; i < 10; i++) sent.push((await call(s.api, 'POST', '/api/messages', { to: [me.name], subject: `keep ${i}` })).body.id)
    expect((await call(s.api, 'POST', `/api/messages/${sent[0]}/ack`, undefined, me.h)).status).toBe(200)
    for (let i = 0; i < 10; i++) await call(s.api, 'POST', '/api/events/publish', { topic: 'filler', data: { i } })
    // The events of the sends are pruned away...
    const gone = async () => !(await call(s.api, 'GET', '/api/events/history?after_id=0&last=100&topic=message.*')).body.length
    const deadline = Date.now() + 5000
    while (!(await gone()) && Date.now() < deadline) await Bun.sleep(50)
    expect(await gone()).toBe(true)
    // ...the messages are not.
    const page = (await call(s.api, 'GET', '/api/inbox', undefined, me.h)).body
    expect(page.messages.map((m: any) => m.id)).toEqual(sent)
    expect(page.messages[0].acked_at).toEqual(expect.any(String))
    expect((await call(s.api, 'GET', `/api/messages?to=${me.name}`)).body).toHaveLength(10)
  } finally {
    await s.cleanup()
  }
})

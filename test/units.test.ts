// Units of work that share one transaction (group commit), in-process on the store of
// this pass: each unit that fails rolls back alone, every other one commits, and the
// committed units' events keep gapless ids in unit order, delivered once each, in order.
// On PostgreSQL the units of a batch go out without waiting for each other's answers
// (store/pg/units.ts); a statement that fails there makes the batch run again one unit
// at a time, which must end exactly as if it had run so from the start.
import { afterAll, beforeAll, expect, test } from 'bun:test'
import { rmSync } from 'node:fs'
import { openConfiguredStore, type Event, type Store, type Tx } from '../store'
import { tempDir } from './helpers'
import { isEcho } from '../services/events'
import { databaseFor, onPostgres, PG_BASE } from './pg'

let store: Store
const dir = tempDir()
const seen: Event[] = []
beforeAll(async () => {
  store = await openConfiguredStore(PG_BASE ? await databaseFor(dir) : '', dir)
  store.onEvent((e) => seen.push(e))
})
afterAll(async () => {
  await store.close()
  rmSync(dir, { recursive: true, force: true })
})

const bytes = (s: string) => new TextEncoder().encode(s)
let n = 0

/** `units` queued behind a unit that holds the writer until all are queued, so they share one batch. */
async function oneBatch(units: ((tx: Tx) => Promise<unknown>)[]): Promise<PromiseSettledResult<unknown>[]> {
  let open!: () => void
  const gate = new Promise<void>((resolve) => (open = resolve))
  const blocker = store.write(() => gate)
  const results = Promise.allSettled(units.map((fn) => store.write(fn)))
  open()
  await blocker
  return results
}

/** The events this store delivered with `tag` in their data, in delivery order. */
const delivered = (tag: string) => seen.filter((e) => (e.data as { tag?: string })?.tag === tag)

async function expectBatch(tag: string, results: PromiseSettledResult<unknown>[], committed: string[]): Promise<void> {
  const ids = results.flatMap((r) => (r.status === 'fulfilled' && r.value && typeof r.value === 'object' && 'id' in r.value ? [(r.value as Event).id] : []))
  // Gapless and in unit order: the failed units gave their ids back.
  expect(ids).toEqual(ids.map((_, i) => ids[0] + i))
  for (let i = 0; i < 50 && delivered(tag).length < committed.length; i++) await Bun.sleep(10)
  expect(delivered(tag).map((e) => e.topic)).toEqual(committed)
  expect(delivered(tag).map((e) => e.id)).toEqual(ids)
  const stored = await store.events.query({ topic: `${tag}.*`, afterId: ids[0] - 1, limit: 100 })
  expect(stored.map((e) => e.topic)).toEqual(committed)
}

test('in one batch, a unit that throws rolls back alone; the others commit with gapless ids', async () => {
  const tag = `b${++n}`
  const key = `units/${tag}`
  const results = await oneBatch([
    (tx) => tx.emit(`${tag}.a`, { tag }, 'test'),
    async (tx) => {
      await tx.emit(`${tag}.thrown`, { tag }, 'test')
      await tx.state.put(`${key}/thrown`, bytes('x'), 'text/plain')
      throw new Error('no')
    },
    async (tx) => {
      await tx.state.put(`${key}/kept`, bytes('y'), 'text/plain')
      return tx.emit(`${tag}.b`, { tag }, 'test')
    },
    async (tx) => {
      // Answered after every write of the units before it, in the same transaction.
      const { version } = await tx.state.put(`${key}/kept`, bytes('z'), 'text/plain')
      return tx.emit(`${tag}.c`, { tag, version }, 'test')
    },
  ])
  expect(results.map((r) => r.status)).toEqual(['fulfilled', 'rejected', 'fulfilled', 'fulfilled'])
  expect(((results[1] as PromiseRejectedResult).reason as Error).message).toBe('no')
  expect(((results[3] as PromiseFulfilledResult<Event>).value.data as { version: number }).version).toBe(2)
  expect(await store.state.get(`${key}/thrown`)).toBeNull()
  expect(await store.state.get(`${key}/kept`)).not.toBeNull()
  await expectBatch(tag, results, [`${tag}.a`, `${tag}.b`, `${tag}.c`])
})

test.skipIf(!onPostgres)('in one batch, a statement PostgreSQL refuses fails its unit alone, whoever caught its error', async () => {
  const tag = `b${++n}`
  const key = `units/${tag}`
  let runs = 0
  const results = await oneBatch([
    (tx) => tx.emit(`${tag}.a`, { tag }, 'test'),
    // Refused at the database (NUL in text), in a write sent without waiting.
    (tx) => tx.emit(`${tag}.refused\u0000`, { tag }, 'test'),
    async (tx) => {
      runs++
      await tx.state.put(`${key}/kept`, bytes('y'), 'text/plain')
      return tx.emit(`${tag}.b`, { tag }, 'test')
    },
    async (tx) => {
      // Refused in a statement its unit waits for, and the error caught: the unit still fails.
      await tx.state.put(`${key}/caught\u0000`, bytes('z'), 'text/plain').catch(() => {})
      return tx.emit(`${tag}.caught`, { tag }, 'test')
    },
    (tx) => tx.emit(`${tag}.c`, { tag }, 'test'),
  ])
  expect(results.map((r) => r.status)).toEqual(['fulfilled', 'rejected', 'fulfilled', 'rejected', 'fulfilled'])
  expect(((results[1] as PromiseRejectedResult).reason as Error).message).toContain('NUL')
  // Its batch ran again one unit at a time: the unit's code ran in each, its writes committed once.
  expect(runs).toBe(2)
  expect(await store.state.get(`${key}/kept`)).not.toBeNull()
  expect((await store.state.history(`${key}/kept`, 10))?.length).toBe(1)
  await expectBatch(tag, results, [`${tag}.a`, `${tag}.b`, `${tag}.c`])
})

test.skipIf(!onPostgres)('another replica gets each committed event once, in order, whether its NOTIFY carried it or not', async () => {
  const other = await openConfiguredStore(await databaseFor(dir), tempDir())
  const got: Event[] = []
  other.onEvent((e) => got.push(e))
  try {
    const tag = `b${++n}`
    const results = await oneBatch([
      (tx) => tx.emit(`${tag}.a`, { tag, text: 'ü \u2028 "quoted" \\ \u0000' }, 'test'),
      async (tx) => {
        await tx.emit(`${tag}.thrown`, { tag }, 'test')
        throw new Error('no')
      },
      (tx) => tx.emit(`${tag}.b`, { tag }, 'test', true),
    ])
    // Too large for a NOTIFY payload: the other replica reads it from the table.
    results.push(...(await oneBatch([(tx) => tx.emit(`${tag}.large`, { tag, text: 'x'.repeat(9000) }, 'test')])))
    results.push(...(await oneBatch([(tx) => tx.emit(`${tag}.c`, { tag }, 'test')])))
    const mine = () => got.filter((e) => (e.data as { tag?: string })?.tag === tag)
    for (let i = 0; i < 100 && mine().length < 4; i++) await Bun.sleep(10)
    await Bun.sleep(50)
    const committed = results.flatMap((r) => (r.status === 'fulfilled' ? [r.value as Event] : []))
    expect(mine().map((e) => e.topic)).toEqual([`${tag}.a`, `${tag}.b`, `${tag}.large`, `${tag}.c`])
    // As this replica delivered them, echo mark included.
    expect(mine()).toEqual(committed)
    expect(mine().map((e) => isEcho(e))).toEqual([false, true, false, false])
    const all = got.map((e) => e.id)
    expect(all).toEqual(all.map((_, i) => all[0] + i))
  } finally {
    await other.close()
  }
})

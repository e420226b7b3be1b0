// Large JSON bodies on the hot paths (issue 38, item 3): the task body limit (413 before
// anything is stored, by Content-Length or chunked), diffs of large versions (off the
// request thread, same answer), and listings that send stored payloads as stored.
// bench/large-bodies.ts measures what these bound: /health while such bodies run.
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { call, register, startServer, type Agent, type TestServer } from './helpers'
import { MAX_TASK_BODY } from '../routes/queue'
import { INLINE_JSON_BYTES } from '../lib/json-thread'

let s: TestServer
let worker: Agent
beforeAll(async () => {
  s = await startServer()
  worker = await register(s, 'large-bodies-worker')
})
afterAll(() => s.cleanup())

/** JSON text of a task body `bytes` long (padded with a string in the payload). */
const taskBody = (bytes: number, extra: Record<string, unknown> = {}) => {
  const head = JSON.stringify({ title: 'big', ...extra, payload: { pad: '' } })
  return head.replace('"pad":""', `"pad":"${'x'.repeat(bytes - head.length)}"`)
}

/** The same text sent chunked (no Content-Length): the limit must cut it off while it streams. */
const chunked = (text: string) => {
  const bytes = new TextEncoder().encode(text)
  return new ReadableStream<Uint8Array>({
    start(c) {
      for (let i = 0; i < bytes.length; i += 64 * 1024) c.enqueue(bytes.subarray(i, i + 64 * 1024))
      c.close()
    },
  })
}

const post = (path: string, body: BodyInit, headers: Record<string, string> = {}) =>
  fetch(`${s.api}${path}`, { method: 'POST', body, headers: { 'content-type': 'application/json', ...headers } })

describe('task body limit', () => {
  test('a create body over the limit is 413 {error, code}, by Content-Length or chunked; nothing is stored', async () => {
    for (const body of [taskBody(MAX_TASK_BODY + 1), chunked(taskBody(MAX_TASK_BODY + 1)), chunked(taskBody(10_000_000))]) {
      const r = await post('/api/queues/limits/tasks', body)
      expect(r.status).toBe(413)
      const err = await r.json()
      expect(err.code).toBe(413)
      expect(err.error).toBe('request body exceeds the 256 KiB limit')
    }
    expect((await call(s.api, 'GET', '/api/queues/limits/tasks')).body).toEqual([])
    expect((await call(s.api, 'GET', '/api/queues')).body.find((q: { queue: string }) => q.queue === 'limits')).toBeUndefined()
  })

  test('a create body of exactly the limit is stored, payload intact', async () => {
    const body = taskBody(MAX_TASK_BODY)
    expect(body.length).toBe(MAX_TASK_BODY)
    const r = await post('/api/queues/at-limit/tasks', body)
    expect(r.status).toBe(201)
    const task = await r.json()
    expect(task.payload).toEqual(JSON.parse(body).payload)
  })

  test('an ack whose result is over the limit is 413 and the claim stays live; within it acks', async () => {
    expect((await call(s.api, 'POST', '/api/queues/ack-limit/tasks', { title: 'a' })).status).toBe(201)
    const claim = await call(s.api, 'POST', '/api/queues/ack-limit/claim', {}, worker.h)
    expect(claim.status).toBe(200)
    const { id, claim_id } = claim.body
    const big = `{"claim_id":"${claim_id}","result":"${'r'.repeat(MAX_TASK_BODY)}"}`
    for (const body of [big, chunked(big)]) expect((await post(`/api/tasks/${id}/ack`, body, worker.h)).status).toBe(413)
    const still = await call(s.api, 'GET', `/api/tasks/${id}`)
    expect(still.body).toMatchObject({ status: 'claimed', result: null })
    const ok = await call(s.api, 'POST', `/api/tasks/${id}/ack`, { claim_id, result: { found: 'r'.repeat(1000) } }, worker.h)
    expect(ok.status).toBe(200)
    expect(ok.body).toMatchObject({ status: 'done', result: { found: 'r'.repeat(1000) } })
  })
})

describe('listings send stored JSON as stored', () => {
  test('payload, result, notes and the hidden claim come out as the single-task read has them', async () => {
    const payloads = [null, 0, 'text "quoted" \\ \u2028', [[], [1, { a: null }]], { nested: { deep: [true, false] }, 'ü': '€' }]
    for (const [i, payload] of payloads.entries())
      expect((await call(s.api, 'POST', '/api/queues/listing/tasks', { title: `t${i}`, payload, priority: -i })).status).toBe(201)
    const claim = await call(s.api, 'POST', '/api/queues/listing/claim', {}, worker.h)
    await call(s.api, 'POST', `/api/tasks/${claim.body.id}/notes`, { text: 'first note' }, worker.h)
    await call(s.api, 'POST', `/api/tasks/${claim.body.id}/ack`, { claim_id: claim.body.claim_id, result: { ok: [1, 2] } }, worker.h)
    const list = await call(s.api, 'GET', '/api/queues/listing/tasks')
    expect(list.status).toBe(200)
    expect(list.headers.get('content-type')).toContain('application/json')
    expect(list.body.map((t: { payload: unknown }) => t.payload)).toEqual(payloads)
    for (const t of list.body) expect(t).toEqual((await call(s.api, 'GET', `/api/tasks/${t.id}`)).body)
    expect(list.body[0]).toMatchObject({ status: 'done', result: { ok: [1, 2] }, claim_id: null, notes: [{ text: 'first note', by: worker.name }] })
    const limited = await call(s.api, 'GET', '/api/queues/listing/tasks?status=ready&limit=2')
    expect(limited.body.map((t: { title: string }) => t.title)).toEqual(['t1', 't2'])
    expect((await call(s.api, 'GET', '/api/queues/nothing-here/tasks')).body).toEqual([])
  })
})

describe('long listings go out a page at a time', () => {
  test('every task once, in claim order, whatever the limit against the page size; status filters too', async () => {
    // Priorities 0, 1, 2 in turn: claim order is priority first, so pages cross priorities.
    const made: { id: number; priority: number }[] = []
    for (let i = 0; i < 19; i++) {
      const r = await call(s.api, 'POST', '/api/queues/paged/tasks', { title: `p${i}`, priority: i % 3, payload: { i, pad: 'x'.repeat(20_000) } })
      made.push({ id: r.body.id, priority: i % 3 })
    }
    const order = made.sort((a, b) => b.priority - a.priority || a.id - b.id).map((t) => t.id)
    const ids = async (query: string) => {
      const r = await call(s.api, 'GET', `/api/queues/paged/tasks${query}`)
      expect(r.status).toBe(200)
      return r.body.map((t: { id: number; payload: { i: number } }) => (expect(t.payload.i).toBeNumber(), t.id))
    }
    expect(await ids('')).toEqual(order)
    for (const n of [1, 7, 8, 9, 16, 17, 19, 50]) expect(await ids(`?limit=${n}`)).toEqual(order.slice(0, n))
    const claimed = await call(s.api, 'POST', '/api/queues/paged/claim', {}, worker.h)
    expect(await ids('?status=claimed')).toEqual([claimed.body.id])
    expect(await ids('?status=ready')).toEqual(order.filter((id) => id !== claimed.body.id))
    expect(await ids('?status=done')).toEqual([])
  })
})

describe('diffs of large versions', () => {
  const big = (n: number, mark: number) => JSON.stringify({ items: Array.from({ length: n }, (_, i) => (i === mark ? { changed: i } : [])), tail: 'ok' })

  test('a diff of versions above the inline size (computed off the request thread) answers as a small one does', async () => {
    const n = Math.ceil(INLINE_JSON_BYTES / 3) + 10
    for (const v of [big(n, -1), big(n, 7)]) expect((await call(s.api, 'PUT', '/api/state/large/diff', v)).status).toBe(200)
    expect((await call(s.api, 'PUT', '/api/state/large/diff', JSON.stringify({ items: 1, tail: 'ok', more: ['x'] }))).status).toBe(200)
    const d = await call(s.api, 'GET', '/api/state/large/diff?diff=1,2')
    expect(d.status).toBe(200)
    expect(d.body).toEqual({ key: 'large/diff', v1: 1, v2: 2, diffs: [{ operation: 'replace', path: '/items/7', old_value: [], new_value: { changed: 7 } }] })
    const back = await call(s.api, 'GET', '/api/state/large/diff?diff=2,3')
    expect(back.body.diffs).toEqual([
      { operation: 'replace', path: '/items', old_value: JSON.parse(big(n, 7)).items, new_value: 1 },
      { operation: 'add', path: '/more', old_value: null, new_value: ['x'] },
    ])
    expect((await call(s.api, 'GET', '/api/state/large/diff?diff=2,2')).body.diffs).toEqual([])
  })

  test('a large version that is not JSON is 400 naming the version', async () => {
    const text = 'not json '.repeat(INLINE_JSON_BYTES / 4)
    expect((await call(s.api, 'PUT', '/api/state/large/text', big(10, -1))).status).toBe(200)
    expect((await call(s.api, 'PUT', '/api/state/large/text', text, { 'content-type': 'text/plain' })).status).toBe(200)
    const d = await call(s.api, 'GET', '/api/state/large/text?diff=1,2')
    expect(d.status).toBe(400)
    expect(d.body).toEqual({ error: 'version 2 is not JSON; diff needs JSON values', code: 400 })
  })
})

describe('large JSON state values (checked off the request thread)', () => {
  const large = (inner: string) => `{"pad":"${'p'.repeat(INLINE_JSON_BYTES)}","v":${inner}}`

  test('labelled JSON that is not JSON, or nests too deep, is 400 and nothing is stored; valid JSON is stored as sent', async () => {
    const bad = await call(s.api, 'PUT', '/api/state/large/put', large('[1,'), { 'content-type': 'application/json' })
    expect(bad.status).toBe(400)
    expect(bad.body).toEqual({ error: 'request body must be JSON: not valid JSON', code: 400 })
    const deep = await call(s.api, 'PUT', '/api/state/large/put', large('['.repeat(300) + ']'.repeat(300)))
    expect(deep.status).toBe(400)
    expect(deep.body.error).toBe('request body nests deeper than 256 levels')
    expect((await call(s.api, 'GET', '/api/state/large/put')).status).toBe(404)
    // Unlabelled bytes are stored as sent (the CLI sends files so), but still depth-checked.
    const unlabelled = await call(s.api, 'PUT', '/api/state/large/put', new TextEncoder().encode(large('[1,')))
    expect(unlabelled.status).toBe(200)
    const good = await call(s.api, 'PUT', '/api/state/large/put', large('[1,2]'), { 'content-type': 'application/json' })
    expect(good.body.version).toBe(2)
    expect((await fetch(`${s.api}/api/state/large/put`).then((r) => r.text()))).toBe(large('[1,2]'))
  })
})

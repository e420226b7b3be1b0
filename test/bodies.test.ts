// Issue 38: nothing is committed behind an error. A body that does not arrive whole
// (a trailer Bun's parser refuses, a malformed chunk size, a client that hangs up
// mid-upload) writes nothing, and is logged and counted as the client's doing: a warn
// line and a 400, never `ERROR internal error` or a 500. Raw TCP, through both ways
// into a state PUT: the fast route (no query) and the framework's (`?if_version=0`).
import { afterAll, describe, expect, test } from 'bun:test'
import { connect } from 'node:net'
import { eventually, startServer } from './helpers'

const s = await startServer({ args: ['--log-format', 'json'] })
afterAll(() => s.cleanup())

/** Writes `bytes` on a new connection and returns what came back: on close, or `hangUpMs` after writing (then hanging up). */
function send(bytes: string, hangUpMs?: number): Promise<string> {
  const { hostname, port } = new URL(s.api)
  return new Promise((resolve) => {
    let got = ''
    const socket = connect(Number(port), hostname, () => {
      socket.write(bytes)
      if (hangUpMs !== undefined) setTimeout(finish, hangUpMs)
    })
    const finish = () => (clearTimeout(timer), socket.destroy(), resolve(got))
    const timer = setTimeout(finish, 3000)
    socket.on('data', (d) => (got += d.toString()))
    socket.on('close', finish)
    socket.on('error', finish)
  })
}

const head = (path: string, framing: string) => `PUT ${path} HTTP/1.1\r\nHost: x\r\nContent-Type: text/plain\r\n${framing}\r\n\r\n`
const CHUNKED = 'Transfer-Encoding: chunked'

/** The requests counter of PUT /api/state/* with this status. */
async function counted(status: number): Promise<number> {
  const text = await (await fetch(`${s.api}/metrics`)).text()
  const line = text.split('\n').find((l) => l.startsWith(`muster_http_requests_total{method="PUT",route="/api/state/*",status="${status}"}`))
  return line ? Number(line.split(' ').pop()) : 0
}

const logLines = (): Record<string, any>[] =>
  s
    .stdout()
    .trimEnd()
    .split('\n')
    .map((l) => JSON.parse(l))

/**
 * Sends a PUT of `key` whose body does not arrive whole and checks what followed: the
 * answer (`expectAnswer`: Bun's 400, or nothing when the client hung up first), nothing
 * stored, one warn line naming the request and no error line, a 400 counted and no 500.
 */
async function refusedWrite(key: string, query: string, request: (path: string) => Promise<string>, expectAnswer: RegExp) {
  const path = `/api/state/${key}`
  const before = await counted(400)
  expect(await request(`${path}${query}`)).toMatch(expectAnswer)
  const access = (await eventually(() => logLines().find((l) => l.method === 'PUT' && l.path === path && 'status' in l)))!
  expect((await fetch(`${s.api}${path}`)).status).toBe(404)
  const about = logLines().filter((l) => l.url?.includes(path))
  expect(about.filter((l) => l.level === 50)).toEqual([])
  expect(about).toMatchObject([{ level: 40, method: 'PUT', msg: expect.stringContaining('client abort') }])
  expect(access.status).toBe(400)
  expect(await counted(400)).toBe(before + 1)
  expect(await counted(500)).toBe(0)
}

const ANSWERED_400 = /^HTTP\/1\.1 400 /
const NO_ANSWER = /^$/

for (const [way, query] of [
  ['the fast route', ''],
  ['the framework route', '?if_version=0'],
] as const) {
  const tag = query ? 'full' : 'fast'
  describe(`a state PUT through ${way}`, () => {
    test('a chunked body ending with a trailer: Bun answers 400 and nothing is stored', () =>
      refusedWrite(`trailer-${tag}`, query, (path) => send(head(path, CHUNKED) + '5\r\nhello\r\n0\r\nX-T: 1\r\n\r\n'), ANSWERED_400))

    test('a malformed chunk size: 400, nothing stored', () =>
      refusedWrite(`badsize-${tag}`, query, (path) => send(head(path, CHUNKED) + '5\r\nhello\r\nzz\r\nabc\r\n0\r\n\r\n'), ANSWERED_400))

    test('an upload with Content-Length cut off half-way: nothing stored', () =>
      refusedWrite(`cut-length-${tag}`, query, (path) => send(head(path, 'Content-Length: 100') + 'hello', 150), NO_ANSWER))

    test('a chunked upload cut off half-way: nothing stored', () =>
      refusedWrite(`cut-chunked-${tag}`, query, (path) => send(head(path, CHUNKED) + '5\r\nhello\r\n', 150), NO_ANSWER))

    test('a whole chunked body without a trailer is stored (200)', async () => {
      const got = await send(head(`/api/state/whole-${tag}${query}`, `${CHUNKED}\r\nConnection: close`) + '5\r\nhello\r\n0\r\n\r\n')
      expect(got).toMatch(/^HTTP\/1\.1 200 /)
      const r = await fetch(`${s.api}/api/state/whole-${tag}`)
      expect(r.status).toBe(200)
      expect(await r.text()).toBe('hello')
    })
  })
}

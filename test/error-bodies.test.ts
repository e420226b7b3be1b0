// Every error Muster can shape is {error, code}, on both ports; the few that Bun's
// HTTP server answers before any of Muster's code runs are pinned as they are today
// (docs/api/README.md, conventions for every endpoint), so a Bun upgrade that changes one is noticed.
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { connect } from 'node:net'
import { startServer, type TestServer } from './helpers'

const AUTH = 'Authorization: Bearer secret\r\n'

interface Exchange {
  /** Everything the server sent before it closed the connection (or before the wait ran out). */
  text: string
  closed: boolean
}

/** Writes `bytes` in one packet to 127.0.0.1 and collects the answer until `done` says so, the server closes, or `waitMs`. */
function exchange(url: string, bytes: string, done: (text: string) => boolean = () => false, waitMs = 1500): Promise<Exchange> {
  return new Promise((resolve) => {
    let text = ''
    let closed = false
    const socket = connect(Number(new URL(url).port), '127.0.0.1', () => socket.write(bytes))
    const finish = () => (clearTimeout(timer), socket.destroy(), resolve({ text, closed }))
    const timer = setTimeout(finish, waitMs)
    socket.on('data', (d) => {
      text += d.toString('latin1')
      if (done(text)) finish()
    })
    socket.on('end', () => ((closed = true), finish()))
    socket.on('error', finish)
  })
}

/** The first answer of an exchange: status, headers (lower-cased names), body. */
function parse(text: string) {
  const [head, ...rest] = text.split('\r\n\r\n')
  const [statusLine, ...lines] = head.split('\r\n')
  const headers = Object.fromEntries(lines.map((l) => [l.slice(0, l.indexOf(':')).toLowerCase(), l.slice(l.indexOf(':') + 1).trim()]))
  const length = Number(headers['content-length'] ?? 0)
  return { status: Number(statusLine.split(' ')[1]), headers, body: rest.join('\r\n\r\n').slice(0, length) }
}

/** One request and its whole first answer (its body read to its Content-Length). */
async function ask(url: string, bytes: string) {
  const whole = (t: string) => {
    const end = t.indexOf('\r\n\r\n')
    return end >= 0 && t.length - end - 4 >= Number(/content-length: *(\d+)/i.exec(t)?.[1] ?? 0)
  }
  return parse((await exchange(url, bytes, whole)).text)
}

const answers = (text: string) => (text.match(/HTTP\/1\.1 \d{3} /g) ?? []).length

let s: TestServer
beforeAll(async () => (s = await startServer({ args: ['--auth-token', 'secret'] })))
afterAll(() => s.cleanup())
const ports = () => [['API', s.api], ['dashboard', s.dashboard]] as const

describe('errors Muster shapes are {error, code} on both ports', () => {
  test('TRACE on /api/* answers as the API does, with its body (the dashboard once forwarded an empty one)', async () => {
    for (const [port, url] of ports()) {
      const allowed = await ask(url, `TRACE /api/state/x HTTP/1.1\r\nHost: x\r\n${AUTH}\r\n`)
      expect([port, allowed.status, JSON.parse(allowed.body)]).toEqual([port, 405, { error: 'method TRACE not allowed', code: 405 }])
      expect(allowed.headers['allow']).toBe('GET, PUT, POST, DELETE')
      expect(allowed.headers['content-type']).toBe('application/json')
      const unknown = await ask(url, `TRACE /api/nothing-here HTTP/1.1\r\nHost: x\r\n${AUTH}\r\n`)
      expect([port, unknown.status, JSON.parse(unknown.body)]).toEqual([port, 404, { error: 'not found', code: 404 }])
      const noToken = await ask(url, 'TRACE /api/state/x HTTP/1.1\r\nHost: x\r\n\r\n')
      expect([port, noToken.status, JSON.parse(noToken.body)]).toEqual([port, 401, { error: 'invalid or missing bearer token', code: 401 }])
    }
  })

  test('TRACE, CONNECT and unrouted methods elsewhere are 404 or 405 {error, code}', async () => {
    for (const [port, url] of ports())
      for (const request of ['TRACE / HTTP/1.1', 'CONNECT /health HTTP/1.1', 'OPTIONS / HTTP/1.1', 'TRACE /health HTTP/1.1']) {
        const r = await ask(url, `${request}\r\nHost: x\r\n${AUTH}\r\n`)
        expect([404, 405]).toContain(r.status)
        expect([port, request, JSON.parse(r.body).code]).toEqual([port, request, r.status])
      }
  })

  test('a bad after_id on the event stream upgrade is 400 {error, code} (the dashboard once gave a plain-text 500)', async () => {
    const upgrade =
      'GET /api/events/subscribe?after_id=x HTTP/1.1\r\nHost: x\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n' +
      `Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n${AUTH}\r\n`
    for (const [port, url] of ports()) {
      const r = await ask(url, upgrade)
      expect([port, r.status, r.headers['content-type'], JSON.parse(r.body)]).toEqual([
        port,
        400,
        'application/json',
        { error: 'invalid after_id: expected an integer >= 0', code: 400 },
      ])
    }
  })
})

describe("Bun's answers before Muster runs (today's Bun; docs/api/README.md lists them)", () => {
  /** Bun's parser errors: status line, `Connection: close`, no body, connection closed. */
  async function expectBunAnswer(url: string, bytes: string, status: number) {
    const r = await exchange(url, bytes)
    expect([r.text.split('\r\n')[0], r.closed]).toEqual([expect.stringMatching(new RegExp(`^HTTP/1\\.1 ${status} `)), true])
    expect(r.text.endsWith('Connection: close\r\n\r\n')).toBe(true)
  }

  test('431: a request line and headers of 16 KB or more', async () => {
    for (const [, url] of ports()) {
      await expectBunAnswer(url, `GET /health HTTP/1.1\r\nHost: x\r\nX-Big: ${'a'.repeat(16_384)}\r\n\r\n`, 431)
      await expectBunAnswer(url, `GET /api/state/${'a'.repeat(20_000)} HTTP/1.1\r\nHost: x\r\n\r\n`, 431)
      // Just under: Muster answers.
      expect((await ask(url, `GET /health HTTP/1.1\r\nHost: x\r\nX-Big: ${'a'.repeat(16_000)}\r\n\r\n`)).status).toBe(200)
    }
  })

  test('400: malformed request lines, headers, lengths and chunks', async () => {
    const put = 'PUT /api/state/a HTTP/1.1\r\nHost: x\r\n'
    for (const [, url] of ports())
      for (const bytes of [
        'GARBAGE\r\n\r\n',
        'GET /health HTTP/1.1\r\nHost x\r\n\r\n',
        'GET /health HTTP/1.1\r\nHost: x\r\nX A: b\r\n\r\n',
        'GET /health HTTP/1.1\r\nHost: x\r\nX-A: a\0b\r\n\r\n',
        `${put}Content-Length: abc\r\n\r\nhello`,
        `${put}Content-Length: 5\r\nContent-Length: 6\r\n\r\nhello`,
        `${put}Content-Length: 5\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n0\r\n\r\n`,
        // Authorized: the handler starts on the headers, then Bun's parser fails on the chunk (nothing is written).
        `${put}${AUTH}Transfer-Encoding: chunked\r\n\r\nzz\r\nhello\r\n0\r\n\r\n`,
      ])
        await expectBunAnswer(url, bytes, 400)
  })

  test('413: a declared Content-Length over the 1 GB restore limit plus 1 MB', async () => {
    for (const [, url] of ports()) await expectBunAnswer(url, `PUT /api/state/a HTTP/1.1\r\nHost: x\r\nContent-Length: 99999999999\r\n\r\nhello`, 413)
  })

  test('505: an HTTP version other than 1.0 and 1.1, or lines ended by LF alone', async () => {
    for (const [, url] of ports()) {
      await expectBunAnswer(url, 'GET /health HTTP/2.0\r\nHost: x\r\n\r\n', 505)
      await expectBunAnswer(url, 'GET /health HTTP/1.1\nHost: x\n\n', 505)
    }
  })

  test('a method Bun does not know: the connection is closed with no answer', async () => {
    for (const [, url] of ports()) expect(await exchange(url, 'FOO /health HTTP/1.1\r\nHost: x\r\n\r\n')).toEqual({ text: '', closed: true })
  })

  test('pipelined requests behind an answer that is not ready close the connection, unanswered (oven-sh/bun#38128)', async () => {
    const twice = (path: string) => `GET ${path} HTTP/1.1\r\nHost: x\r\n${AUTH}\r\n`.repeat(2)
    // The dashboard's /api/* waits for the API: Bun closes before the first answer goes out.
    for (const path of ['/api/state/x', '/api/instances']) {
      const r = await exchange(s.dashboard, twice(path))
      expect([path, r.text, r.closed]).toEqual([path, '', true])
    }
    // Answers ready at once are answered in order, on both ports.
    for (const [port, url] of ports()) {
      const r = await exchange(url, twice('/health'), (t) => answers(t) >= 2 && t.endsWith('}'))
      expect([port, answers(r.text)]).toEqual([port, 2])
    }
  })
})

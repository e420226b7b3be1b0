// JSON endpoints read their body as JSON whatever the Content-Type says, never as
// form or multipart fields; a body that is not JSON is 400 and changes nothing. A
// state or spec PUT labelled JSON must be JSON; other state types stay raw bytes.
import { afterAll, describe, expect, test } from 'bun:test'
import { call, startServer } from './helpers'

const s = await startServer()
afterAll(() => s.cleanup())

const post = (path: string, body: BodyInit, headers: Record<string, string> = {}) => fetch(s.api + path, { method: 'POST', body, headers })
const names = async () => (await call(s.api, 'GET', '/api/instances')).body.map((i: { name: string }) => i.name).sort()
const NOT_JSON = { error: 'request body must be JSON: not valid JSON', code: 400 }

describe('JSON endpoints', () => {
  test("curl -d '{...}' (sent as form-urlencoded) and a body without a type register the instance", async () => {
    const form = await post('/api/instances/register', '{"name":"a1"}', { 'content-type': 'application/x-www-form-urlencoded' })
    expect([form.status, (await form.json()).name]).toEqual([200, 'a1'])
    const bare = await post('/api/instances/register', new TextEncoder().encode('{"name":"a2"}'))
    expect([bare.status, (await bare.json()).name]).toEqual([200, 'a2'])
    const text = await post('/api/instances/register', '{"name":"a3"}', { 'content-type': 'text/plain' })
    expect([text.status, (await text.json()).name]).toEqual([200, 'a3'])
    expect(await names()).toEqual(['a1', 'a2', 'a3'])
  })

  test('form fields and multipart are never read as fields: 400 saying the body must be JSON, nothing registered', async () => {
    const before = await names()
    const form = await post('/api/instances/register', 'name=f1', { 'content-type': 'application/x-www-form-urlencoded' })
    expect([form.status, await form.json()]).toEqual([400, NOT_JSON])
    const data = new FormData()
    data.set('name', 'f2')
    const multipart = await post('/api/instances/register', data)
    expect([multipart.status, await multipart.json()]).toEqual([400, NOT_JSON])
    const publish = await post('/api/events/publish', 'topic=x', { 'content-type': 'application/x-www-form-urlencoded' })
    expect([publish.status, await publish.json()]).toEqual([400, NOT_JSON])
    expect(await names()).toEqual(before)
  })
})

describe('state and spec PUT', () => {
  const put = (path: string, body: string, type?: string) =>
    fetch(s.api + path, { method: 'PUT', body, headers: type ? { 'content-type': type } : {} })

  test('labelled JSON (application/json, +json) but not JSON: 400, nothing stored', async () => {
    for (const type of ['application/json', 'application/json; charset=utf-8', 'application/merge-patch+json']) {
      const r = await put('/api/state/json/bad', '{"half":', type)
      expect([type, r.status, await r.json()]).toEqual([type, 400, NOT_JSON])
    }
    expect((await call(s.api, 'GET', '/api/state/json/bad')).status).toBe(404)
    const good = await put('/api/state/json/good', '{"ok":true}', 'application/vnd.muster+json')
    expect(good.status).toBe(200)
  })

  test('other types, and bytes sent without a type, stay raw bytes, stored and returned as sent', async () => {
    expect((await put('/api/state/raw/text', 'not json at all', 'text/plain')).status).toBe(200)
    const r = await fetch(`${s.api}/api/state/raw/text`)
    expect([r.headers.get('content-type'), await r.text()]).toEqual(['text/plain', 'not json at all'])
    const bytes = new Uint8Array([0, 255, 7, 128])
    expect((await fetch(`${s.api}/api/state/raw/bin`, { method: 'PUT', body: bytes })).status).toBe(200)
    expect(new Uint8Array(await (await fetch(`${s.api}/api/state/raw/bin`)).arrayBuffer())).toEqual(bytes)
  })

  test('a spec is JSON whatever its label; not JSON is 400 and nothing stored', async () => {
    expect((await put('/api/specs/p/ok', '{"a":1}', 'text/plain')).status).toBe(200)
    const bad = await put('/api/specs/p/bad', 'a: 1', 'application/json')
    expect([bad.status, await bad.json()]).toEqual([400, NOT_JSON])
    expect((await call(s.api, 'GET', '/api/specs/p/bad')).status).toBe(404)
  })
})

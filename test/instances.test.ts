import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { createHash } from 'node:crypto'
import { call, eventually, register, startApp, type InProcessServer } from './helpers'
import { rawQuery } from './pg'

let s: InProcessServer
beforeAll(async () => (s = await startApp()))
afterAll(() => s.cleanup())

const api = (method: string, path: string, body?: unknown, headers?: Record<string, string>) => call(s.api, method, path, body, headers)
const FIELDS = ['capabilities', 'id', 'intent', 'last_seen', 'name', 'registered_at', 'stack', 'status', 'workspace']

const listAll = async () => (await api('GET', '/api/instances')).body

describe('registration', () => {
  test('returns the instance with its token, once; status active', async () => {
    const { body: i } = await register(s, { name: 'alpha', workspace: 'shop', intent: 'build cart', stack: 'react' })
    expect(Object.keys(i).sort()).toEqual([...FIELDS, 'token'].sort())
    expect(i).toMatchObject({ name: 'alpha', workspace: 'shop', intent: 'build cart', stack: 'react', capabilities: [], status: 'active' })
    expect(i.id).toMatch(/^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/)
    expect(i.token).toMatch(/^[0-9a-f]{64}$/)
    expect(i.registered_at).toBe(i.last_seen)
    const got = await api('GET', `/api/instances/${i.id}`)
    expect(got.status).toBe(200)
    expect(Object.keys(got.body).sort()).toEqual(FIELDS)
    expect(got.text).not.toContain(i.token)
    expect((await api('GET', '/api/instances')).text).not.toContain(i.token)
    // In the database: the SHA-256 of the token, never the token.
    const [row] = await rawQuery<{ token_hash: string }>(s.dataDir, 'SELECT token_hash FROM instances WHERE id = ?', i.id)
    expect(row?.token_hash).toBe(createHash('sha256').update(i.token).digest('hex'))
  })

  test('announces instance.registered (source instances) and audits instance.register', async () => {
    const { body: i } = await register(s, { name: 'announced' })
    const events = (await api('GET', '/api/events/history?topic=instance.registered&last=5')).body
    expect(events[0]).toMatchObject({ topic: 'instance.registered', source: 'instances', data: { id: i.id, name: 'announced' } })
    const audit = await eventually(async () => {
      const a = (await api('GET', '/api/audit?action=instance.register')).body
      return a.find((e: any) => e.detail.includes(i.id)) ?? null
    })
    expect(audit).toMatchObject({ action: 'instance.register', outcome: 'success' })
  })

  test('400 name is required (missing, empty, blank); nothing registered', async () => {
    const before = await listAll()
    for (const body of [{}, { name: '' }, { name: '   ' }, { workspace: 'x' }]) {
      const r = await api('POST', '/api/instances/register', body)
      expect(r.status).toBe(400)
      expect(r.body).toEqual({ error: 'name is required', code: 400 })
    }
    const wrong = await api('POST', '/api/instances/register', { name: 'x', capabilities: 'not-a-list' })
    expect(wrong.status).toBe(400)
    expect(wrong.body.code).toBe(400)
    const long = await api('POST', '/api/instances/register', { name: 'x'.repeat(1001) })
    expect(long.body).toEqual({ error: 'invalid name: at most 1000 characters', code: 400 })
    const many = await api('POST', '/api/instances/register', { name: 'x', capabilities: Array.from({ length: 101 }, (_, i) => `c${i}`) })
    expect(many.body).toEqual({ error: 'invalid capabilities: at most 100', code: 400 })
    expect(await listAll()).toEqual(before)
  })
})

describe('listing and lookup', () => {
  test('filters by name, workspace, stack and exact capability', async () => {
    const a = await register(s, { name: 'f-one', workspace: 'ws-f', stack: 'go', capabilities: ['review', 'go-test'] })
    const b = await register(s, { name: 'f-two', workspace: 'ws-f', stack: 'react', capabilities: ['review'] })
    await register(s, { name: 'f-three', workspace: 'ws-other', stack: 'go' })
    const ids = async (q: string) => (await api('GET', `/api/instances?${q}`)).body.map((i: any) => i.id)
    expect(await ids('workspace=ws-f')).toEqual([a.id, b.id])
    expect(await ids('name=f-two')).toEqual([b.id])
    expect(await ids('workspace=ws-f&stack=go')).toEqual([a.id])
    expect(await ids('capability=review')).toEqual([a.id, b.id])
    expect(await ids('capability=go')).toEqual([]) // exact element match, not a substring
    expect(await ids('workspace=nobody')).toEqual([])
  })

  test('404 instance not found for every per-instance route', async () => {
    const before = await listAll()
    const missing = '00000000-0000-4000-8000-000000000000'
    for (const [method, path, body] of [
      ['GET', `/api/instances/${missing}`],
      ['POST', `/api/instances/${missing}/heartbeat`],
      ['POST', `/api/instances/${missing}/activate`],
      ['POST', `/api/instances/${missing}/capabilities`, { capabilities: ['x'] }],
      ['PUT', `/api/instances/${missing}/intent`, { intent: 'x' }],
      ['DELETE', `/api/instances/${missing}`],
    ] as const) {
      const r = await api(method, path, body)
      expect([method, path, r.status, r.body]).toEqual([method, path, 404, { error: 'instance not found', code: 404 }])
    }
    expect(await listAll()).toEqual(before)
  })
})

describe('per-instance operations', () => {
  test('heartbeat refreshes last_seen; activate; capabilities replace the list', async () => {
    const { body: i } = await register(s, { name: 'ops' })
    await Bun.sleep(5)
    const hb = await api('POST', `/api/instances/${i.id}/heartbeat`)
    expect(hb.status).toBe(200)
    expect(hb.body).toEqual({ id: i.id, status: 'ok' })
    const after = (await api('GET', `/api/instances/${i.id}`)).body
    expect(after.last_seen > i.last_seen).toBe(true)
    expect(after.registered_at).toBe(i.registered_at)

    expect((await api('POST', `/api/instances/${i.id}/activate`)).body).toEqual({ id: i.id, status: 'active' })

    const caps = await api('POST', `/api/instances/${i.id}/capabilities`, { capabilities: ['lint', 'test', 'lint'] })
    expect(caps.status).toBe(200)
    expect(caps.body).toEqual({ id: i.id, capabilities: ['lint', 'test'] })
    expect((await api('POST', `/api/instances/${i.id}/capabilities`, { capabilities: ['deploy'] })).body.capabilities).toEqual(['deploy'])
    expect((await api('GET', `/api/instances/${i.id}`)).body.capabilities).toEqual(['deploy'])
  })

  test('capabilities and intent reject bad bodies and change nothing', async () => {
    const { body: i } = await register(s, { name: 'strict', capabilities: ['keep'], intent: 'original' })
    for (const body of [{}, { capabilities: 'x' }, { capabilities: [''] }, { capabilities: [1] }]) {
      const r = await api('POST', `/api/instances/${i.id}/capabilities`, body)
      expect(r.status).toBe(400)
      expect(r.body.code).toBe(400)
    }
    const noIntent = await api('PUT', `/api/instances/${i.id}/intent`, {})
    expect(noIntent.body).toEqual({ error: 'intent is required', code: 400 })
    const now = (await api('GET', `/api/instances/${i.id}`)).body
    expect(now.capabilities).toEqual(['keep'])
    expect(now.intent).toBe('original')
  })

  test('PUT intent sets the task and refreshes last_seen', async () => {
    const { body: i } = await register(s, { name: 'intent' })
    await Bun.sleep(5)
    const r = await api('PUT', `/api/instances/${i.id}/intent`, { intent: 'refactor auth' })
    expect(r.status).toBe(200)
    expect(r.body).toMatchObject({ id: i.id, intent: 'refactor auth' })
    expect(r.body.last_seen > i.last_seen).toBe(true)
  })

  test('deregister: 200 {deleted}, then gone; instance.deregistered published', async () => {
    const { body: i } = await register(s, { name: 'leaving' })
    const r = await api('DELETE', `/api/instances/${i.id}`)
    expect(r.status).toBe(200)
    expect(r.body).toEqual({ deleted: i.id })
    expect((await api('GET', `/api/instances/${i.id}`)).status).toBe(404)
    expect((await api('DELETE', `/api/instances/${i.id}`)).status).toBe(404)
    const events = (await api('GET', '/api/events/history?topic=instance.deregistered&last=1')).body
    expect(events[0]).toMatchObject({ source: 'instances', data: { id: i.id, name: 'leaving' } })
  })

  test('a deregistered instance is forgotten with all its tokens: its inbox read is refused, its neighbours still read theirs', async () => {
    const agents = await Promise.all(['stays', 'goes'].map((name) => register(s, { name })))
    const [stays, goes] = agents
    // Read once each, so both tokens are known to the server.
    for (const a of agents) expect((await api('GET', '/api/inbox', undefined, a.h)).status).toBe(200)
    expect((await api('DELETE', `/api/instances/${goes.id}`)).status).toBe(200)
    await eventually(async () => (await api('GET', '/api/inbox', undefined, goes.h)).status === 403)
    expect((await api('GET', '/api/inbox', undefined, goes.h)).body.error).toContain('register again')
    expect((await api('GET', '/api/inbox', undefined, stays.h)).status).toBe(200)
  })

  test('stale list is [] while everyone is fresh', async () => {
    const r = await api('GET', '/api/instances/stale')
    expect(r.status).toBe(200)
    expect(r.body).toEqual([])
  })
})

describe('caller identity', () => {
  test('X-Instance-Token makes the instance the audit actor; an unknown token is anonymous', async () => {
    const { body: i } = await register(s, { name: 'actor' })
    await api('POST', `/api/instances/${i.id}/activate`, undefined, { 'X-Instance-Token': i.token })
    await api('PUT', '/api/state/identity/probe', { by: 'actor' }, { 'X-Instance-Token': i.token })
    const entries = await eventually(async () => {
      const a = (await api('GET', `/api/audit?actor=${i.id}`)).body
      return a.length >= 2 ? a : null
    })
    expect(entries.map((e: any) => e.action).sort()).toEqual(['instance.activate', 'state.put'])
    // An unknown token is no identity: the actor falls back to anonymous.
    await api('PUT', '/api/state/identity/other', { by: 'nobody' }, { 'X-Instance-Token': 'not-a-token' })
    const other = await eventually(async () => {
      const a = (await api('GET', '/api/audit?action=state.put')).body
      return a.find((e: any) => e.resource === 'state/identity/other') ?? null
    })
    expect(other.actor).toBe('anonymous')
  })
})

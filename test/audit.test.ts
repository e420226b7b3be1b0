import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { call, startApp, type InProcessServer } from './helpers'

let s: InProcessServer
beforeAll(async () => (s = await startApp()))
afterAll(() => s.cleanup())

describe('audit', () => {
  test('mutations are logged with action, resource and outcome; reads are not', async () => {
    await call(s.api, 'PUT', '/api/state/a/one', '{"x":1}')
    await call(s.api, 'PUT', '/api/state/a/one', '{"x":2}')
    await call(s.api, 'POST', '/api/state/a/one?rollback=1')
    await call(s.api, 'PUT', '/api/state/a/one', '') // error outcome
    await call(s.api, 'DELETE', '/api/state/a/one')
    await call(s.api, 'PUT', '/api/specs/p/s', { a: 1 })
    await call(s.api, 'DELETE', '/api/specs/p/s')
    await call(s.api, 'GET', '/api/state')
    const r = await call(s.api, 'GET', '/api/audit')
    expect(r.status).toBe(200)
    const got = r.body.map((e: any) => [e.action, e.resource, e.outcome])
    expect(got).toEqual([
      ['spec.delete', 'specs/p/s', 'success'],
      ['spec.put', 'specs/p/s', 'success'],
      ['state.delete', 'state/a/one', 'success'],
      ['state.put', 'state/a/one', 'error'],
      ['state.rollback', 'state/a/one', 'success'],
      ['state.put', 'state/a/one', 'success'],
      ['state.put', 'state/a/one', 'success'],
    ])
    const e = r.body[0]
    expect(Object.keys(e).sort()).toEqual(['action', 'actor', 'detail', 'id', 'outcome', 'resource', 'timestamp'])
    expect(e.actor).toBe('anonymous')
    expect(r.body[0].id).toBeGreaterThan(r.body[1].id)
  })

  test('filters: action, actor, limit, from/to', async () => {
    const puts = await call(s.api, 'GET', '/api/audit?action=state.put')
    expect(puts.body.length).toBe(3)
    expect(puts.body.every((e: any) => e.action === 'state.put')).toBe(true)
    expect((await call(s.api, 'GET', '/api/audit?limit=2')).body.length).toBe(2)
    expect((await call(s.api, 'GET', '/api/audit?actor=nobody')).body).toEqual([])
    const all = (await call(s.api, 'GET', '/api/audit')).body
    const pivot = all[3].timestamp
    const from = (await call(s.api, 'GET', `/api/audit?from=${encodeURIComponent(pivot)}`)).body
    expect(from.every((e: any) => e.timestamp >= pivot)).toBe(true)
    expect(from.length).toBeGreaterThanOrEqual(4)
    const to = (await call(s.api, 'GET', `/api/audit?to=${encodeURIComponent(pivot)}`)).body
    expect(to.every((e: any) => e.timestamp <= pivot)).toBe(true)
    expect((await call(s.api, 'GET', '/api/audit?from=2100-01-01T00:00:00Z')).body).toEqual([])
  })

  test('offset pages through the entries, newest first', async () => {
    const all = (await call(s.api, 'GET', '/api/audit')).body
    expect(all.length).toBe(7)
    const page1 = (await call(s.api, 'GET', '/api/audit?limit=3')).body
    const page2 = (await call(s.api, 'GET', '/api/audit?limit=3&offset=3')).body
    const page3 = (await call(s.api, 'GET', '/api/audit?limit=3&offset=6')).body
    expect([...page1, ...page2, ...page3].map((e: any) => e.id)).toEqual(all.map((e: any) => e.id))
    expect(page3.length).toBe(1)
    expect((await call(s.api, 'GET', '/api/audit?offset=7')).body).toEqual([])
    const puts = (await call(s.api, 'GET', '/api/audit?action=state.put&offset=1')).body
    expect(puts.map((e: any) => e.id)).toEqual(all.filter((e: any) => e.action === 'state.put').slice(1).map((e: any) => e.id))
    for (const bad of ['-1', 'x', '1.5', '99999999999999999999']) {
      const r = await call(s.api, 'GET', `/api/audit?offset=${bad}`)
      expect(r.status).toBe(400)
      expect(r.body.error).toStartWith('invalid offset')
    }
  })

  test('bad parameters are 400', async () => {
    const r = await call(s.api, 'GET', '/api/audit?from=yesterday')
    expect(r.status).toBe(400)
    expect(r.body.code).toBe(400)
    expect((await call(s.api, 'GET', '/api/audit?limit=-1')).status).toBe(400)
    expect((await call(s.api, 'GET', '/api/audit/summary?to=nope')).status).toBe(400)
  })

  test('summary counts actions, outcomes, actors and resources', async () => {
    const r = await call(s.api, 'GET', '/api/audit/summary')
    expect(r.body).toEqual({
      total_entries: 7,
      action_counts: { 'spec.delete': 1, 'spec.put': 1, 'state.delete': 1, 'state.put': 3, 'state.rollback': 1 },
      outcome_counts: { error: 1, success: 6 },
      unique_actors: 1,
      unique_resources: 2,
    })
    const none = await call(s.api, 'GET', '/api/audit/summary?from=2100-01-01T00:00:00Z')
    expect(none.body).toEqual({ total_entries: 0, action_counts: {}, outcome_counts: {}, unique_actors: 0, unique_resources: 0 })
  })

  test('the log is append-only: no route deletes or edits entries', async () => {
    expect((await call(s.api, 'DELETE', '/api/audit')).status).toBe(405)
    expect((await call(s.api, 'PUT', '/api/audit', [])).status).toBe(405)
  })
})

// Path reservations over real HTTP: all-or-nothing grants, exclusive and shared,
// renew / release / force, the pre-commit check, races, expiry, liveness, restart.
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { call, eventually, register, startServer, type Agent, type TestServer } from './helpers'

let s: TestServer
beforeAll(async () => (s = await startServer()))
afterAll(() => s.cleanup())

const reserve = (a: Pick<Agent, 'h'> | null, body: unknown, server = s) => call(server.api, 'POST', '/api/reservations', body, a?.h ?? {})
const check = (a: Pick<Agent, 'h'> | null, body: unknown) => call(s.api, 'POST', '/api/reservations/check', body, a?.h ?? {})
const events = async (topic: string, server = s) => (await call(server.api, 'GET', `/api/events/history?topic=${topic}&after_id=0&last=500`)).body as any[] // oldest first
let n = 0
const project = () => `proj-${++n}-${Math.random().toString(36).slice(2, 7)}`

describe('create', () => {
  test('201 with the reservation; reservation.granted published; reservation.create audited', async () => {
    const a = await register(s, 'ed')
    const p = project()
    const r = await reserve(a, { project: p, paths: ['src/**', 'README.md'], reason: 'refactor', ttl_ms: 60_000 })
    expect(r.status).toBe(201)
    expect(r.body).toEqual({
      id: expect.any(String),
      project: p,
      instance_id: a.id,
      paths: ['src/**', 'README.md'],
      exclusive: true,
      fence: expect.any(Number),
      reason: 'refactor',
      created_at: expect.any(String),
      expires_at: expect.any(String),
    })
    const ev = (await events('reservation.granted')).find((e) => e.data.id === r.body.id)
    expect(ev).toMatchObject({ source: 'coordination', data: { id: r.body.id, project: p, instance_id: a.id, paths: ['src/**', 'README.md'], exclusive: true } })
    const audit = (await call(s.api, 'GET', `/api/audit?action=reservation.create&actor=${a.id}`)).body
    expect(audit[0]).toMatchObject({ outcome: 'success', resource: 'reservations' })
  })

  test('bad input is 400 and reserves nothing; no token 400; unknown token 403', async () => {
    const a = await register(s, 'bad')
    const p = project()
    const bodies = [
      { paths: ['a'] },
      { project: '', paths: ['a'] },
      { project: p },
      { project: p, paths: [] },
      { project: p, paths: Array.from({ length: 101 }, (_, i) => `f${i}`) },
      { project: p, paths: ['/etc/passwd'] },
      { project: p, paths: ['src/../../x'] },
      { project: p, paths: [''] },
      { project: p, paths: ['ok', '  '] },
      { project: p, paths: ['a'], ttl_ms: 10 },
      { project: p, paths: ['a'], exclusive: 'yes' },
    ]
    for (const body of bodies) {
      const r = await reserve(a, body)
      expect(r.status).toBe(400)
      expect(typeof r.body.error).toBe('string')
    }
    expect((await reserve(a, { project: p, paths: ['/abs'] })).body.error).toContain('leading /')
    expect((await reserve(null, { project: p, paths: ['a'] })).body).toEqual({ error: 'X-Instance-Token is required', code: 400 })
    expect((await reserve({ h: { 'x-instance-token': 'nope' } }, { project: p, paths: ['a'] })).status).toBe(403)
    expect((await call(s.api, 'GET', `/api/reservations?project=${p}`)).body).toEqual([])
  })

  test('all or nothing: one overlapping path refuses the whole request, naming each conflict', async () => {
    const a = await register(s, 'first')
    const b = await register(s, 'second')
    const p = project()
    const held = (await reserve(a, { project: p, paths: ['src/**/*.ts'], reason: 'types' })).body
    const r = await reserve(b, { project: p, paths: ['docs/x.md', 'src/lib/a.ts', 'src/b.js'] })
    expect(r.status).toBe(409)
    expect(r.body).toEqual({
      error: 'paths are reserved',
      code: 409,
      conflicts: [
        {
          path: 'src/lib/a.ts',
          held_path: 'src/**/*.ts',
          reservation_id: held.id,
          instance_id: a.id,
          instance_name: 'first',
          instance_status: 'active',
          exclusive: true,
          expires_at: null,
          reason: 'types',
        },
      ],
    })
    expect((await call(s.api, 'GET', `/api/reservations?project=${p}&instance_id=${b.id}`)).body).toEqual([])
    // Other projects and disjoint paths are free.
    expect((await reserve(b, { project: p, paths: ['docs/x.md', 'src/b.js'] })).status).toBe(201)
    expect((await reserve(b, { project: project(), paths: ['src/lib/a.ts'] })).status).toBe(201)
  })

  test('shared reservations never conflict with each other; exclusive vs shared does; own ones never', async () => {
    const a = await register(s, 'sh-a')
    const b = await register(s, 'sh-b')
    const p = project()
    expect((await reserve(a, { project: p, paths: ['lib/**'], exclusive: false })).status).toBe(201)
    expect((await reserve(b, { project: p, paths: ['lib/x.ts'], exclusive: false })).status).toBe(201)
    const ex = await reserve(b, { project: p, paths: ['lib/y.ts'] })
    expect(ex.status).toBe(409)
    expect(ex.body.conflicts[0]).toMatchObject({ instance_id: a.id, exclusive: false })
    expect((await reserve(a, { project: p, paths: ['lib/**'] })).status).toBe(409) // b's shared lib/x.ts is in the way
    expect((await reserve(a, { project: p, paths: ['lib/z/**'] })).status).toBe(201) // a's own shared lib/** does not count
  })
})

describe('read, renew, release', () => {
  test('list newest first with filters; get one; 404 when gone', async () => {
    const a = await register(s, 'rd-a')
    const b = await register(s, 'rd-b')
    const p = project()
    const r1 = (await reserve(a, { project: p, paths: ['a'] })).body
    const r2 = (await reserve(b, { project: p, paths: ['b'] })).body
    const r3 = (await reserve(a, { project: p, paths: ['c'] })).body
    expect((await call(s.api, 'GET', `/api/reservations?project=${p}`)).body.map((r: any) => r.id)).toEqual([r3.id, r2.id, r1.id])
    expect((await call(s.api, 'GET', `/api/reservations?project=${p}&instance_id=${a.id}`)).body.map((r: any) => r.id)).toEqual([r3.id, r1.id])
    expect((await call(s.api, 'GET', `/api/reservations/${r2.id}`)).body).toEqual(r2)
    expect(await call(s.api, 'GET', '/api/reservations/nope')).toMatchObject({ status: 404, body: { error: 'reservation not found', code: 404 } })
  })

  test('renew: holder 200 with a new expires_at, others 403, gone 404, ttl_ms required', async () => {
    const a = await register(s, 'rn-a')
    const b = await register(s, 'rn-b')
    const r = (await reserve(a, { project: project(), paths: ['x'], ttl_ms: 5000 })).body
    const renewed = await call(s.api, 'POST', `/api/reservations/${r.id}/renew`, { ttl_ms: 120_000 }, a.h)
    expect(renewed.status).toBe(200)
    expect({ ...renewed.body, expires_at: null }).toEqual({ ...r, expires_at: null })
    expect(Date.parse(renewed.body.expires_at) - Date.now()).toBeGreaterThan(110_000)
    expect((await call(s.api, 'POST', `/api/reservations/${r.id}/renew`, { ttl_ms: 120_000 }, b.h)).status).toBe(403)
    expect((await call(s.api, 'POST', `/api/reservations/${r.id}/renew`, {}, a.h)).status).toBe(400)
    expect((await call(s.api, 'POST', `/api/reservations/${r.id}/renew`, { ttl_ms: 500 }, a.h)).status).toBe(400)
    expect((await call(s.api, 'POST', '/api/reservations/gone/renew', { ttl_ms: 5000 }, a.h)).status).toBe(404)
    const audit = (await call(s.api, 'GET', `/api/audit?action=reservation.renew&actor=${a.id}`)).body
    expect(audit.some((e: any) => e.outcome === 'success')).toBe(true)
  })

  test('release: holder 200 (reason released), others 403, ?force=1 anyone (reason forced), gone 404', async () => {
    const a = await register(s, 'dl-a')
    const b = await register(s, 'dl-b')
    const p = project()
    const r1 = (await reserve(a, { project: p, paths: ['one/**'] })).body
    const r2 = (await reserve(a, { project: p, paths: ['two/**'] })).body
    expect((await call(s.api, 'DELETE', `/api/reservations/${r1.id}`, undefined, b.h)).status).toBe(403)
    expect((await call(s.api, 'DELETE', `/api/reservations/${r1.id}`)).status).toBe(400)
    expect((await call(s.api, 'DELETE', `/api/reservations/${r1.id}`, undefined, a.h)).body).toEqual({ id: r1.id, released: true })
    expect((await call(s.api, 'DELETE', `/api/reservations/${r1.id}`, undefined, a.h)).status).toBe(404)
    expect((await call(s.api, 'DELETE', `/api/reservations/${r2.id}?force=1`)).body).toEqual({ id: r2.id, released: true })
    expect((await call(s.api, 'DELETE', `/api/reservations/${r2.id}?force=1`)).status).toBe(404)
    const ev = (await events('reservation.released')).filter((e) => e.data.project === p)
    expect(ev.map((e) => e.data)).toEqual([
      { id: r1.id, project: p, instance_id: a.id, paths: ['one/**'], reason: 'released' },
      { id: r2.id, project: p, instance_id: a.id, paths: ['two/**'], reason: 'forced' },
    ])
    expect((await reserve(b, { project: p, paths: ['one/x', 'two/y'] })).status).toBe(201)
  })
})

describe('POST /api/reservations/check', () => {
  test('200 ok when nothing held exclusively by others overlaps; 409 with conflicts otherwise', async () => {
    const a = await register(s, 'ck-a')
    const b = await register(s, 'ck-b')
    const p = project()
    const held = (await reserve(a, { project: p, paths: ['src/api/**'] })).body
    await reserve(b, { project: p, paths: ['docs/**'], exclusive: false })
    expect(await check(null, { project: p, paths: ['src/ui/a.ts', 'docs/x.md'] })).toMatchObject({ status: 200, body: { ok: true, conflicts: [] } })
    const r = await check(b, { project: p, paths: ['src/api/users.ts', 'README.md'] })
    expect(r.status).toBe(409)
    expect(r.body.conflicts).toEqual([expect.objectContaining({ path: 'src/api/users.ts', held_path: 'src/api/**', reservation_id: held.id, instance_name: 'ck-a' })])
    // Own reservations are left out with a token; without one every reservation counts.
    expect((await check(a, { project: p, paths: ['src/api/users.ts'] })).status).toBe(200)
    expect((await check(null, { project: p, paths: ['src/api/users.ts'] })).status).toBe(409)
    expect((await check(null, { project: p, paths: [] })).status).toBe(400)
    expect((await check(null, { paths: ['x'] })).status).toBe(400)
  })
})

describe('pattern limits', () => {
  test('the probe\'s star-heavy patterns are 400 naming the limit, in a reservation and a check; nothing reserved', async () => {
    const a = await register(s, 'limits')
    const p = project()
    const refused = async (r: Promise<{ status: number; body: any }>, limit: string) => {
      const res = await r
      expect(res.status).toBe(400)
      expect(res.body.error).toContain(limit)
    }
    await refused(reserve(a, { project: p, paths: Array.from({ length: 100 }, () => '*a'.repeat(512)) }), 'a segment of 1024 characters; at most 255')
    await refused(check(null, { project: p, paths: Array.from({ length: 100 }, () => '*b'.repeat(512)) }), 'at most 255')
    await refused(check(null, { project: p, paths: ['**/'.repeat(341) + 'x'] }), '342 path segments; at most 64')
    await refused(reserve(a, { project: p, paths: ['src/' + '*x'.repeat(17)] }), '17 wildcards')
    await refused(reserve(a, { project: p, paths: ['ok/a.ts', '{a,b}'.repeat(9)] }), 'more than 256 alternatives')
    expect((await call(s.api, 'GET', `/api/reservations?project=${p}`)).body).toEqual([])
    // At the limits, granted.
    expect((await reserve(a, { project: p, paths: ['src/' + '*x'.repeat(16), '{a,b}'.repeat(8)] })).status).toBe(201)
  })
})

describe('races', () => {
  test('12 concurrent callers reserving overlapping paths: exactly one wins', async () => {
    const agents = await Promise.all(Array.from({ length: 12 }, (_, i) => register(s, `rr-${i}`)))
    const p = project()
    const results = await Promise.all(agents.map((a, i) => reserve(a, { project: p, paths: [i % 2 ? 'src/**' : `src/file.ts`] })))
    expect(results.filter((r) => r.status === 201)).toHaveLength(1)
    expect(results.filter((r) => r.status === 409)).toHaveLength(11)
    expect((await call(s.api, 'GET', `/api/reservations?project=${p}`)).body).toHaveLength(1)
  })
})

describe('expiry, liveness, restart', () => {
  test('a TTL reservation is released within a second after expires_at (reason expired)', async () => {
    const a = await register(s, 'ex')
    const r = (await reserve(a, { project: project(), paths: ['x'], ttl_ms: 1000 })).body
    await eventually(async () => (await call(s.api, 'GET', `/api/reservations/${r.id}`)).status === 404, 4000, 20)
    expect(Date.now() - Date.parse(r.expires_at)).toBeLessThan(1000)
    expect((await events('reservation.released')).find((e) => e.data.id === r.id).data.reason).toBe('expired')
  })

  test('stale holder: released (holder_stale); deregistered holder: released (holder_deregistered)', async () => {
    const t = await startServer({ args: ['--stale-timeout', '300ms', '--liveness-interval', '1h'] })
    try {
      const a = await register(t, 'st')
      const b = await register(t, 'dr')
      const ra = (await reserve(a, { project: 'p', paths: ['a/**'] }, t)).body
      await Bun.sleep(400)
      const rb = (await reserve(b, { project: 'p', paths: ['b/**'] }, t)).body // b's call is its heartbeat
      await call(t.api, 'POST', '/api/liveness/check')
      expect((await call(t.api, 'GET', '/api/reservations')).body.map((r: any) => r.id)).toEqual([rb.id])
      await call(t.api, 'DELETE', `/api/instances/${b.id}`)
      expect((await call(t.api, 'GET', '/api/reservations')).body).toEqual([])
      const ev = (await events('reservation.released', t)).map((e) => [e.data.id, e.data.reason])
      expect(ev).toEqual([[ra.id, 'holder_stale'], [rb.id, 'holder_deregistered']])
    } finally {
      await t.cleanup()
    }
  })

  test('reservations and their fences survive kill -9', async () => {
    const t = await startServer()
    let u: TestServer | null = null
    try {
      const a = await register(t, 'dur')
      const r = (await reserve(a, { project: 'p', paths: ['src/**'], ttl_ms: 600_000 }, t)).body
      await t.kill()
      u = await startServer({ dataDir: t.dataDir })
      expect((await call(u.api, 'GET', `/api/reservations/${r.id}`)).body).toEqual(r)
      const b = await register(u, 'other')
      expect((await reserve(b, { project: 'p', paths: ['src/a.ts'] }, u)).status).toBe(409)
      expect((await reserve(b, { project: 'p', paths: ['lib/a.ts'] }, u)).body.fence).toBeGreaterThan(r.fence)
    } finally {
      await (u ?? t).cleanup()
    }
  })
})

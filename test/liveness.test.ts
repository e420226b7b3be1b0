import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { call, eventually, register, startServer, type TestServer } from './helpers'

// Stale after 600 ms of silence, checked every 100 ms by the background job.
const STALE_MS = 600
let s: TestServer
beforeAll(async () => (s = await startServer({ args: ['--stale-timeout', `${STALE_MS}ms`, '--liveness-interval', '100ms'] })))
afterAll(() => s.cleanup())

const api = (method: string, path: string, body?: unknown) => call(s.api, method, path, body)
const status = async (id: string) => (await api('GET', `/api/instances/${id}`)).body.status

describe('liveness job', () => {
  test('a heartbeating instance stays active, a silent one goes stale, a heartbeat brings it back', async () => {
    const busy = await register(s, { name: 'busy', workspace: 'live' })
    const quiet = await register(s, { name: 'quiet', workspace: 'live' })
    const beating = setInterval(() => void api('POST', `/api/instances/${busy.id}/heartbeat`), 100)
    try {
      await eventually(async () => (await status(quiet.id)) === 'stale', 5000)
      expect(await status(busy.id)).toBe('active')
      // Several more checks pass while the busy one keeps beating.
      await Bun.sleep(STALE_MS + 200)
      expect(await status(busy.id)).toBe('active')
    } finally {
      clearInterval(beating)
    }

    const stale = (await api('GET', '/api/instances/stale')).body
    expect(stale.find((i: any) => i.id === quiet.id)).toEqual({
      id: quiet.id,
      name: 'quiet',
      workspace: 'live',
      status: 'stale',
      last_seen: quiet.body.last_seen,
    })
    expect(stale.some((i: any) => i.id === busy.id)).toBe(false)

    const events = (await api('GET', '/api/events/history?topic=instance.stale&source=liveness')).body
    expect(events.filter((e: any) => e.data.id === quiet.id)).toHaveLength(1) // once, not at every tick
    expect(events.some((e: any) => e.data.id === busy.id)).toBe(false)

    expect((await api('POST', `/api/instances/${quiet.id}/heartbeat`)).body).toEqual({ id: quiet.id, status: 'ok' })
    expect(await status(quiet.id)).toBe('active')
    expect((await api('GET', '/api/instances/stale')).body.some((i: any) => i.id === quiet.id)).toBe(false)
  })

  test('activate forces a stale instance active', async () => {
    const i = await register(s, { name: 'forced', workspace: 'live' })
    await eventually(async () => (await status(i.id)) === 'stale', 5000)
    expect((await api('POST', `/api/instances/${i.id}/activate`)).body).toEqual({ id: i.id, status: 'active' })
    expect(await status(i.id)).toBe('active')
  })
})

describe('POST /api/liveness/check', () => {
  test('answers {checked, newly_stale, count}; an instance is newly stale only once', async () => {
    // A server whose own job would not run during the test: only the forced check marks.
    const slow = await startServer({ args: ['--stale-timeout', '300ms', '--liveness-interval', '1h'] })
    try {
      const reg = await register(slow, 'idle')
      const first = await call(slow.api, 'POST', '/api/liveness/check')
      expect(first.status).toBe(200)
      expect(first.body).toEqual({ checked: true, newly_stale: [], count: 0 })
      await Bun.sleep(400)
      const second = await call(slow.api, 'POST', '/api/liveness/check')
      expect(second.body).toEqual({ checked: true, newly_stale: [{ id: reg.id, name: 'idle', status: 'stale' }], count: 1 })
      expect((await call(slow.api, 'POST', '/api/liveness/check')).body).toEqual({ checked: true, newly_stale: [], count: 0 })
      const events = (await call(slow.api, 'GET', '/api/events/history?topic=instance.stale')).body
      expect(events).toHaveLength(1)
      expect(events[0]).toMatchObject({ source: 'liveness', data: { id: reg.id, name: 'idle' } })
    } finally {
      await slow.cleanup()
    }
  })
})

describe('any call with an instance token is a heartbeat', () => {
  test('refreshes last_seen and turns stale into active, writing at most once per throttle window', async () => {
    // Stale after 1 s, only by the forced check; the touch is then throttled to 500 ms (half the timeout).
    const t = await startServer({ args: ['--stale-timeout', '1s', '--liveness-interval', '1h'] })
    try {
      const as = (token: string) => ({ 'x-instance-token': token })
      const { body: inst } = await register(t, 'cli-agent')
      const read = async () => (await call(t.api, 'GET', `/api/instances/${inst.id}`)).body
      expect((await call(t.api, 'GET', '/api/state', undefined, as(inst.token))).status).toBe(200)
      const first = await eventually(async () => {
        const now = await read()
        return now.last_seen > inst.last_seen && now.last_seen
      })
      // A second call right away falls in the window: no write.
      await call(t.api, 'GET', '/api/state', undefined, as(inst.token))
      await Bun.sleep(150)
      expect((await read()).last_seen).toBe(first)

      await Bun.sleep(1100)
      const check = (await call(t.api, 'POST', '/api/liveness/check')).body
      expect(check.newly_stale.map((i: any) => i.id)).toEqual([inst.id])
      // Calls without the token, or with an unknown one, are nobody's heartbeat.
      await call(t.api, 'GET', '/api/state')
      await call(t.api, 'GET', '/api/state', undefined, as('f'.repeat(64)))
      await Bun.sleep(150)
      expect((await read()).status).toBe('stale')

      expect((await call(t.api, 'GET', '/api/events/history', undefined, as(inst.token))).status).toBe(200)
      const back = await eventually(async () => {
        const now = await read()
        return now.status === 'active' && now
      })
      expect(back.last_seen > first).toBe(true)
    } finally {
      await t.cleanup()
    }
  })

  test('the calls of many instances at once are each one heartbeat, written together', async () => {
    const t = await startServer({ args: ['--stale-timeout', '1s', '--liveness-interval', '1h'] })
    try {
      const agents = await Promise.all(Array.from({ length: 24 }, (_, i) => register(t, `fleet-${i}`)))
      await Bun.sleep(1100)
      expect((await call(t.api, 'POST', '/api/liveness/check')).body.newly_stale).toHaveLength(agents.length)
      const answers = await Promise.all(agents.map((a) => call(t.api, 'GET', '/api/state', undefined, a.h)))
      expect(answers.every((r) => r.status === 200)).toBe(true)
      await eventually(async () => {
        const list = (await call(t.api, 'GET', '/api/instances')).body as { id: string; status: string; last_seen: string }[]
        const mine = list.filter((i) => agents.some((a) => a.id === i.id))
        return mine.length === agents.length && mine.every((i) => i.status === 'active' && i.last_seen > agents[0].body.last_seen)
      })
    } finally {
      await t.cleanup()
    }
  })
})

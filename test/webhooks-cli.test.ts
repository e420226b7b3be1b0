// `muster webhooks update | deliveries | redeliver | enable` against a live server and a
// real receiver: each does what its route does, and bad flags are usage errors (exit 2).
import { afterAll, expect, test } from 'bun:test'
import { call, eventually, startServer } from './helpers'
import { removeWorkdirs, runCli, workdir } from './cli-run'

const received: { path: string; body: any }[] = []
let failing = true
const receiver = Bun.serve({
  hostname: '127.0.0.1',
  port: 0,
  async fetch(req) {
    const path = new URL(req.url).pathname
    received.push({ path, body: await req.json() })
    return new Response('ok', { status: path === '/down' && failing ? 500 : 200 })
  },
})
const hookUrl = (path: string) => `http://127.0.0.1:${receiver.port}${path}`

const s = await startServer()
const dir = workdir({ server: s.api })
afterAll(async () => {
  receiver.stop(true)
  await s.cleanup()
  removeWorkdirs()
})
const cli = (...args: string[]) => runCli(['-o', 'json', ...args], { cwd: dir })

test('update, deliveries, redeliver (one and since), disable and enable', async () => {
  expect((await cli('webhooks', 'add', 'ci', hookUrl('/down'), '--pattern', 'cli.*')).code).toBe(0)
  const e = (await call(s.api, 'POST', '/api/events/publish', { topic: 'cli.x', data: 1 })).body
  await eventually(() => received.length === 1)

  const pending = await eventually(async () => {
    const r = await cli('webhooks', 'deliveries', 'ci', '--state', 'pending')
    return r.json?.deliveries?.[0]?.attempts === 1 ? r : null
  })
  expect(pending!.code).toBe(0)
  expect(pending!.json.deliveries[0]).toMatchObject({ event_id: e.id, state: 'pending', status: 500 })

  const updated = await cli('webhooks', 'update', 'ci', '--url', hookUrl('/up'), '--pattern', 'cli.*', '--pattern', 'more.*', '--secret', 's')
  expect(updated.code).toBe(0)
  expect(updated.json).toMatchObject({ id: 'ci', url: hookUrl('/up'), patterns: ['cli.*', 'more.*'] })
  expect(updated.stdout).not.toContain('"secret"')
  // The waiting retry follows the new url.
  await eventually(() => received.some((r) => r.path === '/up' && r.body.id === e.id), 6000)
  const [done] = (await cli('webhooks', 'deliveries', 'ci', '--limit', '1')).json.deliveries
  await eventually(async () => (await cli('webhooks', 'deliveries', 'ci', '--state', 'delivered')).json.deliveries.length === 1)

  const one = await cli('webhooks', 'redeliver', 'ci', '--delivery', String(done.id))
  expect([one.code, one.json.id, one.json.state]).toEqual([0, done.id, 'pending'])
  await eventually(() => received.filter((r) => r.path === '/up').length === 2)
  const since = await cli('webhooks', 'redeliver', 'ci', '--since', '1h')
  expect(since.code).toBe(0)
  expect(since.json).toMatchObject({ id: 'ci', redelivered: 1, active: true })
  await eventually(() => received.filter((r) => r.path === '/up').length === 3)

  expect((await cli('webhooks', 'disable', 'ci')).json.active).toBe(false)
  const enabled = await cli('webhooks', 'enable', 'ci')
  expect([enabled.code, enabled.json.active]).toEqual([0, true])
})

test('usage errors exit 2 and send nothing; server errors exit 1', async () => {
  for (const args of [
    ['webhooks', 'update', 'ci'],
    ['webhooks', 'redeliver', 'ci'],
    ['webhooks', 'redeliver', 'ci', '--delivery', '1', '--since', '1h'],
    ['webhooks', 'redeliver', 'ci', '--delivery', 'x'],
    ['webhooks', 'deliveries', 'ci', '--state', 'done'],
    ['webhooks', 'deliveries', 'ci', '--limit', '0'],
  ]) {
    const r = await cli(...args)
    expect({ args, code: r.code }).toEqual({ args, code: 2 })
  }
  const unknown = await cli('webhooks', 'redeliver', 'nope', '--since', '2026-01-01T00:00:00Z')
  expect([unknown.code, unknown.error]).toEqual([1, { error: 'webhook not found', code: 404 }])
  const bad = await cli('webhooks', 'redeliver', 'ci', '--since', 'yesterday')
  expect([bad.code, bad.error]).toEqual([1, { error: 'invalid since: expected an RFC 3339 timestamp', code: 400 }])
})

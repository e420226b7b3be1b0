// Soak test: 200 agents heartbeating, 50 WebSocket subscribers on `*`, steady
// state writes, for a chosen time. Prints RSS over time, errors and delivery
// counts; at the end, whether every subscriber got every event.
// Run: bun bench/soak.ts [--duration 2m] [--writes 200]   (env SOAK_DURATION, SOAK_WRITES)
import { startMuster } from './lib'
import { parseDuration } from '../lib/time'

const AGENTS = 200
const SUBSCRIBERS = 50
const HEARTBEAT_MS = 2000
const REPORT_MS = 10_000

function option(flag: string, env: string, def: string): string {
  const i = process.argv.indexOf(flag)
  return i >= 0 ? process.argv[i + 1] : (process.env[env] ?? def)
}
const durationMs = parseDuration(option('--duration', 'SOAK_DURATION', '2m'))
const writesPerS = Number(option('--writes', 'SOAK_WRITES', '200'))
if (!durationMs || !(writesPerS > 0)) {
  console.error('usage: bun bench/soak.ts [--duration 2m] [--writes 200]')
  process.exit(2)
}

const rssMb = (pid: number) => Number(Bun.spawnSync(['ps', '-o', 'rss=', '-p', String(pid)]).stdout.toString().trim()) / 1024

const server = await startMuster()
const api = server.url
const counts = { ok: 0, errors: 0, heartbeats: 0, writes: 0 }
const errorSamples = new Map<string, number>()

async function request(method: string, path: string, body?: unknown, headers: Record<string, string> = {}): Promise<any> {
  try {
    const res = await fetch(api + path, {
      method,
      headers: body === undefined ? headers : { 'content-type': 'application/json', ...headers },
      body: body === undefined ? undefined : JSON.stringify(body),
    })
    const text = await res.text()
    if (!res.ok) throw new Error(`HTTP ${res.status} ${method} ${path.replace(/\/[0-9a-f-]{8,}/g, '/:id')}`)
    counts.ok++
    return text ? JSON.parse(text) : null
  } catch (err) {
    counts.errors++
    const key = (err as Error).message.slice(0, 80)
    errorSamples.set(key, (errorSamples.get(key) ?? 0) + 1)
    return null
  }
}

const lastEventId = async () => (await request('GET', '/api/metrics'))?.last_event_id as number

// Subscribers first, so every event from here on is owed to each of them.
const received = new Array<number>(SUBSCRIBERS).fill(0)
const sockets: WebSocket[] = []
for (let i = 0; i < SUBSCRIBERS; i++) {
  const ws = new WebSocket(`${api.replace('http', 'ws')}/api/events/subscribe?pattern=*`)
  ws.onmessage = () => received[i]++
  await new Promise((resolve, reject) => ((ws.onopen = resolve), (ws.onerror = reject)))
  sockets.push(ws)
}
const firstId = await lastEventId()

const agents: { id: string; token: string }[] = []
for (let i = 0; i < AGENTS; i++) {
  const a = await request('POST', '/api/instances/register', { name: `soak-${i}`, workspace: `ws-${i % 10}` })
  if (a) agents.push({ id: a.id, token: a.token })
}

let running = true
const tasks: Promise<void>[] = []
// Heartbeats: each agent every HEARTBEAT_MS, spread evenly.
for (const [i, agent] of agents.entries()) {
  tasks.push(
    (async () => {
      await Bun.sleep((i * HEARTBEAT_MS) / agents.length)
      while (running) {
        const t0 = performance.now()
        if (await request('POST', `/api/instances/${agent.id}/heartbeat`, undefined, { 'x-instance-token': agent.token })) counts.heartbeats++
        await Bun.sleep(Math.max(0, HEARTBEAT_MS - (performance.now() - t0)))
      }
    })(),
  )
}
// Writes: state PUTs at a steady rate over 1,000 keys, in ticks of 100 ms.
tasks.push(
  (async () => {
    const perTick = writesPerS / 10
    let due = 0
    for (let n = 0; running; ) {
      const t0 = performance.now()
      due += perTick
      const batch: Promise<unknown>[] = []
      for (; due >= 1; due--, n++) {
        const agent = agents[n % agents.length]
        batch.push(request('PUT', `/api/state/soak/key-${n % 1000}`, { n, by: agent.id }, { 'x-instance-token': agent.token }).then((r) => r && counts.writes++))
      }
      await Promise.all(batch)
      await Bun.sleep(Math.max(0, 100 - (performance.now() - t0)))
    }
  })(),
)

const started = performance.now()
const rss: number[] = [rssMb(server.pid)]
console.log(`soak: ${agents.length} agents every ${HEARTBEAT_MS / 1000} s, ${SUBSCRIBERS} subscribers, ${writesPerS} writes/s, for ${durationMs / 1000} s`)
console.log('   t(s)  RSS(MB)  requests  errors  heartbeats  writes  events  frames delivered')
const report = async () => {
  const events = (await lastEventId()) - firstId
  const delivered = received.reduce((a, b) => a + b, 0)
  rss.push(rssMb(server.pid))
  const t = Math.round((performance.now() - started) / 1000)
  console.log(
    `${String(t).padStart(7)}  ${rss.at(-1)!.toFixed(0).padStart(7)}  ${String(counts.ok).padStart(8)}  ${String(counts.errors).padStart(6)}  ${String(counts.heartbeats).padStart(10)}  ${String(counts.writes).padStart(6)}  ${String(events).padStart(6)}  ${delivered}`,
  )
}
while (performance.now() - started < durationMs) {
  await Bun.sleep(Math.min(REPORT_MS, durationMs - (performance.now() - started)))
  await report()
}
running = false
await Promise.all(tasks)
// Let the last frames arrive.
const events = (await lastEventId()) - firstId
for (let i = 0; i < 50 && received.some((r) => r < events); i++) await Bun.sleep(100)
const subs: { dropped: number }[] = (await request('GET', '/api/events/subscriptions')) ?? []
const short = received.filter((r) => r < events).length
console.log(`\nRSS: start ${rss[0].toFixed(0)} MB, peak ${Math.max(...rss).toFixed(0)} MB, end ${rss.at(-1)!.toFixed(0)} MB`)
console.log(`requests: ${counts.ok} ok, ${counts.errors} errors${errorSamples.size ? ': ' + [...errorSamples].map(([k, v]) => `${v} × ${k}`).join('; ') : ''}`)
console.log(`events: ${events} published; ${SUBSCRIBERS} subscribers received ${received.reduce((a, b) => a + b, 0)} of ${events * SUBSCRIBERS} frames; ${short} subscribers short; ${subs.reduce((a, s) => a + s.dropped, 0)} dropped (server count)`)
for (const ws of sockets) ws.close()
await server.stop()
process.exit(counts.errors || short ? 1 : 0)

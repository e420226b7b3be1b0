// Soak test: 200 agents heartbeating, 50 WebSocket subscribers on `*`, steady
// state writes, for a chosen time. Prints RSS and the database's size over time,
// errors and delivery counts; at the end, whether every subscriber got every event.
// Run: bun bench/soak.ts [--duration 2m] [--writes 200] [--keys 1000] [--value 64KB] [--report 10s] [-- server flags]
//   (env SOAK_DURATION, SOAK_WRITES, SOAK_KEYS, SOAK_VALUE, SOAK_REPORT)
// The retention soak (docs/api/state.md, history retention): 64 KB values over 20 keys, history capped, sizes every 30 s:
//   bun bench/soak.ts --duration 10m --writes 100 --keys 20 --value 64KB --report 30s -- --state-history 100
import { readFileSync, statSync } from 'node:fs'
import { join } from 'node:path'
import { startMuster } from './lib'
import { parseDuration } from '../lib/time'
import { parseBytes } from '../lib/config'

const AGENTS = 200
const SUBSCRIBERS = 50
const HEARTBEAT_MS = 2000

// Everything after `--` goes to the server.
const dashes = process.argv.indexOf('--')
const ownArgs = dashes < 0 ? process.argv : process.argv.slice(0, dashes)
const serverArgs = dashes < 0 ? [] : process.argv.slice(dashes + 1)
function option(flag: string, env: string, def: string): string {
  const i = ownArgs.indexOf(flag)
  return i >= 0 ? ownArgs[i + 1] : (process.env[env] ?? def)
}
const durationMs = parseDuration(option('--duration', 'SOAK_DURATION', '2m'))
const writesPerS = Number(option('--writes', 'SOAK_WRITES', '200'))
const keys = Number(option('--keys', 'SOAK_KEYS', '1000'))
// A value of this many bytes (raw, application/octet-stream) in place of the small JSON one.
const valueBytes = parseBytes(option('--value', 'SOAK_VALUE', '0'))
const reportMs = parseDuration(option('--report', 'SOAK_REPORT', '10s'))
if (!durationMs || !(writesPerS > 0) || !(Number.isInteger(keys) && keys > 0) || valueBytes === null || !reportMs) {
  console.error('usage: bun bench/soak.ts [--duration 2m] [--writes 200] [--keys 1000] [--value 64KB] [--report 10s] [-- server flags]')
  process.exit(2)
}

const rssMb = (pid: number) => Number(Bun.spawnSync(['ps', '-o', 'rss=', '-p', String(pid)]).stdout.toString().trim()) / 1024
/** The database file and its WAL, in MB; the data dir read from the server's command line. */
const dbMb = (pid: number) => {
  const argv = readFileSync(`/proc/${pid}/cmdline`, 'utf8').split('\0')
  const dir = argv[argv.indexOf('--data-dir') + 1]
  const size = (f: string) => {
    try {
      return statSync(join(dir, f)).size
    } catch {
      return 0
    }
  }
  return (size('muster.db') + size('muster.db-wal')) / 1024 / 1024
}
interface RawBody {
  body: Uint8Array<ArrayBuffer>
  type: string
}
const isRaw = (b: unknown): b is RawBody => typeof b === 'object' && b !== null && (b as RawBody).body instanceof Uint8Array
/** Value number n: `valueBytes` bytes that differ per write (the number in front), or a small JSON object. */
const valueOf = (n: number, by: string): RawBody | { n: number; by: string } => {
  if (!valueBytes) return { n, by }
  const bytes = new Uint8Array(valueBytes).fill(120)
  bytes.set(new TextEncoder().encode(`${n} ${by} `).subarray(0, valueBytes))
  return { body: bytes, type: 'application/octet-stream' }
}

const server = await startMuster(serverArgs)
const api = server.url
const counts = { ok: 0, errors: 0, heartbeats: 0, writes: 0 }
const errorSamples = new Map<string, number>()

async function request(method: string, path: string, body?: unknown, headers: Record<string, string> = {}): Promise<any> {
  try {
    const raw = isRaw(body) ? body : null
    const res = await fetch(api + path, {
      method,
      headers: body === undefined ? headers : { 'content-type': raw?.type ?? 'application/json', ...headers },
      body: body === undefined ? undefined : raw ? raw.body : JSON.stringify(body),
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
// Writes: state PUTs at a steady rate over `keys` keys, in ticks of 100 ms.
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
        batch.push(request('PUT', `/api/state/soak/key-${n % keys}`, valueOf(n, agent.id), { 'x-instance-token': agent.token }).then((r) => r && counts.writes++))
      }
      await Promise.all(batch)
      await Bun.sleep(Math.max(0, 100 - (performance.now() - t0)))
    }
  })(),
)

const started = performance.now()
const rss: number[] = [rssMb(server.pid)]
const db: number[] = [dbMb(server.pid)]
console.log(
  `soak: ${agents.length} agents every ${HEARTBEAT_MS / 1000} s, ${SUBSCRIBERS} subscribers, ${writesPerS} writes/s over ${keys} keys` +
    `${valueBytes ? ` of ${valueBytes} bytes` : ''}, for ${durationMs / 1000} s; server flags: ${serverArgs.join(' ') || '(none)'}`,
)
console.log('   t(s)  RSS(MB)  DB(MB)  requests  errors  heartbeats  writes  events  frames delivered')
const report = async () => {
  const events = (await lastEventId()) - firstId
  const delivered = received.reduce((a, b) => a + b, 0)
  rss.push(rssMb(server.pid))
  db.push(dbMb(server.pid))
  const t = Math.round((performance.now() - started) / 1000)
  console.log(
    `${String(t).padStart(7)}  ${rss.at(-1)!.toFixed(0).padStart(7)}  ${db.at(-1)!.toFixed(0).padStart(6)}  ${String(counts.ok).padStart(8)}  ${String(counts.errors).padStart(6)}  ${String(counts.heartbeats).padStart(10)}  ${String(counts.writes).padStart(6)}  ${String(events).padStart(6)}  ${delivered}`,
  )
}
while (performance.now() - started < durationMs) {
  await Bun.sleep(Math.min(reportMs, durationMs - (performance.now() - started)))
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
console.log(`database + WAL: start ${db[0].toFixed(0)} MB, peak ${Math.max(...db).toFixed(0)} MB, end ${db.at(-1)!.toFixed(0)} MB`)
console.log(`requests: ${counts.ok} ok, ${counts.errors} errors${errorSamples.size ? ': ' + [...errorSamples].map(([k, v]) => `${v} × ${k}`).join('; ') : ''}`)
console.log(`events: ${events} published; ${SUBSCRIBERS} subscribers received ${received.reduce((a, b) => a + b, 0)} of ${events * SUBSCRIBERS} frames; ${short} subscribers short; ${subs.reduce((a, s) => a + s.dropped, 0)} dropped (server count)`)
for (const ws of sockets) ws.close()
await server.stop()
process.exit(counts.errors || short ? 1 : 0)

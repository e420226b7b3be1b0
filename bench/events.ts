// Event bus benchmark: 50 WebSocket subscribers on `*`; events published over HTTP
// (1) at full speed for 10 s by wrk, (2) paced at 1,000 events/s for 10 s.
// Prints publish req/s and publish-to-frame latency p50/p99, for Muster and for a
// bare Bun.serve doing the same fan-out without storage (the ceiling).
// Needs wrk (Debian package) built with LuaJIT. Run: bun bench/events.ts
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { startServer } from '../test/helpers'

const SUBSCRIBERS = 50
const SECONDS = 10
const PACED_RATE = 1000

/** Wall-clock milliseconds with sub-ms precision: comparable with the CLOCK_REALTIME stamps wrk puts in events. */
const wallMs = () => performance.timeOrigin + performance.now()

/** Latency histogram in 10 µs bins up to 2 s. */
class Histogram {
  private bins = new Uint32Array(200_000)
  count = 0
  add(ms: number) {
    this.bins[Math.min(this.bins.length - 1, Math.max(0, Math.round(ms * 100)))]++
    this.count++
  }
  pct(p: number): number {
    let need = Math.ceil(this.count * p)
    for (let i = 0; i < this.bins.length; i++) if ((need -= this.bins[i]) <= 0) return i / 100
    return NaN
  }
}

interface Target {
  name: string
  url: string
  /** Subscriber stats from the server, when it has them. */
  drops?(): Promise<number>
  stop(): Promise<void>
}

/** Opens the subscribers; every frame's `data.t` (publish time) gives one latency sample. */
async function subscribers(url: string) {
  let hist = new Histogram()
  const sockets: WebSocket[] = []
  const re = /"t":([0-9.]+)/
  for (let i = 0; i < SUBSCRIBERS; i++) {
    const ws = new WebSocket(`${url.replace(/^http/, 'ws')}/api/events/subscribe?pattern=*`)
    ws.onmessage = (m) => {
      const t = re.exec(m.data as string)
      if (t) hist.add(wallMs() - Number(t[1]))
    }
    await new Promise((resolve, reject) => ((ws.onopen = resolve), (ws.onerror = reject)))
    sockets.push(ws)
  }
  return {
    reset: () => (hist = new Histogram()),
    histogram: () => hist,
    close: () => sockets.forEach((ws) => ws.close()),
  }
}

const WRK_LUA = `
local ffi = require("ffi")
ffi.cdef[[
typedef struct { long tv_sec; long tv_nsec; } bench_timespec;
int clock_gettime(int clk, bench_timespec *tp);
]]
local ts = ffi.new("bench_timespec")
wrk.method = "POST"
wrk.headers["Content-Type"] = "application/json"
request = function()
  ffi.C.clock_gettime(0, ts)
  local ms = tonumber(ts.tv_sec) * 1000 + tonumber(ts.tv_nsec) / 1e6
  return wrk.format(nil, "/api/events/publish", nil, string.format('{"topic":"bench.tick","data":{"t":%.3f}}', ms))
end
`

async function fullSpeed(url: string): Promise<{ rps: number; sent: number; non2xx: number }> {
  const dir = mkdtempSync(join(tmpdir(), 'muster-wrk-'))
  const script = join(dir, 'publish.lua')
  writeFileSync(script, WRK_LUA)
  const proc = Bun.spawn(['wrk', '-t', '1', '-c', '16', '-d', `${SECONDS}s`, '-s', script, url], { stdout: 'pipe', stderr: 'inherit' })
  const out = await new Response(proc.stdout).text()
  await proc.exited
  rmSync(dir, { recursive: true, force: true })
  const rps = Number(/Requests\/sec:\s+([\d.]+)/.exec(out)?.[1])
  const sent = Number(/(\d+) requests in/.exec(out)?.[1])
  const non2xx = Number(/Non-2xx or 3xx responses:\s+(\d+)/.exec(out)?.[1] ?? 0)
  if (!rps || !sent) throw new Error(`wrk output not understood:\n${out}`)
  return { rps, sent, non2xx }
}

async function paced(url: string): Promise<{ rps: number; sent: number; failed: number }> {
  const started = performance.now()
  let sent = 0
  let failed = 0
  const inflight = new Set<Promise<void>>()
  while (performance.now() - started < SECONDS * 1000) {
    const due = Math.floor(((performance.now() - started) / 1000) * PACED_RATE)
    for (; sent < due; sent++) {
      const p: Promise<void> = fetch(`${url}/api/events/publish`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: `{"topic":"bench.paced","data":{"t":${wallMs().toFixed(3)}}}`,
      })
        .then((r) => (r.ok ? r.arrayBuffer() : (failed++, r.arrayBuffer())))
        .then(() => {})
        .catch(() => void failed++)
        .finally(() => inflight.delete(p))
      inflight.add(p)
    }
    await Bun.sleep(1)
  }
  await Promise.all(inflight)
  return { rps: sent / ((performance.now() - started) / 1000), sent, failed }
}

async function startBaseline(): Promise<Target> {
  const dir = mkdtempSync(join(tmpdir(), 'muster-base-'))
  const script = join(dir, 'baseline.ts')
  // The same contract with nothing behind it: parse, stamp, send to every socket, answer.
  writeFileSync(
    script,
    `let id = 0
const sockets = new Set()
const server = Bun.serve({
  hostname: '127.0.0.1', port: 0,
  async fetch(req, server) {
    if (server.upgrade(req)) return
    const body = await req.json()
    const event = { id: ++id, topic: body.topic, data: body.data ?? null, source: '', created_at: new Date().toISOString() }
    const frame = JSON.stringify(event)
    for (const ws of sockets) ws.sendText(frame)
    return Response.json(event)
  },
  websocket: { open: (ws) => sockets.add(ws), close: (ws) => sockets.delete(ws), message() {} },
})
console.log('baseline on http://127.0.0.1:' + server.port + ',')`,
  )
  const proc = Bun.spawn([process.execPath, script], { stdout: 'pipe', stderr: 'inherit' })
  const reader = proc.stdout.getReader()
  let out = ''
  let m: RegExpExecArray | null = null
  while (!(m = /baseline on (\S+),/.exec(out))) {
    const { value, done } = await reader.read()
    if (done) throw new Error(`baseline did not start:\n${out}`)
    out += new TextDecoder().decode(value)
  }
  return {
    name: 'bare Bun.serve',
    url: m[1],
    async stop() {
      proc.kill('SIGTERM')
      await proc.exited
      rmSync(dir, { recursive: true, force: true })
    },
  }
}

async function startMuster(): Promise<Target> {
  const server = await startServer({ args: ['--dashboard-bind', ''] })
  return {
    name: 'Muster',
    url: server.api,
    async drops() {
      const subs = (await (await fetch(`${server.api}/api/events/subscriptions`)).json()) as { dropped: number }[]
      return subs.reduce((n, s) => n + s.dropped, 0)
    },
    stop: () => server.cleanup(),
  }
}

const f = (n: number, digits = 2) => n.toFixed(digits)

async function measure(target: Target) {
  const subs = await subscribers(target.url)
  await Bun.sleep(200)
  const full = await fullSpeed(target.url)
  await Bun.sleep(500) // let the last frames arrive
  const fullHist = subs.histogram()
  const dropsFull = (await target.drops?.()) ?? 0
  subs.reset()
  const pace = await paced(target.url)
  await Bun.sleep(500)
  const paceHist = subs.histogram()
  const dropsPaced = ((await target.drops?.()) ?? 0) - dropsFull
  subs.close()
  await target.stop()
  const row = (mode: string, rps: number, h: Histogram, events: number, drops: number, errors: number) =>
    `${target.name.padEnd(15)} ${mode.padEnd(14)} ${f(rps, 0).padStart(8)} req/s   p50 ${f(h.pct(0.5)).padStart(7)} ms   p99 ${f(h.pct(0.99)).padStart(7)} ms   frames ${String(h.count).padStart(9)} of ${String(events).padStart(9)}   dropped ${drops}   errors ${errors}`
  console.log(row('full speed', full.rps, fullHist, full.sent * SUBSCRIBERS, dropsFull, full.non2xx))
  console.log(row(`paced ${PACED_RATE}/s`, pace.rps, paceHist, pace.sent * SUBSCRIBERS, dropsPaced, pace.failed))
}

console.log(
  `${SUBSCRIBERS} WebSocket subscribers on *, ${SECONDS} s per run; latency = publish request sent → frame received.\n` +
    'Server, wrk and the subscribers (this process) share the machine; frames counts every subscriber.',
)
await measure(await startMuster())
await measure(await startBaseline())

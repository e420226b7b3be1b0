// Shared benchmark plumbing: start the real server or a bare Bun.serve baseline
// as subprocesses, and drive load with wrk (Debian package) from a third process.
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { freePort, pgBinaries, startCluster } from '../test/pg'

const ROOT = join(import.meta.dir, '..')

export interface Proc {
  url: string
  pid: number
  stop(): Promise<void>
}

/**
 * Every process this one started and that has not ended (servers, wrk, helper children),
 * with a server's temp dir: killed and the dir removed when the benchmark exits, however
 * it exits (a throw, Ctrl-C), so a failed run leaves nothing behind holding CPU for the next one.
 */
const live = new Map<{ kill(signal?: number | NodeJS.Signals): void }, string | null>()
const cleanUp = () => {
  for (const [proc, dir] of live) {
    try {
      proc.kill('SIGKILL')
    } catch {}
    if (dir) rmSync(dir, { recursive: true, force: true })
  }
  live.clear()
}
process.on('exit', cleanUp)
for (const signal of ['SIGINT', 'SIGTERM'] as const) process.on(signal, () => process.exit(130))

/** Bun.spawn, for a process that the benchmark's exit kills if it is still running then (typed as Bun.spawn, so its stdio options type its streams). */
export const spawnChild = ((cmd: string[], io: Parameters<typeof Bun.spawn>[1]) => {
  const proc = Bun.spawn(cmd, io)
  live.set(proc, null)
  void proc.exited.then(() => live.delete(proc))
  return proc
}) as typeof Bun.spawn

/** Spawns a server process, tracked in `live` until stop() has ended it and removed `dir`. */
function spawnTracked(cmd: string[], dir: string, io: Parameters<typeof Bun.spawn>[1]) {
  const proc = Bun.spawn(cmd, io)
  live.set(proc, dir)
  return {
    proc,
    async stop() {
      proc.kill('SIGTERM')
      await proc.exited
      live.delete(proc)
      rmSync(dir, { recursive: true, force: true })
    },
  }
}

/** Resident memory of a process in MB (Linux /proc). */
export function rssMb(pid: number): number {
  const kb = /VmRSS:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))?.[1]
  return Number(kb) / 1024
}

/**
 * Runs `cmd` until it prints `ready` (the URL in group 1); stop() ends it and removes `dir`.
 * Its stdout goes to a file in `dir`, as a deployed server's log goes to a file or the
 * journal: a pipe would need this process to read every access line, on the same cores
 * as the server and wrk.
 */
async function started(cmd: string[], dir: string, ready: RegExp): Promise<Proc> {
  const logFile = join(dir, 'stdout.log')
  const { proc, stop } = spawnTracked(cmd, dir, { stdout: Bun.file(logFile), stderr: 'inherit' })
  let m: RegExpExecArray | null = null
  for (let waited = 0; !(m = ready.exec(existsSync(logFile) ? readFileSync(logFile, 'utf8') : '')); waited += 20) {
    if (proc.exitCode !== null || waited > 30_000) throw new Error(`process exited or never became ready:\n${existsSync(logFile) ? readFileSync(logFile, 'utf8') : ''}`)
    await Bun.sleep(20)
  }
  return {
    url: m[1],
    pid: proc.pid,
    stop,
  }
}

/** Muster from this checkout, or from `root` (another checkout, for an A/B run: bench/ab.ts). */
export async function startMuster(args: string[] = [], root = ROOT): Promise<Proc> {
  const dir = mkdtempSync(join(tmpdir(), 'muster-bench-'))
  const cmd = [process.execPath, join(root, 'app.ts'), '--bind', '127.0.0.1:0', '--dashboard-bind', '', '--data-dir', dir, ...args]
  return started(cmd, dir, /Muster API on (\S+),/)
}

/**
 * A reference server of bench/state.ts on a fresh data dir: bench/floor.ts (the state route's own
 * work behind a bare Bun.serve) or bench/kv.ts (a naive Bun + bun:sqlite key/value server), or
 * bench/coordination-floor.ts (bench/coordination-ab.ts's floor).
 */
export async function startReference(name: 'floor' | 'kv' | 'coordination-floor'): Promise<Proc> {
  const dir = mkdtempSync(join(tmpdir(), `muster-${name}-`))
  return started([process.execPath, join(ROOT, 'bench', `${name}.ts`), dir], dir, new RegExp(`${name} on (\\S+),`))
}

export { freePort }

/** etcd (Debian package etcd-server) on free ports, for its v3 JSON gateway; null when not installed. */
export async function startEtcd(): Promise<Proc | null> {
  if (!Bun.which('etcd')) return null
  const dir = mkdtempSync(join(tmpdir(), 'muster-etcd-'))
  const [client, peer] = [freePort(), freePort()]
  const url = `http://127.0.0.1:${client}`
  const { proc, stop } = spawnTracked(
    ['etcd', '--data-dir', dir, '--listen-client-urls', url, '--advertise-client-urls', url,
      '--listen-peer-urls', `http://127.0.0.1:${peer}`, '--initial-advertise-peer-urls', `http://127.0.0.1:${peer}`,
      '--initial-cluster', `default=http://127.0.0.1:${peer}`],
    dir,
    { stdout: 'ignore', stderr: 'ignore' },
  )
  for (let i = 0; i < 200; i++) {
    if (await fetch(`${url}/health`).then((r) => r.ok, () => false)) break
    await Bun.sleep(50)
  }
  return { url, pid: proc.pid, stop }
}

const HELLO = `const s = Bun.serve({ hostname: '127.0.0.1', port: 0, fetch: () => new Response('hello world') }); console.log('baseline on http://127.0.0.1:' + s.port + ',')`

/**
 * A bare Bun.serve hello-world: the ceiling every figure is compared with. A
 * benchmark may pass its own `source` (a script that prints `baseline on <url>,`).
 */
export async function startBaseline(source = HELLO): Promise<Proc> {
  const dir = mkdtempSync(join(tmpdir(), 'muster-base-'))
  const script = join(dir, 'baseline.ts')
  writeFileSync(script, source)
  return started([process.execPath, script], dir, /baseline on (\S+),/)
}

export interface LoadResult {
  rps: number
  p50ms: number
  p99ms: number
  errors: number
}

const toMs = (v: string, unit: string) => Number(v) * ({ us: 0.001, ms: 1, s: 1000, m: 60000 } as Record<string, number>)[unit]

/** Runs wrk with a Lua script (2 threads unless told); returns requests/s and latency percentiles. */
export async function wrk(url: string, lua: string, opts: { seconds?: number; connections?: number; threads?: number; warmup?: number } = {}): Promise<LoadResult> {
  // An unrecorded run first, so the JIT has compiled the request path before anything is measured.
  if (opts.warmup) await wrk(url, lua, { ...opts, seconds: opts.warmup, warmup: 0 })
  const dir = mkdtempSync(join(tmpdir(), 'muster-wrk-'))
  const script = join(dir, 'load.lua')
  writeFileSync(script, lua)
  const p = spawnChild(
    ['wrk', `-t${opts.threads ?? 2}`, `-c${opts.connections ?? 32}`, `-d${opts.seconds ?? 5}s`, '--latency', '-s', script, url],
    { stdout: 'pipe', stderr: 'pipe' },
  )
  const out = await new Response(p.stdout).text()
  rmSync(dir, { recursive: true, force: true })
  if ((await p.exited) !== 0) throw new Error(`wrk failed: ${await new Response(p.stderr).text()}`)
  const pct = (label: string) => {
    const m = new RegExp(`^\\s*${label}%\\s+([\\d.]+)(us|ms|s|m)`, 'm').exec(out)
    return m ? toMs(m[1], m[2]) : NaN
  }
  const non2xx = /Non-2xx or 3xx responses: (\d+)/.exec(out)
  const sockErr = /Socket errors: connect (\d+), read (\d+), write (\d+), timeout (\d+)/.exec(out)
  return {
    rps: Number(/Requests\/sec:\s+([\d.]+)/.exec(out)?.[1] ?? NaN),
    p50ms: pct('50'),
    p99ms: pct('99'),
    errors: Number(non2xx?.[1] ?? 0) + (sockErr ? sockErr.slice(1).reduce((a, b) => a + Number(b), 0) : 0),
  }
}

/**
 * wrk against several servers in alternating slices (a, b, c, a, b, c, ...), `seconds` in all
 * for each: a shared machine whose speed drifts affects them alike, so their ratios are steadier
 * than from two runs one after the other. req/s over all slices; p50 and p99 are the
 * medians of the slices' (wrk cannot merge its histograms).
 */
export async function alternate(
  targets: { url: string; lua: string }[],
  opts: { seconds: number; slices: number; threads?: number; warmup?: number },
): Promise<LoadResult[]> {
  // wrk takes whole seconds.
  const slice = { seconds: Math.max(1, Math.round(opts.seconds / opts.slices)), threads: opts.threads }
  if (opts.warmup) for (const s of targets) await wrk(s.url, s.lua, { ...slice, seconds: opts.warmup })
  const runs: LoadResult[][] = targets.map(() => [])
  for (let i = 0; i < opts.slices; i++) for (const [n, s] of targets.entries()) runs[n].push(await wrk(s.url, s.lua, slice))
  return runs.map(mergeSlices)
}

const median = (xs: number[]) => [...xs].sort((x, y) => x - y)[Math.floor(xs.length / 2)]

/** Slices of one server as one figure: req/s over all of them, the medians of their p50s and p99s. */
export const mergeSlices = (rs: LoadResult[]): LoadResult => ({
  rps: rs.reduce((n, r) => n + r.rps, 0) / rs.length,
  p50ms: median(rs.map((r) => r.p50ms)),
  p99ms: median(rs.map((r) => r.p99ms)),
  errors: rs.reduce((n, r) => n + r.errors, 0),
})

export function hasWrk(): boolean {
  return Bun.which('wrk') !== null
}

export const fmt = (r: LoadResult) =>
  `${r.rps.toFixed(0).padStart(8)} req/s   p50 ${r.p50ms.toFixed(2)} ms   p99 ${r.p99ms.toFixed(2)} ms   errors ${r.errors}`

// ---- PostgreSQL mode (docs/replicas.md) ----------------------------

export interface PgReplicas {
  procs: Proc[]
  urls: string[]
  stop(): Promise<void>
}

/**
 * A throwaway PostgreSQL cluster with production durability (fsync on), or null
 * when PostgreSQL is not installed; `replicas(n)` starts n Muster processes on one
 * fresh database of it.
 */
export async function startPg(): Promise<{ replicas(n: number, args?: string[]): Promise<PgReplicas>; stop(): Promise<void> } | null> {
  const bins = pgBinaries()
  if (!bins) return null
  const cluster = await startCluster(bins, { durable: true })
  let n = 0
  return {
    async replicas(count, args = []) {
      const { SQL } = await import('bun')
      const name = `bench_${process.pid}_${++n}`
      const admin = new SQL(`${cluster.url}/postgres`)
      await admin.unsafe(`CREATE DATABASE ${name}`)
      await admin.close()
      const procs: Proc[] = []
      for (let i = 0; i < count; i++) procs.push(await startMuster(['--database', `${cluster.url}/${name}`, ...args]))
      return { procs, urls: procs.map((p) => p.url), stop: async () => void (await Promise.all(procs.map((p) => p.stop()))) }
    },
    stop: () => cluster.stop(),
  }
}

/** wrk against every replica at once (the connections split between them): total req/s, worst p50/p99. */
export async function wrkAll(urls: string[], lua: string, opts: Parameters<typeof wrk>[2] = {}): Promise<LoadResult> {
  const per = Math.max(1, Math.round((opts.connections ?? 32) / urls.length))
  const runs = await Promise.all(urls.map((u) => wrk(u, lua, { ...opts, connections: per })))
  return {
    rps: runs.reduce((a, r) => a + r.rps, 0),
    p50ms: Math.max(...runs.map((r) => r.p50ms)),
    p99ms: Math.max(...runs.map((r) => r.p99ms)),
    errors: runs.reduce((a, r) => a + r.errors, 0),
  }
}

/** A JSON call of a benchmark's set-up or loop (X-Instance-Token when `token`): the parsed answer; throws on 4xx/5xx. */
export async function jsonCall(url: string, method: string, body?: unknown, token?: string): Promise<any> {
  const res = await fetch(url, {
    method,
    headers: { 'content-type': 'application/json', ...(token ? { 'x-instance-token': token } : {}) },
    body: body === undefined ? undefined : JSON.stringify(body),
  })
  const text = await res.text()
  if (res.status >= 400) throw new Error(`${method} ${url}: ${res.status} ${text}`)
  return text ? JSON.parse(text) : null
}

/** `clients` loops of `step` for `seconds`; completed steps per second. */
export async function loops(clients: number, seconds: number, step: (client: number) => Promise<void>): Promise<number> {
  const end = performance.now() + seconds * 1000
  let done = 0
  await Promise.all(
    Array.from({ length: clients }, async (_, c) => {
      while (performance.now() < end) await step(c), done++
    }),
  )
  return done / seconds
}

// ---- event fan-out (bench/events.ts, bench/fanout.ts) ----------------------------

/** Wall-clock milliseconds with sub-ms precision: comparable across processes, and with the CLOCK_REALTIME stamps wrk puts in events. */
export const wallMs = () => performance.timeOrigin + performance.now()

/** Latency histogram in 10 µs bins up to 10 s (the last bin holds everything slower). */
export class Histogram {
  private bins = new Uint32Array(1_000_000)
  count = 0
  max = 0
  add(ms: number) {
    this.bins[Math.min(this.bins.length - 1, Math.max(0, Math.round(ms * 100)))]++
    this.count++
    if (ms > this.max) this.max = ms
  }
  /** Percentile over `expected` frames: frames that never came count as slowest (Infinity). */
  pct(p: number, expected: number): number {
    let need = Math.ceil(expected * p)
    for (let i = 0; i < this.bins.length; i++) if ((need -= this.bins[i]) <= 0) return i / 100
    return Infinity
  }
}

/**
 * A server process so far (Linux /proc), in ms: `cpu`, its user + system time (all
 * threads); `waited`, the time its main thread was ready to run but had no CPU, which
 * says how busy the shared machine was around it.
 */
export function usage(pid: number): { cpu: number; waited: number } {
  const stat = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1].split(' ')
  const sched = readFileSync(`/proc/${pid}/task/${pid}/schedstat`, 'utf8').split(' ')
  return { cpu: (Number(stat[11]) + Number(stat[12])) * 10, waited: Number(sched[1]) / 1e6 }
}

// The same contract with nothing behind it: parse, stamp, publish to every socket (Bun's native topic), answer.
export const PUBSUB_BASELINE = `let id = 0
const server = Bun.serve({
  hostname: '127.0.0.1', port: 0,
  async fetch(req, server) {
    if (server.upgrade(req)) return
    if (req.method !== 'POST') return new Response('not found', { status: 404 })
    const body = await req.json()
    const event = { id: ++id, topic: body.topic, data: body.data ?? null, source: '', created_at: new Date().toISOString() }
    server.publish('events', JSON.stringify(event))
    return Response.json(event)
  },
  websocket: { open: (ws) => ws.subscribe('events'), message() {} },
})
console.log('baseline on http://127.0.0.1:' + server.port + ',')`

/** Publishes `rate` events/s on `topic` for `seconds` (those due are sent every millisecond), each stamped with its send time (`data.t`, wallMs). */
export async function pacedPublish(url: string, rate: number, seconds: number, topic: string): Promise<{ sent: number; failed: number }> {
  const started = performance.now()
  let sent = 0
  let failed = 0
  const inflight = new Set<Promise<void>>()
  while (performance.now() - started < seconds * 1000) {
    const due = Math.floor(((performance.now() - started) / 1000) * rate)
    for (; sent < due; sent++) {
      const p: Promise<void> = fetch(`${url}/api/events/publish`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: `{"topic":"${topic}","data":{"t":${wallMs().toFixed(3)}}}`,
      })
        .then((r) => (r.ok || failed++, r.arrayBuffer()))
        .then(() => {})
        .catch(() => void failed++)
        .finally(() => inflight.delete(p))
      inflight.add(p)
    }
    await Bun.sleep(1)
  }
  await Promise.all(inflight)
  return { sent, failed }
}

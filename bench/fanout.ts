// Event fan-out to many subscribers (issue 51): 1,000 WebSocket subscribers on `fan.*`,
// 1,000 events/s published over HTTP for a few seconds: delivery latency (the publish
// request sent -> the frame read by the subscriber, over every frame of every socket),
// frames lost, and the server's CPU per event. Against a bare Bun.serve doing the same
// pub/sub with no storage (Bun's native topic, one publish per event: the floor), this
// checkout's Muster, and with --root another checkout's (the before of a change).
//
// A million frames a second is more than WebSocket client objects can read on this
// machine, so the subscribers are plain TCP sockets that make the real handshake and
// read the frames themselves (headers, lengths, the stamp in each event): real
// WebSocket connections whose client costs little. They run in child processes, so
// their reading never delays the publisher (the main process) or its stamps. A frame
// that never came counts as slower than every one that did.
//
// Run: bun bench/fanout.ts [subscribers, default 1000] [--rate R, default 1000] [--seconds S, default 5] [--root <other checkout>] [--naive]
//   --naive: also a bare Bun.serve that sends each frame to each socket itself (a system call per socket per
//   event: slow to drain at this size, it loads the machine for a minute or more).
import { readFileSync } from 'node:fs'
import { Histogram, PUBSUB_BASELINE, pacedPublish, spawnChild, startBaseline, startMuster, usage, wallMs, type Proc } from './lib'

const WORKERS = 2

// The floor with a send per socket instead of Bun's topic: what the pub/sub saves over a loop of sends, apart from Muster.
const SENDS_BASELINE = PUBSUB_BASELINE.replace("server.publish('events', JSON.stringify(event))", 'const frame = JSON.stringify(event); for (const ws of sockets) ws.sendText(frame)')
  .replace('let id = 0', 'let id = 0\nconst sockets = new Set()')
  .replace("open: (ws) => ws.subscribe('events')", 'open: (ws) => void sockets.add(ws), close: (ws) => void sockets.delete(ws)')
const TARGET_P99_MS = 20

// ---- subscriber process -------------------------------------------------------

type Report = { frames: number; least: number; closed: number; p50: number; p99: number; max: number; cpuMs: number }
type ToSubs = { clock: true } | { offset: number } | { report: number }
type FromSubs = { ready: true } | { clock: number } | { done: true } | { report: Report }

const T = Buffer.from('"t":')

async function subscribers(url: string, count: number) {
  const { hostname, port } = new URL(url)
  const hist = new Histogram()
  let offset = 0
  let frames = 0
  let closed = 0
  const counts = new Uint32Array(count)
  const open: Promise<void>[] = []
  for (let n = 0; n < count; n++) {
    let upgraded = false
    let rest: Buffer | null = null
    let opened!: () => void
    let failed!: (e: Error) => void
    open.push(new Promise<void>((resolve, reject) => ((opened = resolve), (failed = reject))))
    const key = Buffer.from(crypto.getRandomValues(new Uint8Array(16))).toString('base64')
    await Bun.connect({
      hostname,
      port: Number(port),
      socket: {
        open(s) {
          s.write(`GET /api/events/subscribe?pattern=fan.* HTTP/1.1\r\nHost: ${hostname}:${port}\r\nUpgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Key: ${key}\r\nSec-WebSocket-Version: 13\r\n\r\n`)
        },
        data(_s, chunk) {
          const at = wallMs() - offset
          let buf: Buffer = rest ? Buffer.concat([rest, chunk]) : (chunk as Buffer)
          rest = null
          let i = 0
          if (!upgraded) {
            const end = buf.indexOf('\r\n\r\n')
            if (end < 0) return void (rest = buf)
            if (!buf.subarray(0, 12).toString().includes('101')) return failed(new Error(buf.subarray(0, end).toString()))
            upgraded = true
            opened()
            i = end + 4
          }
          // Frames from the server: FIN and opcode, then an unmasked length (7 bits, or 16 or 64 more).
          while (i + 2 <= buf.length) {
            const op = buf[i] & 0x0f
            let len = buf[i + 1] & 0x7f
            let head = 2
            if (len === 126) {
              if (i + 4 > buf.length) break
              len = buf.readUInt16BE(i + 2)
              head = 4
            } else if (len === 127) {
              if (i + 10 > buf.length) break
              len = Number(buf.readBigUInt64BE(i + 2))
              head = 10
            }
            if (i + head + len > buf.length) break
            const start = i + head
            if (op === 1) {
              frames++
              counts[n]++
              const t = buf.indexOf(T, start)
              if (t >= 0 && t < start + len) {
                let v = 0
                let scale = 0
                for (let j = t + 4; j < start + len; j++) {
                  const c = buf[j]
                  if (c === 46) scale = 1
                  else if (c >= 48 && c <= 57) (v = v * 10 + (c - 48)), scale && (scale *= 10)
                  else break
                }
                hist.add(at - (scale ? v / scale : v))
              }
            } else if (op === 8) closed++
            i = start + len
          }
          if (i < buf.length) rest = buf.subarray(i)
        },
        close() {
          if (!upgraded) failed(new Error('closed before the upgrade'))
        },
      },
    })
  }
  await Promise.all(open)
  const send = (m: FromSubs) => process.send!(m)
  process.on('message', (m: ToSubs) => {
    if ('clock' in m) send({ clock: wallMs() })
    else if ('offset' in m) (offset = m.offset), send({ done: true })
    else {
      const expected = Math.max(m.report * count, hist.count)
      const u = process.cpuUsage()
      send({
        report: { frames, least: Math.min(...counts), closed, p50: hist.pct(0.5, expected), p99: hist.pct(0.99, expected), max: hist.max, cpuMs: (u.user + u.system) / 1000 },
      })
    }
  })
  send({ ready: true })
}

// ---- driver --------------------------------------------------------------------

async function startSubscribers(url: string, count: number) {
  const proc = (() => {
    let answer: (m: FromSubs) => void = () => {}
    let next = new Promise<FromSubs>((r) => (answer = r))
    const child = spawnChild([process.execPath, import.meta.path, '--subscribers', url, String(count)], { stdout: 'inherit', stderr: 'inherit', ipc: (m: FromSubs) => answer(m) })
    const ask = async (m: ToSubs | null) => {
      const reply = next
      if (m) child.send(m)
      const got = await Promise.race([reply, child.exited.then((code) => Promise.reject(new Error(`subscriber process exited (${code})`)))])
      next = new Promise((r) => (answer = r))
      return got
    }
    return { child, ask }
  })()
  await proc.ask(null)
  // Their clock minus ours: the median of a few round trips.
  const offsets: number[] = []
  for (let i = 0; i < 9; i++) {
    const before = wallMs()
    const { clock } = (await proc.ask({ clock: true })) as { clock: number }
    offsets.push(clock - (before + wallMs()) / 2)
  }
  await proc.ask({ offset: offsets.sort((a, b) => a - b)[4] })
  return {
    report: async (events: number) => ((await proc.ask({ report: events })) as { report: Report }).report,
    stop: async () => (proc.child.kill(), void (await proc.child.exited)),
  }
}

/** User and system CPU time of a process so far, in ms (Linux /proc, 100 ticks a second). */
function userSystem(pid: number): { user: number; system: number } {
  const stat = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1].split(' ')
  return { user: Number(stat[11]) * 10, system: Number(stat[12]) * 10 }
}

/**
 * The server's system calls until stop(), all and socket writes (perf's tracepoints), or
 * null where perf cannot count them: the figure the fan-out is about, apart from the CPU
 * time that a busy machine inflates.
 */
function countSyscalls(pid: number): { stop(): Promise<{ all: number; sends: number } | null> } {
  if (!Bun.which('perf')) return { stop: async () => null }
  const events = ['raw_syscalls:sys_enter', 'syscalls:sys_enter_sendto', 'syscalls:sys_enter_write', 'syscalls:sys_enter_writev', 'syscalls:sys_enter_sendmsg']
  const proc = spawnChild(['perf', 'stat', '-x', ',', '-e', events.join(','), '-p', String(pid)], { stdout: 'ignore', stderr: 'pipe' })
  return {
    async stop() {
      proc.kill('SIGINT')
      const out = await new Response(proc.stderr).text()
      await proc.exited
      const count = (e: string) => Number(out.split('\n').find((l) => l.includes(e))?.split(',')[0])
      const all = count(events[0])
      return Number.isFinite(all) ? { all, sends: events.slice(1).reduce((n, e) => n + (count(e) || 0), 0) } : null
    },
  }
}

/** Dropped frames as the server counts them (Muster only). */
async function drops(url: string): Promise<number | null> {
  const res = await fetch(`${url}/api/events/subscriptions`)
  if (!res.ok) return null
  return ((await res.json()) as { dropped: number }[]).reduce((n, s) => n + s.dropped, 0)
}

const f = (n: number) => (Number.isFinite(n) ? n.toFixed(2) : 'lost').padStart(7)

type Row = { name: string; p99: number; cpuUs: number }

async function measure(name: string, proc: Proc, subscribers: number, rate: number, seconds: number): Promise<Row> {
  const per = Math.ceil(subscribers / WORKERS)
  const subs = []
  try {
    for (let w = 0; w < WORKERS; w++) subs.push(await startSubscribers(proc.url, Math.min(per, subscribers - w * per)))
    await Bun.sleep(300)
    const calls = countSyscalls(proc.pid)
    const from = usage(proc.pid)
    const split0 = userSystem(proc.pid)
    const { sent, failed } = await pacedPublish(proc.url, rate, seconds, 'fan.e')
    // Every frame came, or none came for 500 ms (up to 15 s): late frames count, lost ones are lost.
    let reports: Report[] = []
    for (let waited = 0, last = -1; waited < 15_000; waited += 500) {
      reports = await Promise.all(subs.map((s) => s.report(sent)))
      const frames = reports.reduce((n, r) => n + r.frames, 0)
      if (frames >= sent * subscribers || frames === last) break
      last = frames
      await Bun.sleep(500)
    }
    // Up to the last frame: what the server did after the publishing ended is part of the fan-out (the idle wait after it costs nothing).
    const to = usage(proc.pid)
    const split1 = userSystem(proc.pid)
    const systemShare = (split1.system - split0.system) / Math.max(1, split1.system - split0.system + split1.user - split0.user)
    const syscalls = await calls.stop()
    const frames = reports.reduce((n, r) => n + r.frames, 0)
    const p = (k: 'p50' | 'p99') => Math.max(...reports.map((r) => r[k]))
    const cpuUs = ((to.cpu - from.cpu) * 1000) / sent
    const dropped = await drops(proc.url)
    console.log(
      `${name.padEnd(22)} ${(sent / seconds).toFixed(0).padStart(5)} events/s  p50 ${f(p('p50'))} ms  p99 ${f(p('p99'))} ms  max ${f(Math.max(...reports.map((r) => r.max)))} ms  ` +
        `server CPU ${cpuUs.toFixed(0).padStart(5)} µs/event (${(systemShare * 100).toFixed(0)}% in the kernel)${syscalls ? `, ${(syscalls.all / sent).toFixed(0)} system calls/event (${(syscalls.sends / sent).toFixed(0)} socket writes)` : ''} (waited ${((to.waited - from.waited) / 1000).toFixed(1)} s for a CPU)  ` +
        `frames ${frames} of ${sent * subscribers} (fewest on a socket ${Math.min(...reports.map((r) => r.least))} of ${sent})  errors ${failed}` +
        `${dropped === null ? '' : `  dropped ${dropped}`}  subscribers' CPU ${(reports.reduce((n, r) => n + r.cpuMs, 0) / 1000).toFixed(1)} s`,
    )
    return { name, p99: p('p99'), cpuUs }
  } finally {
    for (const s of subs) await s.stop()
  }
}

async function main() {
  const args = process.argv.slice(2)
  const flag = (name: string) => {
    const i = args.indexOf(name)
    return i >= 0 ? args[i + 1] : undefined
  }
  const subscribers = Number(args[0] && !args[0].startsWith('--') ? args[0] : 1000)
  const rate = Number(flag('--rate') ?? 1000)
  const seconds = Number(flag('--seconds') ?? 5)
  const root = flag('--root')
  console.log(
    `fan-out: ${subscribers} WebSocket subscribers on fan.* (${WORKERS} client processes), ${rate} events/s published over HTTP for ${seconds} s per server; ` +
      'latency = publish request sent -> frame read, over every frame. Servers, publisher and subscribers share the machine.',
  )
  const targets: [string, () => Promise<Proc>][] = [
    ['bare Bun.serve (floor)', () => startBaseline(PUBSUB_BASELINE)],
    ...(args.includes('--naive') ? [['bare, a send per socket', () => startBaseline(SENDS_BASELINE)] as [string, () => Promise<Proc>]] : []),
    ...(root ? [[`Muster ${root.split('/').pop()}`, () => startMuster([], root)] as [string, () => Promise<Proc>]] : []),
    ['Muster (this checkout)', () => startMuster()],
  ]
  const rows: Row[] = []
  for (const [name, start] of targets) {
    const proc = await start()
    try {
      rows.push(await measure(name, proc, subscribers, rate, seconds))
    } finally {
      await proc.stop()
    }
  }
  const muster = rows.at(-1)!
  const before = root ? rows[rows.length - 2] : null
  console.log(
    `target: p99 < ${TARGET_P99_MS} ms: ${muster.p99 < TARGET_P99_MS ? 'met' : 'NOT met'} (${f(muster.p99).trim()} ms)` +
      (before ? `; server CPU per event ${(before.cpuUs / muster.cpuUs).toFixed(1)}x lower than ${before.name} (target 3x)` : ''),
  )
}

if (process.argv[2] === '--subscribers') await subscribers(process.argv[3], Number(process.argv[4]))
else await main()

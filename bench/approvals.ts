// Held PermissionRequest hooks (docs/api/approvals.md): WAITING hook requests held by the
// server, then decisions one at a time, each timed from sending the decision to the first
// bytes of its hook's answer (target: p99 < 10 ms with 200 waiting). Twice as many are
// held as decided, so at least WAITING always wait. Hooks are raw TCP sockets in this
// process (the figure is the server's, not a client pool's); on PostgreSQL too, with the
// decision made on one replica and the hook held on the other, when it is installed.
import { jsonCall, startMuster, startPg } from './lib'

const WAITING = Number(process.env.BENCH_APPROVALS ?? 200)

interface Held {
  answered: Promise<number>
  end(): void
}

/** One PermissionRequest held on `url`: resolves with the time its answer's first bytes came. */
async function hold(url: string, sessionId: string): Promise<Held> {
  const { hostname, port } = new URL(url)
  const body = JSON.stringify({ session_id: sessionId, hook_event_name: 'PermissionRequest', cwd: '/tmp/bench', tool_name: 'Bash', tool_input: { command: `echo ${sessionId}` } })
  let resolve!: (at: number) => void
  const answered = new Promise<number>((r) => (resolve = r))
  let seen = false
  const socket = await Bun.connect({
    hostname,
    port: Number(port),
    socket: {
      data() {
        if (!seen) (seen = true), resolve(performance.now())
      },
    },
  })
  socket.write(
    `POST /api/hooks/claude-code HTTP/1.1\r\nHost: ${hostname}\r\nContent-Type: application/json\r\nX-Muster-Agent: bench\r\nX-Muster-Approval-Wait: 10m\r\nContent-Length: ${Buffer.byteLength(body)}\r\n\r\n${body}`,
  )
  return { answered, end: () => socket.end() }
}

const percentile = (xs: number[], p: number) => [...xs].sort((a, b) => a - b)[Math.min(xs.length - 1, Math.floor((xs.length * p) / 100))]

/** Holds 2×WAITING on `holder`, decides WAITING of them on `decider`: the latencies in ms. */
async function run(holder: string, decider: string): Promise<number[]> {
  const sessions = Array.from({ length: 2 * WAITING }, () => crypto.randomUUID())
  const held = new Map<string, Held>()
  for (let i = 0; i < sessions.length; i += 50) await Promise.all(sessions.slice(i, i + 50).map(async (s) => held.set(s, await hold(holder, s))))
  let pending: { id: string; session_id: string }[] = []
  for (let tries = 0; pending.length < sessions.length && tries < 200; tries++) {
    pending = await jsonCall(`${decider}/api/approvals?status=pending&limit=1000`, 'GET')
    if (pending.length < sessions.length) await Bun.sleep(50)
  }
  if (pending.length < sessions.length) throw new Error(`only ${pending.length} of ${sessions.length} requests are pending`)
  const times: number[] = []
  for (const a of pending.slice(0, WAITING)) {
    const t0 = performance.now()
    await fetch(`${decider}/api/approvals/${a.id}/decision`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: '{"behavior":"allow"}' }).then((r) => r.arrayBuffer())
    times.push((await held.get(a.session_id)!.answered) - t0)
  }
  // The rest are allowed together, so the run ends with nothing held.
  const rest = pending.slice(WAITING).map((a) => a.id)
  await jsonCall(`${decider}/api/approvals/decision`, 'POST', { ids: rest, behavior: 'allow' })
  await Promise.all(pending.slice(WAITING).map((a) => held.get(a.session_id)!.answered))
  for (const h of held.values()) h.end()
  return times
}

function report(label: string, times: number[]) {
  console.log(
    `${label.padEnd(34)} p50 ${percentile(times, 50).toFixed(2)} ms   p99 ${percentile(times, 99).toFixed(2)} ms   max ${Math.max(...times).toFixed(2)} ms   (${times.length} decisions, ${WAITING}+ waiting; target p99 < 10 ms)`,
  )
}

/** What a durable write's round trip costs on its own in the same run: the floor under the figures. */
async function floor(label: string, url: string) {
  const puts: number[] = []
  for (let i = 0; i < WAITING; i++) {
    const t0 = performance.now()
    await fetch(`${url}/api/state/bench/floor`, { method: 'PUT', body: JSON.stringify({ i }) }).then((x) => x.arrayBuffer())
    puts.push(performance.now() - t0)
  }
  console.log(`${`${label}, a state PUT (the floor)`.padEnd(34)} p50 ${percentile(puts, 50).toFixed(2)} ms   p99 ${percentile(puts, 99).toFixed(2)} ms   max ${Math.max(...puts).toFixed(2)} ms`)
}

const m = await startMuster()
try {
  await run(m.url, m.url) // warm-up
  report('SQLite', await run(m.url, m.url))
  await floor('SQLite', m.url)
} finally {
  await m.stop()
}

const pg = process.env.BENCH_PG === '0' ? null : await startPg()
if (!pg) console.log(process.env.BENCH_PG === '0' ? 'PostgreSQL: skipped (BENCH_PG=0)' : 'PostgreSQL: not installed, skipped')
else {
  try {
    const r = await pg.replicas(2)
    try {
      await run(r.urls[0], r.urls[0])
      report('PostgreSQL, one replica', await run(r.urls[0], r.urls[0]))
      report('PostgreSQL, decided on A, held on B', await run(r.urls[1], r.urls[0]))
      await floor('PostgreSQL', r.urls[0])
    } finally {
      await r.stop()
    }
  } finally {
    await pg.stop()
  }
}

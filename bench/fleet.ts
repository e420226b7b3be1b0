// Fleet benchmark (issue 51): N agents on one server, as an organisation would run them.
// Each agent is a Claude Code hook session in edit-reserve mode (X-Muster-Reserve): a
// SessionStart, then every 5-15 s a PreToolUse Edit of one of its own files followed by its
// PostToolUse, and a SessionEnd at the end. Beside the hooks: one agent in INBOX_EVERY holds
// `GET /api/inbox?wait=30s` all along; every agent sends a message about once a minute to one
// of those holders (the wake-up latency = the send written -> the held answer's arrival),
// heartbeats every 30 s, and creates, claims and acks a task about every two minutes; one
// dashboard WebSocket on `*` per 100 agents counts the frames it gets.
//
// Reported: the time to start every session (SessionStart, CONCURRENCY at once per client
// process), per operation p50/p99/max and errors, the server's RSS (after the starts, peak,
// at the end) and CPU, the server's event-loop lag (from its metrics: how long its one thread
// was busy), the clients' CPU and how busy the whole machine was (the clients share the
// server's cores), and the clients' event-loop lag (a late client adds to every latency it
// times). The clients run in WORKERS child processes, each driving its share of the agents,
// and the dashboards' sockets in one more; the main process only starts the server, samples
// /proc and prints. Loopback only; it stops by itself after the run, and every child and
// temp dir goes with it (bench/lib.ts).
//
// Run: bun bench/fleet.ts [agents, default 1000] [--seconds S, default 60] [--pg] [--root <other checkout>] [--no-dashboards] [--hooks-only]
//   --pg: PostgreSQL, 2 replicas on a throwaway cluster (agents split between them).
//   --root: the server of another checkout (an A/B of a change, e.g. a `git worktree` of the base).
//   --no-dashboards: no dashboard sockets, so the other figures are apart from the event fan-out.
//   --hooks-only: the hook sessions and the dashboards, without the inbox holds, messages, heartbeats and tasks.
import { readFileSync } from 'node:fs'
import { spawnChild, startMuster, startPg, type Proc } from './lib'

const INBOX_EVERY = 10
const WS_EVERY = 100
const CONCURRENCY = 32
const EDIT_MIN_MS = 5_000
const EDIT_SPREAD_MS = 10_000
const MESSAGE_MS = 60_000
const HEARTBEAT_MS = 30_000
const TASK_MS = 120_000
const PROJECT_SIZE = 20
const WAKE_GRACE_MS = 10_000
const IN_FLIGHT = 128
/**
 * The first minute of the steady phase: each agent's first edits of its five files, every
 * one a grant. A longer run reports what comes after apart too (renewals are due after 9 min).
 */
const FIRST_PHASE_MS = 60_000
/** The steady phase's hard bound beyond --seconds: starts and ends that take longer than this are an error, not a hang. */
const PHASE_LIMIT_MS = 600_000

// ---- the server's event-loop lag ------------------------------------------------

/** Cumulative counts of muster_event_loop_lag_seconds by bucket bound (seconds), summed over the servers; null when a server has no such metric (an older checkout). */
async function loopLagOf(urls: string[]): Promise<Map<number, number> | null> {
  const out = new Map<number, number>()
  for (const url of urls) {
    const text = await fetch(`${url}/metrics`).then((r) => (r.ok ? r.text() : ''), () => '')
    const lines = [...text.matchAll(/^muster_event_loop_lag_seconds_bucket\{le="([^"]+)"\} (\d+)$/gm)]
    if (!lines.length) return null
    for (const [, le, n] of lines) {
      const bound = le === '+Inf' ? Infinity : Number(le)
      out.set(bound, (out.get(bound) ?? 0) + Number(n))
    }
  }
  return out
}

/** p50, p99 (as the bucket bound they fall under) and the ticks over 100 ms between two readings. */
function loopLagLine(from: Map<number, number> | null, to: Map<number, number> | null): string {
  if (!from || !to) return 'not reported by this server'
  const bounds = [...to.keys()].sort((a, b) => a - b)
  const delta = bounds.map((b) => (to.get(b) ?? 0) - (from.get(b) ?? 0))
  const total = delta.at(-1) ?? 0
  if (!total) return 'no ticks'
  const under = (q: number) => {
    const i = delta.findIndex((n) => n >= q * total)
    return bounds[i] === Infinity ? `over ${bounds[i - 1] * 1000} ms` : `at most ${bounds[i] * 1000} ms`
  }
  const over100 = total - delta[bounds.indexOf(0.1)]
  return `p50 ${under(0.5)}, p99 ${under(0.99)}; ${over100} of ${total} ticks over 100 ms`
}

// ---- latency histograms ---------------------------------------------------------

/** 10 µs bins to 100 ms, then 1 ms bins to 60 s: mergeable across processes. */
const FINE = 10_000
const BINS = FINE + 60_000
const binOf = (ms: number) => (ms < 100 ? Math.max(0, Math.round(ms * 100)) : Math.min(BINS - 1, FINE + Math.round(ms - 100)))
const msOf = (bin: number) => (bin < FINE ? bin / 100 : bin - FINE + 100)

interface Op {
  bins: Record<number, number>
  count: number
  max: number
  errors: number
  /** Up to three distinct errors, as examples. */
  samples: string[]
}
const newOp = (): Op => ({ bins: {}, count: 0, max: 0, errors: 0, samples: [] })
/** One latency of `o`. */
function observe(o: Op, ms: number) {
  o.bins[binOf(ms)] = (o.bins[binOf(ms)] ?? 0) + 1
  o.count++
  if (ms > o.max) o.max = ms
}
const addSample = (o: Op, why: string) => void (o.samples.length < 3 && !o.samples.includes(why) && o.samples.push(why))

function merge(into: Record<string, Op>, from: Record<string, Op>) {
  for (const [name, o] of Object.entries(from)) {
    const t = (into[name] ??= newOp())
    for (const [b, n] of Object.entries(o.bins)) t.bins[Number(b)] = (t.bins[Number(b)] ?? 0) + n
    t.count += o.count
    t.max = Math.max(t.max, o.max)
    t.errors += o.errors
    for (const why of o.samples) addSample(t, why)
  }
}

function pct(o: Op, p: number): number {
  let need = Math.ceil(o.count * p)
  for (const b of Object.keys(o.bins).map(Number).sort((x, y) => x - y)) if ((need -= o.bins[b]) <= 0) return msOf(b)
  return NaN
}

// ---- client process ---------------------------------------------------------------

type Plan = { urls: string[]; first: number; count: number; run: string; seconds: number; sockets: number; hooksOnly: boolean }
type ToWorker = { start: true } | { steady: true } | { end: true }
type Ended = { ops: Record<string, Op>; later: Record<string, Op>; frames: number; topics: Record<string, number>; early: number; cpuMs: number; lag: Op }
type FromWorker = { ready: true } | { started: number } | { steadied: true } | { ended: Ended }

async function worker(plan: Plan) {
  const ops: Record<string, Op> = {}
  // The same, for what is answered after the first FIRST_PHASE_MS of the steady phase (runs longer than twice that).
  const later: Record<string, Op> = {}
  let laterFrom = Infinity
  const add = (into: Record<string, Op>, name: string, ms: number) => observe((into[name] ??= newOp()), ms)
  const record = (name: string, ms: number) => {
    add(ops, name, ms)
    if (performance.now() >= laterFrom) add(later, name, ms)
  }
  const fail = (name: string, why: string) => {
    const o = (ops[name] ??= newOp())
    o.errors++
    addSample(o, why.slice(0, 200))
  }
  // Requests in flight per client process (held inbox reads aside), as a client's connection pool
  // would hold them: an open loop of thousands of agents otherwise opens a connection per request
  // and runs the loopback out of ports (TIME_WAIT). Timed from the moment a request goes out.
  let free = IN_FLIGHT
  const queued: (() => void)[] = []
  const acquire = () => (free > 0 ? (free--, Promise.resolve()) : new Promise<void>((r) => queued.push(r)))
  const release = () => (queued.length ? queued.shift()!() : free++)

  /** One timed request: its answer (status and parsed body), or null after counting an error. */
  async function timed(name: string, url: string, init: RequestInit, ok: number[] = [200]): Promise<{ status: number; headers: Headers; body: any; at: number } | null> {
    await acquire()
    try {
      return await timedNow(name, url, init, ok)
    } finally {
      release()
    }
  }
  async function timedNow(name: string, url: string, init: RequestInit, ok: number[]): Promise<{ status: number; headers: Headers; body: any; at: number } | null> {
    const t0 = performance.now()
    try {
      const r = await fetch(url, init)
      const text = await r.text()
      if (!ok.includes(r.status)) return fail(name, `${r.status} ${text}`), null
      record(name, performance.now() - t0)
      return { status: r.status, headers: r.headers, body: text ? JSON.parse(text) : null, at: t0 }
    } catch (e) {
      return fail(name, String(e)), null
    }
  }
  const post = (body: unknown, headers: Record<string, string> = {}): RequestInit => ({
    method: 'POST',
    headers: { 'content-type': 'application/json', ...headers },
    body: JSON.stringify(body),
  })

  interface Agent {
    k: number
    url: string
    session: string
    project: string
    root: string
    name: string
    id: string
    token: string
    edits: number
    holder: boolean
    cursor: number
  }
  const agents: Agent[] = Array.from({ length: plan.count }, (_, j) => {
    const k = plan.first + j
    const project = `fleet-p${Math.floor(k / PROJECT_SIZE)}`
    return { k, url: plan.urls[k % plan.urls.length], session: `${plan.run}-${k}`, project, root: `/fleet/${project}`, name: '', id: '', token: '', edits: 0, holder: k % INBOX_EVERY === 0, cursor: 0 }
  })
  const hookHeaders = (a: Agent) => ({ 'x-muster-project': a.project, 'x-muster-root': a.root, 'x-muster-reserve': '10m', 'x-muster-agent': `agent-${a.k}` })
  const hook = (a: Agent, name: string, event: Record<string, unknown>) =>
    timed(name, `${a.url}/api/hooks/claude-code`, post({ session_id: a.session, cwd: a.root, ...event }, hookHeaders(a)))
  const edit = (a: Agent, phase: 'PreToolUse' | 'PostToolUse') => {
    const file = `${a.root}/src/agent-${a.k}/f${a.edits % 5}.ts`
    const tool = { tool_name: 'Edit', tool_input: { file_path: file, old_string: 'a', new_string: 'b' } }
    return hook(a, phase === 'PreToolUse' ? 'hook.pre' : 'hook.post', { hook_event_name: phase, ...tool, ...(phase === 'PostToolUse' ? { tool_response: { filePath: file, success: true } } : {}) })
  }

  let running = false
  // Dashboards: their sockets open before the sessions, so they see the whole run.
  let frames = 0
  // What the first dashboard saw in the steady phase, by topic: what the fan-out carries.
  const topics: Record<string, number> = {}
  const sockets: WebSocket[] = []
  for (let i = 0; i < plan.sockets; i++) {
    const ws = new WebSocket(`${plan.urls[i % plan.urls.length].replace(/^http/, 'ws')}/api/events/subscribe?pattern=*`)
    const tally = i === 0
    ws.onmessage = (m) => {
      frames++
      if (!tally || !running) return
      const topic = String(m.data).match(/"topic":"([^"]*)"/)?.[1] ?? '?'
      topics[topic] = (topics[topic] ?? 0) + 1
    }
    ws.onclose = () => running && fail('dashboard.ws', 'closed during the run')
    await new Promise((resolve) => ((ws.onopen = resolve), (ws.onerror = () => (fail('dashboard.ws', 'error'), resolve(null)))))
    sockets.push(ws)
  }

  // Holds go on after the load stops, until every message sent has woken its holder (or WAKE_GRACE_MS).
  let holding = false
  const holds = new AbortController()
  const inflight = new Set<Promise<unknown>>()
  const track = (p: Promise<unknown>) => (inflight.add(p), void p.finally(() => inflight.delete(p)))
  const holders = agents.filter((a) => a.holder)
  // A message's send start, until its holder's answer arrives. The answer may come first: the
  // holder's replica wakes it at COMMIT, while the sender's 201 is still on its way (on another
  // replica, or behind other answers in this process); it waits in wokeFirst for the send's id.
  const sentAt = new Map<number, number>()
  const wokeFirst = new Map<number, number>()
  let early = 0
  const timers: Timer[] = []
  const every = (ms: number, first: number, f: () => Promise<unknown>) => {
    let busy = false
    const tick = () => {
      if (!running || busy) return
      busy = true
      track(f().finally(() => (busy = false)))
    }
    timers.push(setTimeout(() => (tick(), timers.push(setInterval(tick, ms))), first))
  }

  async function holdInbox(a: Agent) {
    while (holding) {
      const t0 = performance.now()
      try {
        const r = await fetch(`${a.url}/api/inbox?wait=30s&after=${a.cursor}`, { headers: { 'x-instance-token': a.token }, signal: holds.signal })
        const body: any = await r.json()
        if (r.status !== 200) {
          fail('inbox.wake', `${r.status} ${JSON.stringify(body)}`)
          await Bun.sleep(1000)
          continue
        }
        const at = performance.now()
        a.cursor = body.cursor ?? a.cursor
        for (const m of body.messages) {
          const sent = sentAt.get(m.id)
          if (sent !== undefined) record('inbox.wake', at - sent), sentAt.delete(m.id)
          else wokeFirst.set(m.id, at)
        }
        if (!body.messages.length) record('inbox.empty-30s', at - t0)
      } catch (e) {
        if (holding) fail('inbox.wake', String(e)), await Bun.sleep(1000)
      }
    }
  }

  async function sessionsStart(): Promise<number> {
    const t0 = performance.now()
    let next = 0
    await Promise.all(
      Array.from({ length: CONCURRENCY }, async () => {
        while (next < agents.length) {
          const a = agents[next++]
          const r = await hook(a, 'hook.start', { hook_event_name: 'SessionStart', source: 'startup' })
          if (!r) continue
          a.token = r.headers.get('x-muster-instance-token') ?? ''
          a.id = r.headers.get('x-muster-instance-id') ?? ''
          a.name = decodeURIComponent(r.headers.get('x-muster-instance-name') ?? '')
        }
      }),
    )
    return performance.now() - t0
  }

  const rand = (ms: number) => Math.random() * ms
  // This process's event-loop lag in the steady phase: how late a 10 ms timer fires. A late
  // loop adds to every latency it measures, so it is reported beside them.
  const lag = newOp()
  let lagTimer: Timer | undefined
  function steady() {
    running = holding = true
    let last = performance.now()
    lagTimer = setInterval(() => {
      const now = performance.now()
      observe(lag, Math.max(0, now - last - 10))
      last = now
    }, 10)
    if (plan.seconds * 1000 > 2 * FIRST_PHASE_MS) laterFrom = performance.now() + FIRST_PHASE_MS
    for (const a of agents.filter((a) => a.token)) {
      if (a.holder && !plan.hooksOnly) void holdInbox(a)
      // Open loops: each agent acts on its own clock, whether or not the server keeps up.
      const editLoop = () => {
        if (!running) return
        a.edits++
        track(
          (async () => {
            if (await edit(a, 'PreToolUse')) await edit(a, 'PostToolUse')
            timers.push(setTimeout(editLoop, EDIT_MIN_MS + rand(EDIT_SPREAD_MS)))
          })(),
        )
      }
      timers.push(setTimeout(editLoop, rand(EDIT_MIN_MS + EDIT_SPREAD_MS)))
      if (plan.hooksOnly) continue
      every(HEARTBEAT_MS, rand(HEARTBEAT_MS), () => timed('heartbeat', `${a.url}/api/instances/${a.id}/heartbeat`, post({}, { 'x-instance-token': a.token })))
      every(MESSAGE_MS, rand(MESSAGE_MS), async () => {
        const to = holders[Math.floor(rand(holders.length))]
        if (!to?.name || to === a) return
        const r = await timed('message.send', `${a.url}/api/messages`, post({ to: [to.name], subject: 'fleet', body: `from ${a.name}` }, { 'x-instance-token': a.token }), [201])
        if (!r) return
        const woke = wokeFirst.get(r.body.id)
        if (woke === undefined) return void sentAt.set(r.body.id, r.at)
        record('inbox.wake', woke - r.at), wokeFirst.delete(r.body.id), early++
      })
      every(TASK_MS, rand(TASK_MS), async () => {
        const h = { 'x-instance-token': a.token }
        if (!(await timed('task.create', `${a.url}/api/queues/fleet/tasks`, post({ title: `task of ${a.name}` }, h), [201]))) return
        const claim = await timed('task.claim', `${a.url}/api/queues/fleet/claim`, post({ wait_ms: 0 }, h), [200, 204])
        if (claim?.status === 200) await timed('task.ack', `${a.url}/api/tasks/${claim.body.id}/ack`, post({ claim_id: claim.body.claim_id }, h))
      })
    }
  }

  async function end() {
    running = false
    clearInterval(lagTimer)
    laterFrom = Infinity
    for (const t of timers) clearTimeout(t), clearInterval(t)
    // What was sent finishes (a SessionEnd must not overtake its agent's last calls), and its wake-ups arrive.
    while (inflight.size) await Promise.all([...inflight])
    for (const t of timers) clearTimeout(t), clearInterval(t)
    for (const end = Date.now() + WAKE_GRACE_MS; sentAt.size && Date.now() < end; ) await Bun.sleep(50)
    holding = false
    holds.abort()
    for (const ws of sockets) ws.close()
    let next = 0
    await Promise.all(
      Array.from({ length: CONCURRENCY }, async () => {
        while (next < agents.length) {
          const a = agents[next++]
          if (a.token) await hook(a, 'hook.end', { hook_event_name: 'SessionEnd', reason: 'other' })
        }
      }),
    )
    // A wake-up whose message never reached its holder: counted, not left out.
    if (sentAt.size) {
      const o = (ops['inbox.wake'] ??= newOp())
      o.errors += sentAt.size
      addSample(o, `${sentAt.size} messages never woke their holder within ${WAKE_GRACE_MS / 1000} s of the end`)
    }
    const u = process.cpuUsage()
    send({ ended: { ops, later, frames, topics, early, cpuMs: (u.user + u.system) / 1000, lag } })
  }

  const send = (m: FromWorker) => process.send!(m)
  process.on('message', async (m: ToWorker) => {
    if ('start' in m) send({ started: await sessionsStart() })
    else if ('steady' in m) steady(), send({ steadied: true })
    // No exit here: it could drop the report still in the IPC pipe; the main process ends this one.
    else await end()
  })
  send({ ready: true })
}

// ---- main -----------------------------------------------------------------------------

/** utime + stime of a process in ms (Linux /proc, 100 ticks a second). */
function cpuMs(pid: number): number {
  return userSys(pid).reduce((a, b) => a + b)
}
/** [utime, stime] in ms (the system share is mostly the kernel's work on the sockets). */
function userSys(pid: number): [number, number] {
  const fields = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1].split(' ')
  return [Number(fields[11]) * 10, Number(fields[12]) * 10]
}
/** The machine's busy and total time in ms over every core (/proc/stat: all but idle and iowait is busy). */
function machineMs(): { busy: number; total: number } {
  const ticks = readFileSync('/proc/stat', 'utf8').split('\n')[0].trim().split(/\s+/).slice(1, 9).map(Number)
  const total = ticks.reduce((a, b) => a + b)
  return { busy: (total - ticks[3] - ticks[4]) * 10, total: total * 10 }
}
const rssOf = (pid: number) => Number(/VmRSS:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))?.[1]) / 1024

async function main() {
  const args = process.argv.slice(2)
  const flag = (name: string) => {
    const i = args.indexOf(name)
    return i >= 0 ? args[i + 1] : undefined
  }
  // 1,000 when run without arguments (bench/run.ts runs every benchmark so).
  const agents = Number(args[0] && !args[0].startsWith('--') ? args[0] : 1000)
  if (!Number.isInteger(agents) || agents < 1) throw new Error('usage: bun bench/fleet.ts <agents> [--seconds S] [--pg] [--root <checkout>] [--workers W]')
  const seconds = Number(flag('--seconds') ?? 60)
  const workers = Number(flag('--workers') ?? 2)
  const root = flag('--root')
  const usePg = args.includes('--pg')
  // Without the dashboards' sockets: the hooks and the rest measured apart from the event fan-out.
  const dashboards = !args.includes('--no-dashboards')
  // Only the hook sessions (and the dashboards): the issue's own first measurement, apart from the rest of the mix.
  const hooksOnly = args.includes('--hooks-only')

  // Before the cluster starts: PostgreSQL runs as a daemon, which a throw here would leave behind.
  if (usePg && root) throw new Error('--root: SQLite only')
  const pg = usePg ? await startPg() : null
  if (usePg && !pg) throw new Error('--pg: PostgreSQL is not installed')
  const replicas = pg ? await pg.replicas(2) : null
  const servers: Proc[] = replicas ? replicas.procs : [await startMuster([], root)]
  const urls = servers.map((s) => s.url)
  const pids = servers.map((s) => s.pid)
  const run = `fleet-${process.pid}`

  // Children: their share of the agents each; Bun's fetch limits requests in flight to 256 unless told (the held inbox reads are more).
  // The dashboards' sockets have a process of their own, as browsers are apart from the agents: the
  // frames they read do not delay the answers the agents' processes time.
  const share = Math.ceil(agents / workers)
  const children: { proc: ReturnType<typeof Bun.spawn>; inbox: FromWorker[]; waiters: (() => void)[] }[] = []
  const sockets = dashboards ? Math.ceil(agents / WS_EVERY) : 0
  const plans: Plan[] = Array.from({ length: workers }, (_, w) => ({ urls, first: w * share, count: Math.max(0, Math.min(share, agents - w * share)), run, seconds, sockets: 0, hooksOnly }))
  if (sockets) plans.push({ urls, first: 0, count: 0, run, seconds, sockets, hooksOnly })
  for (const plan of plans) {
    const child = { inbox: [] as FromWorker[], waiters: [] as (() => void)[] } as (typeof children)[number]
    child.proc = spawnChild([process.execPath, import.meta.path, '--worker', JSON.stringify(plan)], {
      stdout: 'inherit',
      stderr: 'inherit',
      env: { ...process.env, BUN_CONFIG_MAX_HTTP_REQUESTS: '8192' },
      ipc(m: FromWorker) {
        child.inbox.push(m)
        child.waiters.splice(0).forEach((f) => f())
      },
    })
    children.push(child)
  }
  const next = async <T extends FromWorker>(c: (typeof children)[number], key: string): Promise<T> => {
    const limit = Date.now() + PHASE_LIMIT_MS
    for (;;) {
      const i = c.inbox.findIndex((m) => key in m)
      if (i >= 0) return c.inbox.splice(i, 1)[0] as T
      if (Date.now() > limit || c.proc.exitCode !== null) throw new Error(`client process: no ${key} in time (exit ${c.proc.exitCode}, signal ${c.proc.signalCode})`)
      await new Promise<void>((r) => (c.waiters.push(r), setTimeout(r, 1000)))
    }
  }
  const all = <T extends FromWorker>(key: string) => Promise.all(children.map((c) => next<T>(c, key)))
  await all('ready')

  // Server CPU and RSS sampled once a second; the phases marked in the samples.
  const cpu0 = pids.map(cpuMs)
  let peak = 0
  const sampler = setInterval(() => (peak = Math.max(peak, pids.reduce((n, p) => n + rssOf(p), 0))), 1000)
  const rssNow = () => pids.reduce((n, p) => n + rssOf(p), 0)

  const t0 = performance.now()
  for (const c of children) c.proc.send({ start: true })
  const starts = await all<{ started: number }>('started')
  const startedMs = performance.now() - t0
  const rssStarted = rssNow()
  // User and system time of the servers, read once at each mark.
  const atStart = pids.map(userSys)

  for (const c of children) c.proc.send({ steady: true })
  await all('steadied')
  const s0 = performance.now()
  // The clients' and the whole machine's CPU over the same phase: the clients share the server's cores.
  const clientPids = children.map((c) => c.proc.pid)
  const clientsAtStart = clientPids.map(cpuMs)
  const machineAtStart = machineMs()
  const lagAtStart = await loopLagOf(urls)
  await Bun.sleep(seconds * 1000)
  const atSteady = pids.map(userSys)
  const clientsAtSteady = clientPids.map(cpuMs)
  const machineAtSteady = machineMs()
  const lagAtSteady = await loopLagOf(urls)
  const steadyMs = performance.now() - s0
  const rssSteady = rssNow()
  // What the dashboards' subscriptions sent and dropped (a slow subscriber's overflow), per replica.
  const subs = (await Promise.all(urls.map((u) => fetch(`${u}/api/events/subscriptions`).then((r) => r.json() as Promise<{ sent: number; dropped: number }[]>)))).flat()

  for (const c of children) c.proc.send({ end: true })
  const ends = await all<{ ended: Ended }>('ended')
  // Their reports are in: the clients go now (a client still closing thousands of sockets kept the run from ending).
  for (const c of children) c.proc.kill()
  clearInterval(sampler)
  const rssEnd = rssNow()
  peak = Math.max(peak, rssSteady, rssEnd)
  const ops: Record<string, Op> = {}
  for (const e of ends) merge(ops, e.ended.ops)
  const later: Record<string, Op> = {}
  for (const e of ends) merge(later, e.ended.later)
  const frames = ends.reduce((n, e) => n + e.ended.frames, 0)
  const topics: Record<string, number> = {}
  for (const e of ends) for (const [t, n] of Object.entries(e.ended.topics)) topics[t] = (topics[t] ?? 0) + n
  const lag: Record<string, Op> = {}
  ends.forEach((e, i) => merge(lag, { [plans[i].count ? 'agents' : 'dashboards']: e.ended.lag }))
  const early = ends.reduce((n, e) => n + e.ended.early, 0)
  const clientCpu = ends.reduce((n, e) => n + e.ended.cpuMs, 0)
  const sum = (xs: number[]) => xs.reduce((a, b) => a + b, 0)
  const serverSteadyCpu = sum(atSteady.flat()) - sum(atStart.flat())
  const serverSteadySys = sum(atSteady.map(([, sys]) => sys)) - sum(atStart.map(([, sys]) => sys))
  const serverAll = sum(pids.map(cpuMs)) - sum(cpu0)
  const clientsSteadyCpu = sum(clientsAtSteady) - sum(clientsAtStart)
  const cores = (machineAtSteady.total - machineAtStart.total) / steadyMs
  const machineBusy = (machineAtSteady.busy - machineAtStart.busy) / (machineAtSteady.total - machineAtStart.total)

  if (replicas) await replicas.stop()
  else await servers[0].stop()
  if (pg) await pg.stop()

  const mode = pg ? 'PostgreSQL, 2 replicas' : 'SQLite'
  const totalErrors = sum(Object.values(ops).map((o) => o.errors))
  console.log(`fleet: ${agents} agents on ${mode}${root ? ` (server of ${root})` : ''}${hooksOnly ? ', hook sessions only' : ''}; ${workers} client processes; steady ${seconds} s`)
  console.log(
    `sessions started: ${(startedMs / 1000).toFixed(2)} s (${(agents / (startedMs / 1000)).toFixed(0)}/s; slowest client ${(Math.max(...starts.map((s) => s.started)) / 1000).toFixed(2)} s, ${CONCURRENCY} at once per client)`,
  )
  const table = (of: Record<string, Op>, seconds: number) => {
    console.log(`${'operation'.padEnd(18)} ${'count'.padStart(8)} ${'per s'.padStart(7)} ${'p50 ms'.padStart(8)} ${'p99 ms'.padStart(8)} ${'max ms'.padStart(9)} errors`)
    for (const name of Object.keys(of).sort()) {
      const o = of[name]
      const rate = name === 'hook.start' || name === 'hook.end' ? '' : (o.count / seconds).toFixed(1)
      console.log(
        `${name.padEnd(18)} ${String(o.count).padStart(8)} ${rate.padStart(7)} ${pct(o, 0.5).toFixed(2).padStart(8)} ${pct(o, 0.99).toFixed(2).padStart(8)} ${o.max.toFixed(2).padStart(9)} ${o.errors}${o.samples.length ? `  e.g. ${o.samples.join(' | ')}` : ''}`,
      )
    }
  }
  table(ops, steadyMs / 1000)
  if (Object.keys(later).length) {
    console.log(`after the first ${FIRST_PHASE_MS / 1000} s of the steady phase (every agent's files reserved; up to the end of the load):`)
    table(later, steadyMs / 1000 - FIRST_PHASE_MS / 1000)
  }
  console.log(
    `dashboard frames received: ${frames} on ${sockets} sockets; the server sent ${sum(subs.map((x) => x.sent))}, dropped ${sum(subs.map((x) => x.dropped))} (a subscriber too slow)`,
  )
  if (dashboards) {
    const top = Object.entries(topics).sort((a, b) => b[1] - a[1])
    console.log(`events to one dashboard per second of the steady phase, by topic: ${top.map(([t, n]) => `${t} ${(n / (steadyMs / 1000)).toFixed(0)}`).join(', ')}`)
  }
  console.log(`inbox wakes that reached their holder before the send's 201 reached its sender: ${early} of ${ops['inbox.wake']?.count ?? 0}`)
  console.log(`server RSS: ${rssStarted.toFixed(0)} MB after the starts, ${rssSteady.toFixed(0)} MB after the steady phase, ${peak.toFixed(0)} MB peak${pg ? ' (replicas summed; PostgreSQL not counted)' : ''}`)
  console.log(
    `server CPU: ${((serverSteadyCpu / steadyMs) * 100).toFixed(0)}% of a core in the steady phase (${((serverSteadySys / steadyMs) * 100).toFixed(0)}% in the kernel), ${(serverAll / 1000).toFixed(1)} s in all; clients ${(clientCpu / 1000).toFixed(1)} s in all`,
  )
  console.log(
    `clients' CPU: ${((clientsSteadyCpu / steadyMs) * 100).toFixed(0)}% of a core in the steady phase; the machine ${(machineBusy * 100).toFixed(0)}% busy over its ${cores.toFixed(0)} cores then${pg ? ' (PostgreSQL included)' : ''}`,
  )
  console.log(`server event-loop lag in the steady phase (its own 20 ms timer, muster_event_loop_lag_seconds): ${loopLagLine(lagAtStart, lagAtSteady)}`)
  const lagLine = (who: string) => lag[who] && `${who}' processes p99 ${pct(lag[who], 0.99).toFixed(1)} ms, max ${lag[who].max.toFixed(0)} ms`
  console.log(`clients' event-loop lag in the steady phase (a 10 ms timer's lateness, part of every latency above): ${['agents', 'dashboards'].map(lagLine).filter(Boolean).join('; ')}`)
  console.log(`errors: ${totalErrors}`)
}

if (process.argv[2] === '--worker') await worker(JSON.parse(process.argv[3]))
else {
  await main()
  // Everything it started is stopped; nothing left to wait for.
  process.exit(0)
}

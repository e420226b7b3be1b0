// Inbox benchmark (issue 33), each figure beside a bare Bun.serve measured in the same run.
// (1) Wake-up: 200 registered agents each hold `GET /api/inbox?wait=30s`; messages are then
//     sent to them one at a time (the next send when the previous answer came), and as one
//     broadcast to "*". Latency = the send request written -> the first bytes of the held
//     answer, so it includes the send's own commit. Target p99 < 10 ms with 200 waiting.
//     The baseline holds requests in a Map and answers them from the POST, storing nothing.
// (2) Inbox read throughput with 100,000 messages stored (to 100 names, 1% broadcasts):
//     wrk on `GET /api/inbox?after=<recent>` for one agent (its last 10 messages; and the
//     empty page at its cursor) against `GET /api/state/{key}` of a ~1 KB value (as sent
//     without and with an X-Instance-Token) and the hello-world, in alternating slices.
//     Target: the 10-message read >= 50% of the state GET.
// Beside the rates, the Muster process's CPU time per request (Linux /proc; PostgreSQL's own
// is not in it): on a shared machine
// the rates move with the load, the CPU each request costs much less.
// Then the same in PostgreSQL mode (one replica; wake-up also across two, held on one,
// sent through the other) when PostgreSQL is installed. Sends there commit one at a time
// with fsync, so (2) stores BENCH_PG_MESSAGES (default 20,000) through the API; an inbox
// page reads through indexes, so what is stored beyond it changes little.
// Clients of (1) are raw TCP sockets in this process (no client pool in the figure).
// Needs wrk for (2). Run: bun bench/inbox.ts   (BENCH_MESSAGES, BENCH_SECONDS to scale; BENCH_ONLY=sqlite or pg for one mode)
import { readFileSync } from 'node:fs'
import { alternate, fmt, hasWrk, startBaseline, startMuster, startPg, wrk, type LoadResult, type Proc } from './lib'

const AGENTS = 200
const SEQUENTIAL_ROUNDS = 5 // 1,000 one-at-a-time samples
const BROADCAST_ROUNDS = 5
const STORED = Number(process.env.BENCH_MESSAGES ?? 100_000)
const PG_STORED = Number(process.env.BENCH_PG_MESSAGES ?? 20_000)
const NAMES = 100
const SECONDS = Number(process.env.BENCH_SECONDS ?? 5)
const TARGET_WAKE_P99_MS = 10
const TARGET_READ_RATIO = 0.5
const ONLY = process.env.BENCH_ONLY ?? ''

const BASELINE = `
// Held inbox reads by token, answered by a POST naming their recipients: the same
// requests as Muster's, with nothing stored.
const held = new Map()
let id = 0
const s = Bun.serve({ hostname: '127.0.0.1', port: 0, idleTimeout: 120, async fetch(req) {
  const url = new URL(req.url)
  if (req.method === 'GET' && url.pathname === '/api/inbox') {
    const name = req.headers.get('x-instance-token')
    return new Promise((resolve) => {
      const list = held.get(name) ?? []
      list.push((body) => resolve(new Response(body, { headers: { 'content-type': 'application/json' } })))
      held.set(name, list)
    })
  }
  if (req.method === 'POST' && url.pathname === '/api/messages') {
    const m = { ...(await req.json()), id: ++id }
    const body = JSON.stringify({ messages: [m], cursor: m.id })
    for (const name of m.to[0] === '*' ? [...held.keys()] : m.to) {
      for (const answer of held.get(name) ?? []) answer(body)
      held.delete(name)
    }
    return Response.json(m, { status: 201 })
  }
  if (req.method === 'POST' && url.pathname === '/api/instances/register') {
    const { name } = await req.json()
    return Response.json({ token: name })
  }
  return new Response('hello world')
} })
console.log('baseline on http://127.0.0.1:' + s.port + ',')
`

const json = (method: string, body: unknown, headers: Record<string, string> = {}): RequestInit => ({
  method,
  headers: { 'content-type': 'application/json', ...headers },
  body: JSON.stringify(body),
})

async function post(url: string, body: unknown, expected: number, headers: Record<string, string> = {}): Promise<any> {
  const r = await fetch(url, json('POST', body, headers))
  const text = await r.text()
  if (r.status !== expected) throw new Error(`POST ${url}: ${r.status} ${text}`)
  return JSON.parse(text)
}

const pct = (sorted: number[], p: number) => sorted[Math.min(sorted.length - 1, Math.floor(sorted.length * p))]!
const summary = (xs: number[]) => {
  const s = [...xs].sort((a, b) => a - b)
  return { p50: pct(s, 0.5), p99: pct(s, 0.99), max: s[s.length - 1]!, n: s.length }
}
const ms = (x: number) => `${x.toFixed(2)} ms`

/** User + system CPU time a process has used so far, in µs (Linux /proc, 100 ticks/s). */
const cpuUs = (pid: number) => {
  const stat = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1]!.split(' ')
  return (Number(stat[11]) + Number(stat[12])) * 10_000
}

// ---- (1) wake-up --------------------------------------------------------------

interface Held {
  /** Resolves with the time the answer's first bytes came. */
  answered: Promise<number>
  /** Everything received (checked for the message's id). */
  text(): string
  close(): void
}

/** One raw socket holding `GET /api/inbox?after=&wait=30s` as `token`. */
async function hold(url: string, token: string, after: number): Promise<Held> {
  const { hostname, port } = new URL(url)
  let resolve!: (at: number) => void
  const answered = new Promise<number>((r) => (resolve = r))
  let received = ''
  const socket = await Bun.connect({
    hostname,
    port: Number(port),
    socket: {
      data(_s, chunk) {
        if (!received) resolve(performance.now())
        received += chunk.toString()
      },
    },
  })
  socket.write(`GET /api/inbox?after=${after}&wait=30s HTTP/1.1\r\nHost: ${hostname}\r\nX-Instance-Token: ${token}\r\n\r\n`)
  return { answered, text: () => received, close: () => socket.end() }
}

/** Every agent holds an inbox read; resolves once they have had time to reach their wait. */
async function holdAll(url: string, tokens: string[], after: number): Promise<Held[]> {
  const held = await Promise.all(tokens.map((t) => hold(url, t, after)))
  await Bun.sleep(1000)
  const early = await Promise.race([Promise.any(held.map((h) => h.answered)).then(() => true), Bun.sleep(0).then(() => false)])
  if (early) throw new Error(`a held inbox read was answered before any send: ${held.find((h) => h.text())!.text().slice(0, 300)}`)
  return held
}

function check(h: Held, id: number): void {
  const text = h.text()
  if (!/^HTTP\/1\.1 200/.test(text) || !text.includes(`"id":${id}`)) throw new Error(`held read not answered with message ${id}: ${text.slice(0, 300)}`)
}

interface Wake {
  one: ReturnType<typeof summary>
  /** Each send's own 201, one at a time. */
  sendOne: ReturnType<typeof summary>
  /** Server CPU per send one at a time (the send, the wake-up, the woken read). */
  cpuOne: number
  broadcast: ReturnType<typeof summary>
  /** Per broadcast round: until the last of the 200 answers came. */
  broadcastAll: ReturnType<typeof summary>
  /** Server CPU per broadcast round, divided by the answers. */
  cpuWoken: number
}

/** `holder`: where the agents wait; `sender`: where messages are sent (another replica, or the same server). */
async function wakeUp(holder: Proc, sender: Proc, prefix: string): Promise<Wake> {
  const pids = [...new Set([holder.pid, sender.pid])]
  const cpu = () => pids.reduce((n, pid) => n + cpuUs(pid), 0)
  const tokens: string[] = []
  for (let i = 0; i < AGENTS; i++) tokens.push((await post(`${sender.url}/api/instances/register`, { name: `${prefix}-${i}` }, 200)).token)
  let after = (await post(`${sender.url}/api/messages`, { to: ['nobody'], subject: 'start' }, 201)).id as number
  const one: number[] = []
  const sendOne: number[] = []
  let cpuOne = 0
  for (let round = 0; round < SEQUENTIAL_ROUNDS; round++) {
    const held = await holdAll(holder.url, tokens, after)
    const c0 = cpu()
    for (let i = 0; i < AGENTS; i++) {
      const t0 = performance.now()
      const m = await post(`${sender.url}/api/messages`, { to: [`${prefix}-${i}`], subject: `ping ${round}`, body: 'wake up' }, 201)
      sendOne.push(performance.now() - t0)
      one.push((await held[i]!.answered) - t0)
      check(held[i]!, m.id)
      after = m.id
    }
    cpuOne += cpu() - c0
    held.forEach((h) => h.close())
  }
  const broadcast: number[] = []
  const broadcastAll: number[] = []
  let cpuWoken = 0
  for (let round = 0; round < BROADCAST_ROUNDS; round++) {
    const held = await holdAll(holder.url, tokens, after)
    const c0 = cpu()
    const t0 = performance.now()
    const m = await post(`${sender.url}/api/messages`, { to: ['*'], subject: `all ${round}`, body: 'everyone' }, 201)
    const at = await Promise.all(held.map((h) => h.answered))
    cpuWoken += cpu() - c0
    held.forEach((h) => check(h, m.id))
    broadcast.push(...at.map((x) => x - t0))
    broadcastAll.push(Math.max(...at) - t0)
    after = m.id
    held.forEach((h) => h.close())
    await Bun.sleep(200)
  }
  return {
    one: summary(one),
    sendOne: summary(sendOne),
    cpuOne: cpuOne / (SEQUENTIAL_ROUNDS * AGENTS),
    broadcast: summary(broadcast),
    broadcastAll: summary(broadcastAll),
    cpuWoken: cpuWoken / (BROADCAST_ROUNDS * AGENTS),
  }
}

/** `base`: the baseline's figures, for the ratios; the baseline's own CPU is below what /proc resolves (10 ms ticks). */
function printWake(name: string, w: Wake, base?: Wake): void {
  const vs = (x: number, b?: number) => (b ? `  (${(x / b).toFixed(1)}x baseline)` : '')
  const us = (x: number) => (base ? `   server CPU ${x.toFixed(0)} µs` : '')
  console.log(`${name}`)
  console.log(
    `  one at a time (${w.one.n}):   p50 ${ms(w.one.p50)}   p99 ${ms(w.one.p99)}${vs(w.one.p99, base?.one.p99)}   max ${ms(w.one.max)}   ` +
      `send's own 201: p50 ${ms(w.sendOne.p50)} p99 ${ms(w.sendOne.p99)}${us(w.cpuOne)}${base ? ' per send' : ''}`,
  )
  console.log(
    `  broadcast, each (${w.broadcast.n}): p50 ${ms(w.broadcast.p50)}   p99 ${ms(w.broadcast.p99)}${vs(w.broadcast.p99, base?.broadcast.p99)}   ` +
      `all ${AGENTS} answered: median ${ms(w.broadcastAll.p50)}, worst ${ms(w.broadcastAll.max)}${us(w.cpuWoken)}${base ? ' per woken read' : ''}`,
  )
}

const verdict = (ok: boolean) => (ok ? 'met' : 'NOT MET')

// ---- (2) read throughput with many stored -------------------------------------

const stateValue = JSON.stringify({ owner: 'agent-7', description: 'x'.repeat(900), tags: ['bench', 'state', 'kv'], updated: '2026-01-01T00:00:00Z' })
const WORDS = ['schema', 'rebase', 'migration', 'review', 'deploy', 'parser', 'tests', 'users', 'cache', 'release', 'lint', 'docs']
const bodyOf = (i: number) => `${WORDS[i % WORDS.length]} ${WORDS[(i * 7) % WORDS.length]} ${i}: ` + 'please take a look when you have a moment. '.repeat(3)

/** `count` messages through the API, 64 at a time: to one of NAMES names, every 100th to "*". Returns sends/s. */
async function store(url: string, tokens: string[], count: number): Promise<number> {
  const CONCURRENT = 64
  let next = 0
  const t0 = performance.now()
  await Promise.all(
    Array.from({ length: CONCURRENT }, async () => {
      for (let i = next++; i < count; i = next++) {
        const to = i % 100 === 99 ? ['*'] : [`reader-${i % NAMES}`]
        await post(`${url}/api/messages`, { to, subject: `${WORDS[i % WORDS.length]} ${i}`, body: bodyOf(i) }, 201, { 'x-instance-token': tokens[(i + 1) % NAMES]! })
      }
    }),
  )
  return count / ((performance.now() - t0) / 1000)
}

type Target = 'inbox10' | 'inboxEmpty' | 'state' | 'stateToken' | 'hello'

interface Reads {
  stored: number
  insertRate: number
  /** Server CPU per send while storing, µs. */
  cpuSend: number
  load: Partial<Record<Target, LoadResult>>
  /** Server CPU per request, µs, by target (Muster's only). */
  cpu: Partial<Record<Target, number>>
  returned: number
}

async function reads(m: Proc, baseline: Proc | null, stored: number): Promise<Reads> {
  const tokens: string[] = []
  for (let i = 0; i < NAMES; i++) tokens.push((await post(`${m.url}/api/instances/register`, { name: `reader-${i}` }, 200)).token)
  const c0 = cpuUs(m.pid)
  const insertRate = await store(m.url, tokens, stored)
  const cpuSend = (cpuUs(m.pid) - c0) / stored
  await Promise.all(Array.from({ length: 1000 }, (_, i) => fetch(`${m.url}/api/state/bench/${i}`, { method: 'PUT', body: stateValue })))
  // reader-7's whole inbox once (this also marks it delivered, as an agent's first read would).
  const token = tokens[7]!
  const ids: number[] = []
  for (let after = 0; ; ) {
    const page = (await (await fetch(`${m.url}/api/inbox?after=${after}&limit=1000`, { headers: { 'x-instance-token': token } })).json()) as { messages: { id: number }[]; cursor: number }
    if (!page.messages.length) break
    ids.push(...page.messages.map((x) => x.id))
    after = page.cursor
  }
  const recent = ids[ids.length - 11]!
  const withToken = `wrk.headers["X-Instance-Token"] = "${token}"`
  const stateLua = `request = function() return wrk.format("GET", "/api/state/bench/" .. math.random(0, 999)) end`
  const check10 = (await (await fetch(`${m.url}/api/inbox?after=${recent}`, { headers: { 'x-instance-token': token } })).json()) as { messages: unknown[] }
  const targets: [Target, { url: string; lua: string }][] = [
    ['inbox10', { url: `${m.url}/api/inbox?after=${recent}`, lua: withToken }],
    ['inboxEmpty', { url: `${m.url}/api/inbox?after=${ids[ids.length - 1]}`, lua: withToken }],
    ['state', { url: m.url, lua: stateLua }],
    ['stateToken', { url: m.url, lua: `${withToken}\n${stateLua}` }],
  ]
  const all = baseline ? [...targets, ['hello', { url: baseline.url, lua: '' }] as [Target, { url: string; lua: string }]] : targets
  const results = await alternate(all.map(([, t]) => t), { seconds: SECONDS, slices: SECONDS, threads: 1, warmup: 1 })
  const load = Object.fromEntries(all.map(([name], i) => [name, results[i]!]))
  // CPU per request, one target at a time (the rates above alternate; this needs one target per reading).
  const cpu: Partial<Record<Target, number>> = {}
  for (const [name, t] of targets) {
    const c0 = cpuUs(m.pid)
    const r = await wrk(t.url, t.lua, { seconds: 3, threads: 1 })
    cpu[name] = (cpuUs(m.pid) - c0) / (r.rps * 3)
  }
  return { stored, insertRate, cpuSend, load, cpu, returned: check10.messages.length }
}

function printReads(name: string, r: Reads): void {
  const { inbox10, inboxEmpty, state, stateToken, hello } = r.load as Record<Target, LoadResult>
  const ratio = (a: LoadResult, b: LoadResult) => `${((a.rps / b.rps) * 100).toFixed(1)}%`
  const cpu = (t: Target) => `server CPU ${r.cpu[t]!.toFixed(0).padStart(4)} µs/request`
  const cpuRatio = (a: Target, b: Target) => `${((r.cpu[b]! / r.cpu[a]!) * 100).toFixed(1)}%`
  console.log(`${name}: ${r.stored} messages stored at ${r.insertRate.toFixed(0)} sends/s (64 concurrent POSTs, server CPU ${r.cpuSend.toFixed(0)} µs per send); wrk -t1 -c32, ${SECONDS} s each in 1 s slices`)
  if (hello) console.log(`  baseline GET /                     ${fmt(hello)}`)
  console.log(`  GET /api/state/{key} (~1 KB)       ${fmt(state)}   ${cpu('state')}${hello ? `   ${ratio(state, hello)} of baseline` : ''}`)
  console.log(`  the same with X-Instance-Token     ${fmt(stateToken)}   ${cpu('stateToken')}`)
  console.log(
    `  GET /api/inbox?after=recent        ${fmt(inbox10)}   ${cpu('inbox10')}   ${r.returned} messages each; ${ratio(inbox10, state)} of the state GET ` +
      `(target >= ${TARGET_READ_RATIO * 100}%: ${verdict(inbox10.rps / state.rps >= TARGET_READ_RATIO)}; by CPU ${cpuRatio('inbox10', 'state')}; ` +
      `of the state GET with a token: ${ratio(inbox10, stateToken)}, by CPU ${cpuRatio('inbox10', 'stateToken')})`,
  )
  console.log(`  GET /api/inbox?after=cursor        ${fmt(inboxEmpty)}   ${cpu('inboxEmpty')}   empty page; ${ratio(inboxEmpty, state)} of the state GET, by CPU ${cpuRatio('inboxEmpty', 'state')}`)
}

// ---- run ------------------------------------------------------------------------

console.log(`(1) wake-up: ${AGENTS} agents each holding GET /api/inbox?wait=30s; latency = send written -> held answer's first bytes (includes the send's commit)`)
const baseline = await startBaseline(BASELINE)
let base: Wake
try {
  base = await wakeUp(baseline, baseline, 'agent')
  printWake('bare Bun.serve (in-memory, nothing stored)', base)
} catch (err) {
  await baseline.stop()
  throw err
}
const muster = ONLY === 'pg' ? null : await startMuster(['--log-level', 'warn'])
if (muster) try {
  const wake = await wakeUp(muster, muster, 'agent')
  printWake('Muster (SQLite)', wake, base)
  console.log(
    `  target p99 < ${TARGET_WAKE_P99_MS} ms with ${AGENTS} waiting: one at a time ${verdict(wake.one.p99 < TARGET_WAKE_P99_MS)}, broadcast ${verdict(wake.broadcast.p99 < TARGET_WAKE_P99_MS)}`,
  )
  if (!hasWrk()) console.log('(2) skipped: needs wrk (apt-get install wrk)')
  else {
    console.log(`(2) inbox read throughput`)
    printReads('Muster (SQLite)', await reads(muster, baseline, STORED))
  }
} finally {
  await muster.stop()
}
await baseline.stop()

const pg = ONLY === 'sqlite' ? null : await startPg()
if (!pg) console.log(`PostgreSQL mode: skipped (${ONLY === 'sqlite' ? 'BENCH_ONLY=sqlite' : 'PostgreSQL is not installed'})`)
else {
  try {
    const one = await pg.replicas(1, ['--log-level', 'warn'])
    try {
      const wake = await wakeUp(one.procs[0]!, one.procs[0]!, 'agent')
      printWake('PostgreSQL x1', wake, base)
      console.log(`  target p99 < ${TARGET_WAKE_P99_MS} ms: one at a time ${verdict(wake.one.p99 < TARGET_WAKE_P99_MS)}, broadcast ${verdict(wake.broadcast.p99 < TARGET_WAKE_P99_MS)}`)
      if (hasWrk()) printReads('PostgreSQL x1', await reads(one.procs[0]!, null, PG_STORED))
    } finally {
      await one.stop()
    }
    const two = await pg.replicas(2, ['--log-level', 'warn'])
    try {
      printWake('PostgreSQL x2, held on replica B, sent through replica A (the feed carries the wake-up)', await wakeUp(two.procs[1]!, two.procs[0]!, 'agent'), base)
    } finally {
      await two.stop()
    }
  } finally {
    await pg.stop()
  }
}

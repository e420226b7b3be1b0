// What an agent waits on in coordination, against its ceiling in the same run: lock
// acquire + release round trips (1 client; 32 clients on their own locks), task
// enqueue -> claim -> ack cycles (1 worker; 32 workers), and the latency of a claim with
// 10,000 tasks ahead that the claimer cannot take. Servers: this checkout, optionally
// another one (a worktree of the commit before a change), and a bare Bun.serve in its own
// process answering the same requests (two per lock round trip, three per task cycle).
// A floor runs beside them: bench/coordination-floor.ts, the same rows in one bare
// transaction per request on Muster's schema (the lock and task lines only).
// They run in alternating slices, rotated each slice, so drift in a shared machine's speed
// affects them alike. Each line gives every server's figure, its share of bare and of the floor.
// Run: bun bench/coordination-ab.ts [other checkout]   (BENCH_ONLY=claim: only matching figures)
import { resolve } from 'node:path'
import { startBaseline, startMuster, startReference, type Proc, jsonCall as call, loops } from './lib'

const other = process.argv[2]
const SLICES = Number(process.env.BENCH_SLICES ?? 6)
const SLICE_S = Number(process.env.BENCH_SLICE_SECONDS ?? 2)
const ONLY = new RegExp(process.env.BENCH_ONLY ?? '')
const DEPTH = 10_000
const SAMPLES = Number(process.env.BENCH_SAMPLES ?? 1800)

interface Server {
  name: string
  proc: Proc
  bare: boolean
  floor?: boolean
  tokens: string[]
}

const servers: Server[] = []
if (other) servers.push({ name: 'A (other)', proc: await startMuster([], resolve(other)), bare: false, tokens: [] })
servers.push({ name: 'B (this)', proc: await startMuster(), bare: false, tokens: [] })
servers.push({ name: 'floor', proc: await startReference('coordination-floor'), bare: false, floor: true, tokens: [] })
servers.push({ name: 'bare', proc: await startBaseline(), bare: true, tokens: [] })
for (const s of servers)
  if (!s.bare) s.tokens = await Promise.all(Array.from({ length: 32 }, (_, i) => call(`${s.proc.url}/api/instances/register`, 'POST', { name: `ab-${i}` }).then((r) => r.token as string)))

/** Slice `i` runs the servers starting at a different one each time. */
const order = (i: number) => servers.map((_, n) => (n + i) % servers.length)

type Step = (s: Server, client: number) => Promise<void>
/** A bare round trip: the same number of requests, answered without any work. */
const bareRequests = (n: number) => async (s: Server) => {
  for (let i = 0; i < n; i++) await (await fetch(s.proc.url, { method: 'POST', headers: { 'content-type': 'application/json' }, body: '{}' })).text()
}

const lockStep = (name: (c: number) => string): Step => async (s, c) => {
  await call(`${s.proc.url}/api/locks/${name(c)}`, 'PUT', {}, s.tokens[c])
  await call(`${s.proc.url}/api/locks/${name(c)}`, 'DELETE', undefined, s.tokens[c])
}
const taskStep = (queue: string): Step => async (s, c) => {
  await call(`${s.proc.url}/api/queues/${queue}/tasks`, 'POST', { title: 'job', payload: { c } })
  const task = await call(`${s.proc.url}/api/queues/${queue}/claim`, 'POST', {}, s.tokens[c])
  if (task) await call(`${s.proc.url}/api/tasks/${task.id}/ack`, 'POST', { claim_id: task.claim_id, result: 'ok' }, s.tokens[c])
}

const LOOPS: Record<string, { clients: number; step: Step; bare: number }> = {
  'lock acquire+release, 1 client': { clients: 1, step: lockStep(() => 'solo'), bare: 2 },
  'lock acquire+release, 32 clients, own locks': { clients: 32, step: lockStep((c) => `own/${c}`), bare: 2 },
  'task enqueue->claim->ack, 1 worker': { clients: 1, step: taskStep('one'), bare: 3 },
  'task enqueue->claim->ack, 32 workers': { clients: 32, step: taskStep('many'), bare: 3 },
}

const pct = (x: number, of: number) => `${((x / of) * 100).toFixed(1)}%`
const bareOf = () => servers.findIndex((s) => s.bare)
const musters = () => servers.filter((s) => !s.bare && !s.floor)

console.log(`${servers.map((s) => s.name).join(', ')}${other ? `; A = ${resolve(other)}` : ''}; ${SLICES} rotated slices of ${SLICE_S} s`)

for (const [label, loop] of Object.entries(LOOPS)) {
  if (!ONLY.test(label)) continue
  const sums = servers.map(() => 0)
  for (let i = 0; i < SLICES; i++)
    for (const n of order(i)) {
      const s = servers[n]
      const step = s.bare ? bareRequests(loop.bare) : loop.step
      sums[n] += await loops(loop.clients, SLICE_S, (c) => step(s, c))
    }
  const rates = sums.map((x) => x / SLICES)
  const bare = rates[bareOf()]
  const floor = rates[servers.findIndex((s) => s.floor)]
  const figures = servers.map((s, n) =>
    s.bare ? `bare ${bare.toFixed(0)}/s` : `${s.name[0]} ${rates[n].toFixed(0)}/s ${pct(rates[n], bare)}${s.floor ? '' : ` (${pct(rates[n], floor)} of floor)`}`,
  )
  console.log(`${label.padEnd(44)} ${figures.join('   ')}`)
}

/** A claim (timed) and its ack (untimed); on bare, one request timed. */
async function claimSample(s: Server): Promise<number> {
  const t0 = performance.now()
  if (s.bare) {
    await bareRequests(1)(s)
    return performance.now() - t0
  }
  const task = await call(`${s.proc.url}/api/queues/skip/claim`, 'POST', {}, s.tokens[0])
  const took = performance.now() - t0
  if (!task) throw new Error(`${s.name}: queue ran dry`)
  await call(`${s.proc.url}/api/tasks/${task.id}/ack`, 'POST', { claim_id: task.claim_id }, s.tokens[0])
  return took
}

async function fill(s: Server, n: number, extra: Record<string, unknown>): Promise<void> {
  for (let i = 0; i < n; i += 64)
    await Promise.all(Array.from({ length: Math.min(64, n - i) }, () => call(`${s.proc.url}/api/queues/skip/tasks`, 'POST', { title: 't', ...extra })))
}

if (ONLY.test('claim behind')) {
  // Every task ahead in claim order needs a capability the claimer lacks.
  for (const s of musters()) {
    await fill(s, DEPTH, { requires: ['gpu'], priority: 1 })
    await fill(s, SAMPLES + 100, {})
  }
  const samples: number[][] = servers.map(() => [])
  const per = Math.ceil(SAMPLES / (SLICES * 4))
  // The floor has no requires to skip: this line is Muster's and bare's.
  const sampled = (n: number) => !servers[n].floor
  for (let i = 0; i < SLICES * 4; i++) for (const n of order(i).filter(sampled)) for (let k = 0; k < per; k++) samples[n].push(await claimSample(servers[n]))
  const at = (xs: number[], p: number) => [...xs].sort((a, b) => a - b)[Math.min(xs.length - 1, Math.floor(xs.length * p))]
  const b = samples[bareOf()]
  const figures = servers.flatMap((s, n) =>
    s.floor ? [] : s.bare
      ? `bare p50 ${at(b, 0.5).toFixed(2)} p99 ${at(b, 0.99).toFixed(2)}`
      : `${s.name[0]} p50 ${at(samples[n], 0.5).toFixed(2)} p99 ${at(samples[n], 0.99).toFixed(2)} (+${(at(samples[n], 0.99) - at(b, 0.99)).toFixed(2)})`,
  )
  console.log(`claim behind ${DEPTH} it cannot take, ms`.padEnd(44) + ` ${figures.join('   ')}`)
}

for (const s of servers) await s.proc.stop()

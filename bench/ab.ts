// A/B: this checkout's server against another checkout's (e.g. a worktree of the commit
// before a change), in one invocation, in alternating slices (A B, B A, A B, ...), so
// drift in the machine's speed affects both alike. Figures: plain state GET and PUT under
// wrk; lock acquire + release round trips (1 client; 32 clients on their own locks);
// task enqueue -> claim -> ack cycles (1 worker; 32 workers). Each line ends with B's figure as a share of A's.
// Run: git worktree add /tmp/before <commit> && bun bench/ab.ts /tmp/before
// (the other checkout needs its node_modules: `ln -s $PWD/node_modules /tmp/before/`).
import { resolve } from 'node:path'
import { hasWrk, mergeSlices, startMuster, wrk, type LoadResult, type Proc, jsonCall as call, loops } from './lib'

const other = process.argv[2]
if (!other) throw new Error('usage: bun bench/ab.ts <other checkout>')
const SLICES = Number(process.env.BENCH_SLICES ?? 6)
const SLICE_S = Number(process.env.BENCH_SLICE_SECONDS ?? 2)
/** Only the figures whose label matches (e.g. BENCH_ONLY=lock). */
const ONLY = new RegExp(process.env.BENCH_ONLY ?? '')

const register = async (api: string, name: string) => (await call(`${api}/api/instances/register`, 'POST', { name })).token as string

type Loop = { clients: number; step: (server: Proc, tokens: string[], client: number) => Promise<void> }
const LOOPS: Record<string, Loop> = {
  'lock acquire+release, 1 client': {
    clients: 1,
    step: async (s, t) => {
      await call(`${s.url}/api/locks/solo`, 'PUT', {}, t[0])
      await call(`${s.url}/api/locks/solo`, 'DELETE', undefined, t[0])
    },
  },
  'lock acquire+release, 32 clients, own locks': {
    clients: 32,
    step: async (s, t, c) => {
      await call(`${s.url}/api/locks/own/${c}`, 'PUT', {}, t[c])
      await call(`${s.url}/api/locks/own/${c}`, 'DELETE', undefined, t[c])
    },
  },
  'task enqueue->claim->ack, 1 worker': { clients: 1, step: (s, t, c) => taskCycle(s, t, c, 'one') },
  'task enqueue->claim->ack, 32 workers': { clients: 32, step: (s, t, c) => taskCycle(s, t, c, 'many') },
}

async function taskCycle(s: Proc, t: string[], c: number, queue: string): Promise<void> {
  await call(`${s.url}/api/queues/${queue}/tasks`, 'POST', { title: 'job', payload: { c } })
  const task = await call(`${s.url}/api/queues/${queue}/claim`, 'POST', {}, t[c])
  if (task) await call(`${s.url}/api/tasks/${task.id}/ack`, 'POST', { claim_id: task.claim_id, result: 'ok' }, t[c])
}

const servers = [
  { name: 'A (other)', proc: await startMuster([], resolve(other)) },
  { name: 'B (this)', proc: await startMuster() },
]
const tokens = await Promise.all(servers.map((s) => Promise.all(Array.from({ length: 32 }, (_, i) => register(s.proc.url, `ab-${i}`)))))
const share = (a: number, b: number) => `${((b / a) * 100).toFixed(1)}%`
/** A, B in even slices and B, A in odd ones: whichever runs second in a pair would otherwise gain (a warmer client, a settled CPU). */
const order = (slice: number) => (slice % 2 ? [1, 0] : [0, 1])

console.log(`A = ${resolve(other)}, B = this checkout; ${SLICES} alternating slices of ${SLICE_S} s each`)

if (!hasWrk()) console.log('wrk not installed (Debian package wrk): state GET/PUT skipped')
else if (ONLY.test('state GET') || ONLY.test('state PUT')) {
  for (const s of servers) await call(`${s.proc.url}/api/state/bench/key`, 'PUT', { value: 'x'.repeat(200) })
  const get = `wrk.method = "GET"`
  const put = `wrk.method = "PUT"; wrk.body = '{"step":1,"note":"${'x'.repeat(180)}"}'; wrk.headers["Content-Type"] = "application/json"`
  for (const [label, lua] of [['state GET', get], ['state PUT', put]]) {
    if (!ONLY.test(label)) continue
    const targets = servers.map((s) => ({ url: `${s.proc.url}/api/state/bench/key`, lua }))
    for (const t of targets) await wrk(t.url, t.lua, { seconds: 1 })
    const runs: LoadResult[][] = [[], []]
    for (let i = 0; i < SLICES; i++) for (const n of order(i)) runs[n].push(await wrk(targets[n].url, targets[n].lua, { seconds: SLICE_S }))
    const [a, b] = runs.map(mergeSlices)
    console.log(`${label.padEnd(44)} A ${a.rps.toFixed(0).padStart(7)}/s p99 ${a.p99ms.toFixed(2)} ms   B ${b.rps.toFixed(0).padStart(7)}/s p99 ${b.p99ms.toFixed(2)} ms   B/A ${share(a.rps, b.rps)}`)
  }
}

for (const [label, loop] of Object.entries(LOOPS)) {
  if (!ONLY.test(label)) continue
  const sums = [0, 0]
  for (let i = 0; i < SLICES; i++)
    for (const n of order(i)) sums[n] += await loops(loop.clients, SLICE_S, (c) => loop.step(servers[n].proc, tokens[n], c))
  const [a, b] = sums.map((x) => x / SLICES)
  console.log(`${label.padEnd(44)} A ${a.toFixed(0).padStart(7)}/s   B ${b.toFixed(0).padStart(7)}/s   B/A ${share(a, b)}`)
}
for (const s of servers) await s.proc.stop()

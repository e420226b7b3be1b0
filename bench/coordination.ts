// Coordination throughput: lock acquire+release round trips per second (one
// client; 32 clients contending for one mutex; 32 clients on their own locks),
// reservation grant+release round trips per second with 1,000 reservations held
// in the project, and the pre-commit check under wrk. The same client loops run
// against a bare Bun.serve in the same invocation (a round trip there is the same
// two requests), so each figure has its ceiling beside it.
import { fmt, hasWrk, startBaseline, startMuster, wrk, type Proc } from './lib'

const SECONDS = Number(process.env.BENCH_SECONDS ?? 5)
const HELD = 1000
const CLIENTS = 32

type Step = (client: number, i: number) => Promise<void>

/** `clients` loops of `step` for SECONDS; returns completed steps per second. */
async function loops(clients: number, step: Step): Promise<number> {
  const end = Date.now() + SECONDS * 1000
  let done = 0
  const t0 = performance.now()
  await Promise.all(
    Array.from({ length: clients }, async (_, c) => {
      for (let i = 0; Date.now() < end; i++) {
        await step(c, i)
        done++
      }
    }),
  )
  return done / ((performance.now() - t0) / 1000)
}

async function ok(res: Promise<Response>, expected = 200): Promise<void> {
  const r = await res
  await r.arrayBuffer()
  if (r.status !== expected) throw new Error(`unexpected ${r.status}`)
}

const json = (method: string, body?: unknown, headers: Record<string, string> = {}): RequestInit => ({
  method,
  headers: { 'content-type': 'application/json', ...headers },
  body: body === undefined ? undefined : JSON.stringify(body),
})

async function register(m: Proc, name: string): Promise<Record<string, string>> {
  const r = await (await fetch(`${m.url}/api/instances/register`, json('POST', { name }))).json()
  return { 'x-instance-token': r.token }
}

// The ceiling: the same loops of two requests each against Bun.serve.
const baseline = await startBaseline()
const pair: Step = async () => {
  await ok(fetch(baseline.url, json('PUT', {})))
  await ok(fetch(baseline.url, json('DELETE')))
}
const base1 = await loops(1, pair)
const base32 = await loops(CLIENTS, pair)
await baseline.stop()

const m = await startMuster()
const agents = await Promise.all(Array.from({ length: CLIENTS }, (_, i) => register(m, `bench-${i}`)))
const cycle = (name: (c: number) => string, body: unknown): Step => async (c) => {
  await ok(fetch(`${m.url}/api/locks/${name(c)}`, json('PUT', body, agents[c])))
  await ok(fetch(`${m.url}/api/locks/${name(c)}`, json('DELETE', undefined, agents[c])))
}
const lock1 = await loops(1, cycle(() => 'solo', {}))
const lockContended = await loops(CLIENTS, cycle(() => 'contended', { wait_ms: 60_000 }))
const lockOwn = await loops(CLIENTS, cycle((c) => `own/${c}`, {}))

// 1,000 held reservations in one project, spread over the 32 agents.
await Promise.all(
  Array.from({ length: HELD }, (_, i) =>
    ok(fetch(`${m.url}/api/reservations`, json('POST', { project: 'big', paths: [`held/${i}/**`] }, agents[i % CLIENTS])), 201),
  ),
)
const reserveStep: Step = async (c, i) => {
  const r = await fetch(`${m.url}/api/reservations`, json('POST', { project: 'big', paths: [`free/${c}/${i}/*.ts`] }, agents[c]))
  if (r.status !== 201) throw new Error(`reserve: ${r.status} ${await r.text()}`)
  const { id } = await r.json()
  await ok(fetch(`${m.url}/api/reservations/${id}`, json('DELETE', undefined, agents[c])))
}
const reserve1 = await loops(1, reserveStep)
const reserve32 = await loops(CLIENTS, reserveStep)
let check: string | null = null
if (hasWrk()) {
  const body = JSON.stringify({ project: 'big', paths: ['free/x.ts', 'src/**/*.ts', 'docs/readme.md'] }).replace(/"/g, '\\"')
  const r = await wrk(
    `${m.url}/api/reservations/check`,
    `wrk.method = "POST"; wrk.body = "${body}"; wrk.headers["Content-Type"] = "application/json"`,
    { seconds: SECONDS },
  )
  check = fmt(r)
}
const stillHeld = (await (await fetch(`${m.url}/api/reservations?project=big`)).json()).length
await m.stop()

const ratio = (x: number, b: number) => `${((x / b) * 100).toFixed(1)}% of baseline`
console.log(`${SECONDS} s per figure; a round trip is two requests (acquire + release, grant + release); clients are fetch loops in one process`)
console.log(`baseline Bun.serve, 2 requests  1 client: ${base1.toFixed(0)}/s   ${CLIENTS} clients: ${base32.toFixed(0)}/s`)
console.log(`lock, 1 client                  ${lock1.toFixed(0).padStart(6)} round trips/s   ${ratio(lock1, base1)}`)
console.log(`lock, ${CLIENTS} clients, one mutex      ${lockContended.toFixed(0).padStart(6)} round trips/s   ${ratio(lockContended, base32)} (every grant waits for the previous release)`)
console.log(`lock, ${CLIENTS} clients, own locks      ${lockOwn.toFixed(0).padStart(6)} round trips/s   ${ratio(lockOwn, base32)}`)
console.log(`reservation, ${HELD} held, 1 client  ${reserve1.toFixed(0).padStart(6)} grants/s   ${ratio(reserve1, base1)}`)
console.log(`reservation, ${HELD} held, ${CLIENTS} clients ${reserve32.toFixed(0).padStart(6)} grants/s   ${ratio(reserve32, base32)}`)
if (check) console.log(`check (3 paths vs ${HELD} held), wrk 32 conn  ${check}`)
if (stillHeld !== HELD) throw new Error(`expected ${HELD} reservations held at the end, found ${stillHeld}`)

// Path reservations at scale: 10,000 reservations held by 50 instances in one project
// (one file each, like src/mod123/file45.ts, and one in a hundred a glob like
// src/mod7/gen3/**), then the pre-commit check under wrk and grant + release round
// trips from fetch loops. The same loads run against a bare Bun.serve in the same
// invocation, so each figure has its ceiling beside it. BENCH_HELD changes the count.
// Then the reliability probe's star-heavy requests (refused by the pattern limits) with
// /health sampled meanwhile, and the slowest pair decisions the step cap allows.
import { fmt, hasWrk, startBaseline, startMuster, wrk, type LoadResult, type Proc } from './lib'
import { MAX_STEPS, overlapCost } from '../lib/overlap'

const SECONDS = Number(process.env.BENCH_SECONDS ?? 5)
const HELD = Number(process.env.BENCH_HELD ?? 10_000)
const AGENTS = 50
const MODULES = 500
const CLIENTS = 32

const json = (method: string, body?: unknown, headers: Record<string, string> = {}): RequestInit => ({
  method,
  headers: { 'content-type': 'application/json', ...headers },
  body: body === undefined ? undefined : JSON.stringify(body),
})

async function expect(res: Promise<Response>, status: number): Promise<Response> {
  const r = await res
  if (r.status !== status) throw new Error(`expected ${status}, got ${r.status}: ${await r.text()}`)
  return r
}

/** `clients` loops of `step` for SECONDS; completed steps per second. */
async function loops(clients: number, step: (client: number, i: number) => Promise<void>): Promise<number> {
  const end = Date.now() + SECONDS * 1000
  let done = 0
  const t0 = performance.now()
  await Promise.all(
    Array.from({ length: clients }, async (_, c) => {
      for (let i = 0; Date.now() < end; i++) await step(c, i), done++
    }),
  )
  return done / ((performance.now() - t0) / 1000)
}

/**
 * 32 sessions each sending one check every PACE_MS (as agents editing at once do), for SECONDS:
 * the latency of each answer, not of a queue that wrk's closed loop keeps full.
 */
const PACE_MS = 20
async function paced(url: string, body: unknown): Promise<{ p50: number; p99: number; n: number }> {
  const lat: number[] = []
  const end = Date.now() + SECONDS * 1000
  await Promise.all(
    Array.from({ length: CLIENTS }, async (_, c) => {
      await Bun.sleep((c * PACE_MS) / CLIENTS)
      for (let next = performance.now(); Date.now() < end; ) {
        const t0 = performance.now()
        const r = await fetch(url, json('POST', body))
        await r.arrayBuffer()
        if (r.status !== 200) throw new Error(`paced check: ${r.status}`)
        lat.push(performance.now() - t0)
        next += PACE_MS
        if (next > performance.now()) await Bun.sleep(next - performance.now())
      }
    }),
  )
  lat.sort((x, y) => x - y)
  return { p50: lat[Math.floor(lat.length * 0.5)], p99: lat[Math.floor(lat.length * 0.99)], n: lat.length }
}
const pacedFmt = (r: { p50: number; p99: number; n: number }) =>
  `${(r.n / SECONDS).toFixed(0).padStart(8)} req/s   p50 ${r.p50.toFixed(2)} ms   p99 ${r.p99.toFixed(2)} ms`

/** The server's own histogram of check durations (Prometheus buckets, cumulative): le → count. */
async function checkHistogram(p: Proc): Promise<Map<string, number>> {
  const text = await (await fetch(`${p.url}/metrics`)).text()
  const out = new Map<string, number>()
  for (const m of text.matchAll(/^muster_http_request_duration_seconds_bucket\{([^}]*)\} (\d+)/gm)) {
    if (!m[1].includes('route="/api/reservations/check"') || !m[1].includes('status="200"')) continue
    const le = /le="([^"]+)"/.exec(m[1])![1]
    out.set(le, (out.get(le) ?? 0) + Number(m[2]))
  }
  return out
}

/** Between two snapshots: the bucket bound under which 99% of the checks were served, and the share within 5 ms. */
function serverP99(a: Map<string, number>, b: Map<string, number>): { le: string; within5: number } {
  const total = (b.get('+Inf') ?? 0) - (a.get('+Inf') ?? 0)
  const rows = [...b.keys()].map((le) => ({ le, n: (b.get(le) ?? 0) - (a.get(le) ?? 0) }))
  const p99 = rows.find((r) => r.n >= total * 0.99)?.le ?? '+Inf'
  const within5 = (rows.find((r) => r.le === '0.005')?.n ?? 0) / total
  return { le: p99, within5 }
}

/** Reservation i: module i % MODULES (owned by agent i % AGENTS, so no two agents' paths meet). */
const heldPath = (i: number) => {
  const mod = i % MODULES
  const n = Math.floor(i / MODULES)
  return i % 100 === 99 ? `src/mod${mod}/gen${n}/**` : `src/mod${mod}/file${n}.ts`
}

const CHECK = { project: 'big', paths: ['src/mod7/new.ts', 'src/mod123/other/x.ts', 'lib/util.ts'] }
const lua = (body: unknown) =>
  `wrk.method = "POST"; wrk.body = "${JSON.stringify(body).replace(/"/g, '\\"')}"; wrk.headers["Content-Type"] = "application/json"`

// The ceiling: the same wrk load and the same two-request round trips against Bun.serve.
const baseline = await startBaseline()
let baseCheck: LoadResult | null = null
let baseOne: LoadResult | null = null
if (hasWrk()) {
  baseCheck = await wrk(baseline.url, lua(CHECK), { seconds: SECONDS, warmup: 1 })
  baseOne = await wrk(baseline.url, lua(CHECK), { seconds: SECONDS, connections: 1, threads: 1 })
}
const basePaced = await paced(baseline.url, CHECK)
const basePair = async () => {
  await (await fetch(baseline.url, json('POST', { project: 'big', paths: ['x'] }))).arrayBuffer()
  await (await fetch(baseline.url, json('DELETE'))).arrayBuffer()
}
const base1 = await loops(1, basePair)
const base32 = await loops(CLIENTS, basePair)
await baseline.stop()

const m: Proc = await startMuster()
const agents = await Promise.all(
  Array.from({ length: AGENTS }, async (_, i) => {
    const r = await (await expect(fetch(`${m.url}/api/instances/register`, json('POST', { name: `bench-${i}` })), 200)).json()
    return { 'x-instance-token': r.token as string }
  }),
)
const seed0 = performance.now()
// Each agent grants its own reservations one after another; the 50 agents run at once.
await Promise.all(
  agents.map(async (token, a) => {
    for (let i = a; i < HELD; i += AGENTS)
      await (await expect(fetch(`${m.url}/api/reservations`, json('POST', { project: 'big', paths: [heldPath(i)] }, token)), 201)).arrayBuffer()
  }),
)
const seedRate = HELD / ((performance.now() - seed0) / 1000)

let check: LoadResult | null = null
let checkOne: LoadResult | null = null
if (hasWrk()) {
  const first = await fetch(`${m.url}/api/reservations/check`, json('POST', CHECK))
  if (first.status !== 200) throw new Error(`check: ${first.status} ${await first.text()}`)
  check = await wrk(`${m.url}/api/reservations/check`, lua(CHECK), { seconds: SECONDS, warmup: 1 })
  // One connection: the time one decision takes, without waiting behind 31 others.
  checkOne = await wrk(`${m.url}/api/reservations/check`, lua(CHECK), { seconds: SECONDS, connections: 1, threads: 1 })
}
const before = await checkHistogram(m)
const checkPaced = await paced(`${m.url}/api/reservations/check`, CHECK)
const served = serverP99(before, await checkHistogram(m))
const grant = (c: number, i: number) => async () => {
  const r = await expect(fetch(`${m.url}/api/reservations`, json('POST', { project: 'big', paths: [`src/mod${c}/wip/${i}.ts`] }, agents[c])), 201)
  const { id } = await r.json()
  await (await expect(fetch(`${m.url}/api/reservations/${id}`, json('DELETE', undefined, agents[c])), 200)).arrayBuffer()
}
const grant1 = await loops(1, (c, i) => grant(c, i)())
const grant32 = await loops(CLIENTS, (c, i) => grant(c, i)())
const stillHeld = (await (await fetch(`${m.url}/api/reservations?project=big`)).json()).length

// The probe (issue 38): 100 patterns of `*a` x 512 reserved, then checked with 100 `*b` x 512 paths.
const health: number[] = []
let probing = true
const sampler = (async () => {
  while (probing) {
    const t0 = performance.now()
    await (await fetch(`${m.url}/health`)).arrayBuffer()
    health.push(performance.now() - t0)
    await Bun.sleep(5)
  }
})()
/** Five tries: the status and the slowest answer. */
const timed = async (body: unknown, headers: Record<string, string> = {}, path = '/api/reservations') => {
  let out = { status: 0, ms: 0 }
  for (let i = 0; i < 5; i++) {
    const t0 = performance.now()
    const r = await fetch(`${m.url}${path}`, json('POST', body, headers))
    await r.arrayBuffer()
    out = { status: r.status, ms: Math.max(out.ms, performance.now() - t0) }
  }
  return out
}
const starA = Array.from({ length: 100 }, (_, i) => `${i}/` + '*a'.repeat(512))
const probeReserve = await timed({ project: 'probe', paths: starA }, agents[0])
const probeCheck = await timed({ project: 'probe', paths: Array.from({ length: 100 }, () => '*b'.repeat(512)) }, {}, '/api/reservations/check')
const globstars = await timed({ project: 'probe', paths: Array.from({ length: 100 }, () => '**/'.repeat(341) + 'x') }, {}, '/api/reservations/check')
probing = false
await sampler
await m.stop()

// The slowest single decisions the step cap allows, in this process (after a warm-up).
const deep = '**/*' + 'a'.repeat(250) + ('/**/*' + 'a'.repeat(250)).repeat(2) + '/c'
const flat = ('a'.repeat(250) + '/').repeat(3) + 'b'
const braces = '{a,b,c,d}'.repeat(4) + '/**/x'
const pairMs = (a: string, b: string) => {
  for (let i = 0; i < 20; i++) overlapCost(a, b)
  const t0 = performance.now()
  for (let i = 0; i < 50; i++) overlapCost(a, b)
  return { ms: (performance.now() - t0) / 50, steps: overlapCost(a, b).steps }
}
const worst = [pairMs(deep, flat), pairMs(braces, braces.replace('/x', '/y')), pairMs('*a'.repeat(512), '*b'.repeat(512))]

const ratio = (x: number, b: number) => `${((x / b) * 100).toFixed(1)}% of baseline`
console.log(`${HELD} reservations held by ${AGENTS} instances in one project; ${SECONDS} s per figure`)
console.log(`seeding: ${seedRate.toFixed(0)} grants/s with ${AGENTS} agents granting at once`)
if (baseCheck && check && baseOne && checkOne) {
  console.log(`baseline Bun.serve, wrk 32 conn    ${fmt(baseCheck)}`)
  console.log(`check (3 paths vs ${HELD} held)     ${fmt(check)}   ${ratio(check.rps, baseCheck.rps)}`)
  console.log(`baseline Bun.serve, wrk 1 conn     ${fmt(baseOne)}`)
  console.log(`check, 1 conn                      ${fmt(checkOne)}   ${ratio(checkOne.rps, baseOne.rps)}`)
} else console.log('check: wrk is not installed (apt-get install wrk)')
console.log(`baseline, ${CLIENTS} sessions every ${PACE_MS} ms ${pacedFmt(basePaced)}`)
console.log(`check, ${CLIENTS} sessions every ${PACE_MS} ms    ${pacedFmt(checkPaced)}`)
console.log(`  the server's own histogram of those checks: p99 within ${Number(served.le) * 1000} ms; ${(served.within5 * 100).toFixed(2)}% within 5 ms`)
console.log(`baseline Bun.serve, 2 requests  1 client: ${base1.toFixed(0)}/s   ${CLIENTS} clients: ${base32.toFixed(0)}/s`)
console.log(`grant + release, 1 client        ${grant1.toFixed(0).padStart(6)} round trips/s   ${ratio(grant1, base1)}`)
console.log(`grant + release, ${CLIENTS} clients      ${grant32.toFixed(0).padStart(6)} round trips/s   ${ratio(grant32, base32)}`)
console.log(`probe, slowest of 5: reserve 100 x '*a'x512 ${probeReserve.status} in ${probeReserve.ms.toFixed(1)} ms; check 100 x '*b'x512 ${probeCheck.status} in ${probeCheck.ms.toFixed(1)} ms; check 100 x '**/'x341 ${globstars.status} in ${globstars.ms.toFixed(1)} ms`)
const sorted = [...health].sort((x, y) => x - y)
console.log(`/health meanwhile: ${health.length} samples, median ${sorted[sorted.length >> 1]?.toFixed(1)} ms, max ${sorted.at(-1)?.toFixed(1)} ms`)
console.log(`slowest pairs at the step cap (${MAX_STEPS}): ${worst.map((w) => `${w.ms.toFixed(2)} ms (${w.steps} steps)`).join(', ')} — deep ** vs long literal, 256 x 256 brace alternatives, the probe's pair`)
if (stillHeld !== HELD) throw new Error(`expected ${HELD} reservations held at the end, found ${stillHeld}`)

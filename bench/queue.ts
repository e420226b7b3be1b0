// Task queue benchmark. (1) enqueue→claim→ack cycles per second with 1, 8 and 32
// concurrent workers (each a registered instance, 3 HTTP calls per cycle); the
// baseline is a bare Bun.serve answering the same 3 calls per cycle. (2) claim
// latency p50/p99 with 10,000 ready tasks in the queue, and with 10,000 ready
// tasks the claimer lacks the capability for ahead of the one it can take.
// (3) wake-up latency: from an enqueue to the answer of a claim held with wait_ms.
// Run: bun bench/queue.ts
import { startBaseline, startMuster, type Proc } from './lib'

const SECONDS = 5
const READY = 10_000
const SAMPLES = 2000

const post = async (url: string, body: unknown, token?: string) => {
  const res = await fetch(url, {
    method: 'POST',
    headers: { 'content-type': 'application/json', ...(token ? { 'x-instance-token': token } : {}) },
    body: JSON.stringify(body),
  })
  const text = await res.text()
  if (res.status >= 400) throw new Error(`${res.status} ${text}`)
  return text ? JSON.parse(text) : null
}

const register = async (api: string, name: string, capabilities: string[] = []) =>
  (await post(`${api}/api/instances/register`, { name, capabilities })).token as string

function percentile(sorted: number[], p: number): number {
  return sorted[Math.min(sorted.length - 1, Math.floor(sorted.length * p))]
}

/** Runs `workers` loops of `cycle` for SECONDS; returns completed cycles per second. */
async function cycles(workers: number, cycle: (worker: number) => Promise<void>): Promise<number> {
  const end = performance.now() + SECONDS * 1000
  let done = 0
  await Promise.all(
    Array.from({ length: workers }, async (_, w) => {
      while (performance.now() < end) {
        await cycle(w)
        done++
      }
    }),
  )
  return done / SECONDS
}

async function musterCycles(muster: Proc, workers: number): Promise<number> {
  const queue = `cycle-${workers}`
  const tokens = await Promise.all(Array.from({ length: workers }, (_, i) => register(muster.url, `worker-${workers}-${i}`)))
  return cycles(workers, async (w) => {
    await post(`${muster.url}/api/queues/${queue}/tasks`, { title: 'job', payload: { w } })
    const task = await post(`${muster.url}/api/queues/${queue}/claim`, {}, tokens[w])
    // Another worker may have taken this worker's task: then it claims the next one.
    if (task) await post(`${muster.url}/api/tasks/${task.id}/ack`, { claim_id: task.claim_id, result: 'ok' }, tokens[w])
  })
}

async function baselineCycles(base: Proc, workers: number): Promise<number> {
  const hit = async () => void (await (await fetch(base.url, { method: 'POST', body: '{}' })).text())
  return cycles(workers, async () => {
    await hit()
    await hit()
    await hit()
  })
}

/** Sequential claim (and ack) latency in ms, the claim alone timed. */
async function claimLatency(api: string, queue: string, token: string): Promise<{ p50: number; p99: number }> {
  const samples: number[] = []
  for (let i = 0; i < SAMPLES; i++) {
    const t0 = performance.now()
    const task = await post(`${api}/api/queues/${queue}/claim`, {}, token)
    samples.push(performance.now() - t0)
    if (!task) throw new Error('queue ran dry')
    await post(`${api}/api/tasks/${task.id}/ack`, { claim_id: task.claim_id }, token)
  }
  samples.sort((a, b) => a - b)
  return { p50: percentile(samples, 0.5), p99: percentile(samples, 0.99) }
}

async function fill(api: string, queue: string, n: number, extra: Record<string, unknown> = {}): Promise<void> {
  const BATCH = 64
  for (let i = 0; i < n; i += BATCH)
    await Promise.all(Array.from({ length: Math.min(BATCH, n - i) }, (_, j) => post(`${api}/api/queues/${queue}/tasks`, { title: `t${i + j}`, ...extra })))
}

async function baselineLatency(base: Proc): Promise<{ p50: number; p99: number }> {
  const samples: number[] = []
  for (let i = 0; i < SAMPLES; i++) {
    const t0 = performance.now()
    await (await fetch(base.url, { method: 'POST', body: '{}' })).text()
    samples.push(performance.now() - t0)
  }
  samples.sort((a, b) => a - b)
  return { p50: percentile(samples, 0.5), p99: percentile(samples, 0.99) }
}

/** Enqueue → held-claim answer, for PACED tasks enqueued 5 ms apart while `workers` claims are held. */
async function wakeLatency(api: string, workers: number): Promise<{ p50: number; p99: number }> {
  const PACED = 1000
  const tokens = await Promise.all(Array.from({ length: workers }, (_, i) => register(api, `waiter-${i}`)))
  const samples: number[] = []
  let producing = true
  const consumers = tokens.map(async (token) => {
    while (producing || samples.length < PACED) {
      const task = await post(`${api}/api/queues/wake/claim`, { wait_ms: 2000 }, token)
      if (!task) continue
      samples.push(performance.timeOrigin + performance.now() - task.payload.t)
      await post(`${api}/api/tasks/${task.id}/ack`, { claim_id: task.claim_id }, token)
    }
  })
  await Bun.sleep(200) // every worker is holding a claim
  for (let i = 0; i < PACED; i++) {
    await post(`${api}/api/queues/wake/tasks`, { title: 'ping', payload: { t: performance.timeOrigin + performance.now() } })
    await Bun.sleep(5)
  }
  producing = false
  await Promise.all(consumers)
  samples.sort((a, b) => a - b)
  return { p50: percentile(samples, 0.5), p99: percentile(samples, 0.99) }
}

const muster = await startMuster()
const base = await startBaseline()
try {
  console.log(`enqueue→claim→ack cycles/s (${SECONDS} s each, 3 HTTP calls per cycle; baseline: 3 bare Bun.serve calls per cycle)`)
  for (const workers of [1, 8, 32]) {
    const m = await musterCycles(muster, workers)
    const b = await baselineCycles(base, workers)
    console.log(`  ${String(workers).padStart(2)} workers: Muster ${m.toFixed(0).padStart(6)} cycles/s   baseline ${b.toFixed(0).padStart(6)}   ratio ${(m / b).toFixed(2)}`)
  }

  console.log(`claim latency, ${SAMPLES} sequential claims (each then acked, untimed)`)
  const token = await register(muster.url, 'latency')
  await fill(muster.url, 'deep', READY)
  const deep = await claimLatency(muster.url, 'deep', token)
  const b = await baselineLatency(base)
  console.log(`  ${READY} ready tasks:     p50 ${deep.p50.toFixed(2)} ms   p99 ${deep.p99.toFixed(2)} ms`)
  // Worst case: every task ahead in claim order needs a capability the claimer lacks.
  await fill(muster.url, 'skip', READY, { requires: ['gpu'], priority: 1 })
  await fill(muster.url, 'skip', SAMPLES)
  const skip = await claimLatency(muster.url, 'skip', token)
  console.log(`  behind ${READY} it cannot take: p50 ${skip.p50.toFixed(2)} ms   p99 ${skip.p99.toFixed(2)} ms`)
  console.log(`  baseline (bare Bun.serve): p50 ${b.p50.toFixed(2)} ms   p99 ${b.p99.toFixed(2)} ms   ratio p50 ${(deep.p50 / b.p50).toFixed(1)}x`)

  const wake = await wakeLatency(muster.url, 8)
  console.log(`wake-up: enqueue → answer of a claim held with wait_ms (8 held claims, 1000 tasks 5 ms apart)`)
  console.log(`  p50 ${wake.p50.toFixed(2)} ms   p99 ${wake.p99.toFixed(2)} ms   (includes the enqueue's own commit)`)
} finally {
  await muster.stop()
  await base.stop()
}

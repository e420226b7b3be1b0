// Large but legal JSON bodies beside a /health sampler (issue 38, item 3): the reliability
// probe's requests — a task with a huge payload, acks with a huge result, listings of such
// tasks, a state PUT of a huge JSON value and `?diff=` between two of them — sent while
// another process asks GET /health every 10 ms. The same requests go to a bare Bun.serve
// that only reads each body, so the /health figures have their floor beside them.
// Where a limit now refuses the probe's size, the request is sent at the probe's size
// (the 413 is timed) and again just under the limit. BENCH_MB sets the probe's size.
// Issue 44: hook events whose edited paths are far past a reservation's limits (a 100 KB and
// a 200 KB file_path of 50,000 and 100,000 segments, an apply_patch of 101 files) and checks
// of such paths, each refused (the hook: `{}` unchecked; the check: 400); /health has its
// own figures over their window. BENCH_PART=hooks sends only those.
import { join } from 'node:path'
import { startBaseline, startMuster, spawnChild, type Proc } from './lib'
import { MAX_TASK_BODY } from '../routes/queue'
import { INLINE_JSON_BYTES } from '../lib/json-thread'

const MB = Number(process.env.BENCH_MB ?? 10)
const TASKS = Number(process.env.BENCH_TASKS ?? 40)
const HOOKS_ONLY = process.env.BENCH_PART === 'hooks'
const HOOK_ROUNDS = Number(process.env.BENCH_HOOK_ROUNDS ?? 500)

/** `segments` one-character segments: `a/a/…/a.ts` (the 100 KB path has 50,000). */
const deepPath = (segments: number) => `${'a/'.repeat(segments - 1)}a.ts`

/** A JSON array of `[]` of about `bytes` (the probe's payload): many tiny values, the costliest JSON to parse per byte. */
const emptyArrays = (bytes: number, mark = -1) =>
  '[' + Array.from({ length: Math.floor(bytes / 3) - 1 }, (_, i) => (mark > 0 && i % mark === 0 ? '[1]' : '[]')).join(',') + ']'

// Decimal megabytes: 10 MB with its envelope stays under the server's 10 MiB body limit.
const probe = emptyArrays(MB * 1_000_000)
const probe2 = emptyArrays(MB * 1_000_000, 1000)
// Just under the task limit, with room for the rest of the body.
const taskSized = emptyArrays(MAX_TASK_BODY - 1024)
// Just over the size diffed on the request thread: the largest pair it diffs inline is half this each.
const inlineSized = emptyArrays(INLINE_JSON_BYTES / 2 - 16)
const inlineSized2 = emptyArrays(INLINE_JSON_BYTES / 2 - 16, 1000)

const SAMPLER = `
const url = process.env.SAMPLE_URL
const lat = []
let running = true
process.stdin.on('end', () => (running = false)).resume()
while (running) {
  const t0 = performance.now()
  await (await fetch(url + '/health')).arrayBuffer()
  lat.push([performance.timeOrigin + t0, performance.now() - t0])
  await Bun.sleep(10)
}
console.log(JSON.stringify(lat))
`

/** GET /health every 10 ms from another process (this one builds and reads the large bodies) until stop(). */
function sampler(url: string) {
  const p = spawnChild([process.execPath, '-e', SAMPLER], { env: { ...process.env, SAMPLE_URL: url }, stdin: 'pipe', stdout: 'pipe', stderr: 'inherit' })
  return {
    /** [start (ms since the epoch), latency (ms)] of each sample. */
    async stop(): Promise<[number, number][]> {
      p.stdin.end()
      const out = await new Response(p.stdout).text()
      await p.exited
      return JSON.parse(out)
    },
  }
}

interface Timed {
  what: string
  status: number
  ms: number
  /** When it was sent (ms since the epoch). */
  at: number
}

async function send(url: string, what: string, method: string, path: string, body?: string, headers: Record<string, string> = {}): Promise<Timed & { text: string }> {
  const t0 = performance.now()
  const r = await fetch(url + path, { method, body, headers: body === undefined ? headers : { 'content-type': 'application/json', ...headers } })
  const text = await r.text()
  return { what, status: r.status, ms: performance.now() - t0, at: performance.timeOrigin + t0, text }
}

/** The probe's requests against `url`, in order; answers are read whole but not parsed (this process is not measured). */
async function probeRequests(url: string, bare: boolean): Promise<Timed[]> {
  const out: Timed[] = []
  const run = async (...args: Parameters<typeof send>) => {
    const r = await send(...args)
    out.push({ what: r.what, status: r.status, ms: r.ms, at: r.at })
    return r
  }
  const token = bare
    ? ''
    : JSON.parse((await send(url, 'register', 'POST', '/api/instances/register', JSON.stringify({ name: 'bench-worker' }))).text).token
  const auth = { 'x-instance-token': token }
  await hookRequests(run, url)
  if (HOOKS_ONLY) return out
  const task = (payload: string) => `{"title":"large","payload":${payload}}`
  await run(url, `create, ${MB} MB payload`, 'POST', '/api/queues/big/tasks', task(probe))
  for (let i = 0; i < TASKS; i++) await run(url, `create, payload at the limit`, 'POST', '/api/queues/big/tasks', task(taskSized))
  for (let i = 0; i < 2; i++) {
    const claim = await run(url, 'claim', 'POST', '/api/queues/big/claim', '{}', auth)
    const c = bare ? { id: 1, claim_id: 'x' } : JSON.parse(claim.text)
    await run(url, `ack, ${MB} MB result`, 'POST', `/api/tasks/${c.id}/ack`, `{"claim_id":"${c.claim_id}","result":${probe}}`, auth)
    await run(url, 'ack, result at the limit', 'POST', `/api/tasks/${c.id}/ack`, `{"claim_id":"${c.claim_id}","result":${taskSized}}`, auth)
  }
  for (let i = 0; i < 3; i++) await run(url, `list ${TASKS} large tasks`, 'GET', '/api/queues/big/tasks')
  for (let i = 0; i < 3; i++) await run(url, 'get one large task', 'GET', '/api/tasks/1')
  await run(url, `state PUT, ${MB} MB JSON`, 'PUT', '/api/state/big', probe)
  await run(url, `state PUT, ${MB} MB JSON`, 'PUT', '/api/state/big', probe2)
  for (let i = 0; i < 3; i++) await run(url, `diff of two ${MB} MB versions`, 'GET', '/api/state/big?diff=1,2')
  await run(url, 'state PUT, largest inline diff', 'PUT', '/api/state/small', inlineSized)
  await run(url, 'state PUT, largest inline diff', 'PUT', '/api/state/small', inlineSized2)
  for (let i = 0; i < 10; i++) await run(url, 'diff, largest inline pair', 'GET', '/api/state/small?diff=1,2')
  return out
}

/** The long hook paths, edit-reserve mode on (the costliest way: a grant would follow), and checks of such paths. */
async function hookRequests(run: (...args: Parameters<typeof send>) => Promise<unknown>, url: string, warm = false) {
  const root = '/work/shop'
  const hook = (tool: string, tool_input: unknown) =>
    JSON.stringify({ session_id: `bench-${crypto.randomUUID()}`, hook_event_name: 'PreToolUse', cwd: root, tool_name: tool, tool_input })
  const headers = { 'x-muster-project': 'shop', 'x-muster-reserve': '30m' }
  const edit = (segments: number) => hook('Edit', { file_path: `${root}/${deepPath(segments)}`, old_string: 'a', new_string: 'b' })
  const patch = hook('apply_patch', { command: ['*** Begin Patch', ...Array.from({ length: 101 }, (_, i) => `*** Add File: src/f${i}.ts\n+x`), '*** End Patch'].join('\n') })
  const bodies = [edit(50_000), edit(100_000)]
  // The first round (route code compiled, the sessions registered) is sent before; the rounds are the steady state.
  const rounds = warm ? 1 : HOOK_ROUNDS
  for (let i = 0; i < rounds; i++) {
    await run(url, 'hook Edit, 100 KB file_path', 'POST', '/api/hooks/claude-code', bodies[0], headers)
    await run(url, 'hook Edit, 200 KB file_path', 'POST', '/api/hooks/claude-code', bodies[1], headers)
    await run(url, 'hook apply_patch, 101 files', 'POST', '/api/hooks/codex', patch, headers)
    await run(url, 'hook check, 100 KB path', 'POST', '/api/reservations/check', JSON.stringify({ project: 'shop', paths: [deepPath(50_000)] }))
  }
}

/** The /health samples sent while the requests named `what…` were sent (first sent to last answered). */
function during(health: [number, number][], requests: Timed[], what: string): [number, number][] {
  const rs = requests.filter((r) => r.what.startsWith(what))
  if (!rs.length) return []
  const from = Math.min(...rs.map((r) => r.at))
  const to = Math.max(...rs.map((r) => r.at + r.ms))
  return health.filter(([at]) => at >= from && at <= to)
}

const pct = (xs: number[], p: number) => [...xs].sort((a, b) => a - b)[Math.min(xs.length - 1, Math.floor((xs.length * p) / 100))]
const healthLine = (name: string, samples: [number, number][], lat = samples.map((x) => x[1])) =>
  !lat.length ? `${name.padEnd(16)} /health no samples` :
  `${name.padEnd(16)} /health ${String(lat.length).padStart(5)} samples   p50 ${pct(lat, 50).toFixed(1)} ms   p99 ${pct(lat, 99).toFixed(1)} ms   max ${Math.max(...lat).toFixed(1)} ms   over 100 ms: ${lat.filter((x) => x > 100).length}`

async function measure(server: Proc, bare: boolean) {
  // Warm the request path (and the sampler's first connection) before anything is timed.
  for (let i = 0; i < 20; i++) await (await fetch(`${server.url}/health`)).arrayBuffer()
  await hookRequests((...args) => send(...args), server.url, true)
  const s = sampler(server.url)
  // Long enough for the sampler's own start: samples begin before the first request.
  await Bun.sleep(500)
  const requests = await probeRequests(server.url, bare)
  await Bun.sleep(200)
  return { requests, health: await s.stop() }
}

// Reads each body whole and answers 200, as any server must at least do; keeps state PUTs in
// memory and diffs them on the same JSON worker as Muster, so the worker's own cost (a core
// busy for seconds) is in the floor too, and the difference is Muster's request thread.
const BARE = `import { offThread } from ${JSON.stringify(join(import.meta.dir, '../lib/json-thread.ts'))}
const kept = new Map()
const json = (body) => new Response(body, { headers: { 'content-type': 'application/json' } })
const s = Bun.serve({ hostname: '127.0.0.1', port: 0, maxRequestBodySize: 64 * 1024 * 1024,
  async fetch(req) {
    const url = new URL(req.url)
    const bytes = new Uint8Array(await req.arrayBuffer())
    if (req.method === 'PUT') kept.set(url.pathname, [...(kept.get(url.pathname) ?? []), bytes])
    const diff = url.searchParams.get('diff')
    if (diff) {
      const [a, b] = diff.split(',').map((v) => kept.get(url.pathname)[v - 1])
      return json('{"diffs":' + (await offThread({ kind: 'diff', a, b })).json + '}')
    }
    return json('{}')
  } })
console.log('baseline on http://127.0.0.1:' + s.port + ',')`

const baseline = await startBaseline(BARE)
const base = await measure(baseline, true)
await baseline.stop()
const muster = await startMuster()
const ours = await measure(muster, false)
await muster.stop()

console.log(`probe size ${MB} MB; task body limit ${MAX_TASK_BODY} B; diffs of pairs over ${INLINE_JSON_BYTES} B on a worker`)
const byWhat = new Map<string, Timed[]>()
for (const r of ours.requests) byWhat.set(r.what, [...(byWhat.get(r.what) ?? []), r])
for (const [what, rs] of byWhat)
  console.log(`  ${what.padEnd(36)} ${[...new Set(rs.map((r) => r.status))].join('/')}   max ${Math.max(...rs.map((r) => r.ms)).toFixed(1)} ms`)
console.log(healthLine('Muster', ours.health))
console.log(healthLine('bare Bun.serve', base.health))
console.log(healthLine('Muster, hooks', during(ours.health, ours.requests, 'hook')))
console.log(healthLine('bare, hooks', during(base.health, base.requests, 'hook')))
// What was in flight when /health was slow: the request to look at next.
for (const [at, ms] of ours.health.filter(([, ms]) => ms > 50)) {
  const during = ours.requests.filter((r) => r.at < at + ms && r.at + r.ms > at).map((r) => r.what)
  console.log(`  /health ${ms.toFixed(1)} ms during: ${[...new Set(during)].join('; ') || 'nothing sent'}`)
}

// Budgets cost a hook decision nothing it can notice: the same PreToolUse (and PostToolUse)
// decision, answered without a unit, timed against a server with no budgets and no usage
// and against one with 20 budgets (some of them in the session's scope, some over their
// limit, one a task budget, so the decision also reads the session's claims) and 100,000
// usage records sent in over OTLP, charged to the budgets as they came. Decisions alternate
// one by one between the two servers, so a shared machine's stalls hit both alike; the
// target is p99 within 1 ms of the server without budgets. BENCH_RECORDS and
// BENCH_DECISIONS change the load.
import { startMuster, type Proc } from './lib'

const RECORDS = Number(process.env.BENCH_RECORDS ?? 100_000)
const DECISIONS = Number(process.env.BENCH_DECISIONS ?? 10_000)
const BATCH = 1000
const SESSION = '0b7c7a10-5a1e-4d2b-9c31-7f3e2a4b6c8d'
const AGENT = 'bench-ada'
const PROJECT = 'bench-shop'

async function call(base: string, method: string, path: string, body?: unknown, headers: Record<string, string> = {}): Promise<any> {
  const res = await fetch(base + path, { method, headers: { 'content-type': 'application/json', ...headers }, body: body === undefined ? undefined : JSON.stringify(body) })
  const text = await res.text()
  if (res.status >= 400) throw new Error(`${method} ${path}: ${res.status} ${text}`)
  return text ? JSON.parse(text) : null
}

const hook = (base: string, event: Record<string, unknown>) =>
  call(base, 'POST', '/api/hooks/claude-code', { session_id: SESSION, cwd: `/repo/${PROJECT}`, ...event }, { 'x-muster-agent': AGENT, 'x-muster-project': PROJECT })

/** One OTLP logs body of `n` Claude Code request events (the captured shape), spread over sessions, models and the last days. */
function logsBody(offset: number, n: number, sessions: string[]) {
  const now = BigInt(Date.now()) * 1_000_000n
  const records = Array.from({ length: n }, (_, i) => {
    const k = offset + i
    return {
      timeUnixNano: String(now - BigInt(k) * 3_000_000_000n),
      body: { stringValue: 'claude_code.api_request' },
      attributes: [
        { key: 'session.id', value: { stringValue: sessions[k % sessions.length] } },
        { key: 'event.name', value: { stringValue: 'api_request' } },
        { key: 'model', value: { stringValue: k % 3 ? 'claude-sonnet-4-5' : 'claude-haiku-4-5' } },
        { key: 'input_tokens', value: { intValue: String(1000 + (k % 500)) } },
        { key: 'output_tokens', value: { intValue: String(100 + (k % 50)) } },
        { key: 'cache_read_tokens', value: { intValue: '0' } },
        { key: 'cache_creation_tokens', value: { intValue: '0' } },
        { key: 'cost_usd', value: { doubleValue: 0.001 + (k % 7) * 0.0001 } },
      ],
    }
  })
  return { resourceLogs: [{ resource: { attributes: [{ key: 'service.name', value: { stringValue: 'claude-code' } }] }, scopeLogs: [{ logRecords: records }] }] }
}

/** 20 budgets: the session's agent and project (under their limits), others' (some over), all, a task and a queue. */
async function addBudgets(base: string, task: number) {
  const put = (name: string, b: Record<string, unknown>) => call(base, 'PUT', `/api/budgets/${name}`, b)
  await put('ada-day', { scope: 'agent', target: AGENT, limit_usd: 1e6, window: 'day', action: 'deny' })
  await put('ada-week', { scope: 'agent', target: AGENT, limit_usd: 1e6, window: 'week', action: 'warn' })
  await put('shop-total', { scope: 'project', target: PROJECT, limit_usd: 1e6, window: 'total', action: 'deny' })
  await put('all-week', { scope: 'all', limit_usd: 1e6, window: 'week', action: 'warn' })
  await put('task-cap', { scope: 'task', target: String(task), limit_usd: 0.001, window: 'total', action: 'deny' })
  await put('queue-cap', { scope: 'queue', target: 'bench-other', limit_usd: 0.001, window: 'day', action: 'deny' })
  for (let i = 0; i < 14; i++)
    await put(`other-${i}`, { scope: i % 2 ? 'agent' : 'project', target: `other-${i}`, limit_usd: i < 7 ? 0.001 : 1e6, window: i % 3 ? 'day' : 'week', action: i % 2 ? 'warn' : 'deny' })
}

/** The latency (ms) of one decision. */
async function once(base: string, event: Record<string, unknown>): Promise<number> {
  const t0 = performance.now()
  const answer = await hook(base, event)
  const took = performance.now() - t0
  if (JSON.stringify(answer) !== '{}') throw new Error(`expected no opinion, got ${JSON.stringify(answer)}`)
  return took
}

const pct = (xs: number[], p: number) => [...xs].sort((a, b) => a - b)[Math.min(xs.length - 1, Math.floor((xs.length * p) / 100))]!

async function prepare(server: Proc, loaded: boolean) {
  await hook(server.url, { hook_event_name: 'SessionStart', source: 'startup' })
  if (!loaded) return
  const other = await call(server.url, 'POST', '/api/queues/bench-other/tasks', { title: 'over its budget' })
  await call(server.url, 'POST', '/api/llm/usage', { provider: 'anthropic', model: 'm', task_id: other.id, cost_usd: 0.01 })
  await addBudgets(server.url, other.id)
  const sessions = [SESSION, ...Array.from({ length: 49 }, (_, i) => `0b7c7a10-0000-4000-8000-${String(i).padStart(12, '0')}`)]
  const t0 = performance.now()
  for (let sent = 0; sent < RECORDS; sent += BATCH) await call(server.url, 'POST', '/v1/logs', logsBody(sent, Math.min(BATCH, RECORDS - sent), sessions))
  const s = (performance.now() - t0) / 1000
  const summary = await call(server.url, 'GET', '/api/llm/usage/summary')
  if (summary.total.request_count < RECORDS) throw new Error(`only ${summary.total.request_count} records`)
  console.log(`loaded ${summary.total.request_count} usage records over OTLP in ${s.toFixed(1)} s (${Math.round(RECORDS / s)} records/s, each charged to its budgets); 20 budgets, ${(await call(server.url, 'GET', '/api/budgets')).filter((b: any) => b.spent_usd >= b.limit_usd).length} over their limit`)
}

const none = await startMuster()
const loaded = await startMuster()
try {
  await prepare(none, false)
  await prepare(loaded, true)
  // The load leaves a WAL to checkpoint and garbage to collect: decisions are timed once that has settled, as an agent's would be.
  await Bun.sleep(5000)
  const events = {
    PreToolUse: { hook_event_name: 'PreToolUse', tool_name: 'Bash', tool_input: { command: 'ls' } },
    PostToolUse: { hook_event_name: 'PostToolUse', tool_name: 'Bash', tool_input: { command: 'ls' }, tool_response: {} },
  }
  for (const [name, event] of Object.entries(events)) {
    for (let i = 0; i < 2000; i++) await once(none.url, event), await once(loaded.url, event)
    const a: number[] = []
    const b: number[] = []
    for (let i = 0; i < DECISIONS; i++) {
      // Which server goes first alternates too, so neither always follows the other's answer.
      if (i % 2) a.push(await once(none.url, event)), b.push(await once(loaded.url, event))
      else b.push(await once(loaded.url, event)), a.push(await once(none.url, event))
    }
    // The p99 of each slice of 1,000 decisions, and their median: one stall of the shared machine moves one slice, not the figure.
    const slices = (xs: number[]) => Array.from({ length: Math.floor(xs.length / 1000) }, (_, k) => pct(xs.slice(k * 1000, (k + 1) * 1000), 99))
    const sliced = (xs: number[]) => pct(slices(xs), 50)
    const row = (label: string, xs: number[]) =>
      `${label.padEnd(36)} p50 ${pct(xs, 50).toFixed(3)} ms  p99 ${pct(xs, 99).toFixed(3)} ms  median slice p99 ${sliced(xs).toFixed(3)} ms  (${xs.length} decisions)`
    console.log(`\n${name} of a session in scope, no opinion (answered without a unit):`)
    console.log(row('no budgets, no usage', a))
    console.log(row(`20 budgets, ${RECORDS.toLocaleString('en-US')} usage records`, b))
    const d = pct(b, 99) - pct(a, 99)
    const ds = sliced(b) - sliced(a)
    const sign = (x: number) => `${x >= 0 ? '+' : ''}${x.toFixed(3)} ms`
    console.log(`p99 difference ${sign(d)} (median slice p99 ${sign(ds)}), p50 ${sign(pct(b, 50) - pct(a, 50))}: ${Math.max(d, ds) <= 1 ? 'within' : 'NOT within'} the 1 ms target`)
  }
} finally {
  await none.stop()
  await loaded.stop()
}

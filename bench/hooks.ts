// Agent hooks at scale: 10,000 reservations held by 50 instances in one project, then 32
// hook sessions sending PreToolUse Write events at once under wrk, in five mixes: free
// files (no opinion), files another instance holds (denied), edit-reserve mode (each
// session's files reserved on the first edit, renewed after), a mix of the three
// (a quarter reserving, the others alternating held and free files), and Bash commands
// read for their writes (lib/shell), alternating a `cd … && sed -i` of a held file and a
// pipeline that writes a free one. The same load runs against a bare Bun.serve in the same
// invocation, so the decision's p50/p99 has its ceiling beside it. `--pg` runs Muster on a
// throwaway PostgreSQL cluster instead of SQLite; BENCH_HELD and BENCH_SECONDS change the load.
import { fmt, hasWrk, startBaseline, startMuster, startPg, wrk, type LoadResult, type Proc } from './lib'

const SECONDS = Number(process.env.BENCH_SECONDS ?? 5)
const HELD = Number(process.env.BENCH_HELD ?? 10_000)
const AGENTS = 50
const MODULES = 500
const SESSIONS = 32
const RESERVING = 8
const ROOT = '/repo'
const PACE_MS = 50

if (!hasWrk()) throw new Error('wrk is not installed (apt-get install wrk)')

const json = (method: string, body?: unknown, headers: Record<string, string> = {}): RequestInit => ({
  method,
  headers: { 'content-type': 'application/json', ...headers },
  body: body === undefined ? undefined : JSON.stringify(body),
})

async function ok(res: Promise<Response>, status = 200): Promise<any> {
  const r = await res
  if (r.status !== status) throw new Error(`expected ${status}, got ${r.status}: ${await r.text()}`)
  return r.json()
}

/** Latency percentiles in ms of `xs`. */
const pct = (xs: number[], p: number) => [...xs].sort((a, b) => a - b)[Math.min(xs.length - 1, Math.floor((xs.length * p) / 100))]

/**
 * 32 sessions at once, each sending one request every PACE_MS (an agent's tool calls
 * come seconds apart; this is far more often): the latency of each answer, as a hook
 * sees it, rather than the queue that a closed loop of 32 connections builds.
 */
async function paced(url: string, request: (k: number, n: number) => RequestInit): Promise<{ p50: number; p99: number; count: number }> {
  const times: number[] = []
  const end = Date.now() + SECONDS * 1000
  await Promise.all(
    Array.from({ length: SESSIONS }, async (_, k) => {
      await Bun.sleep((k * PACE_MS) / SESSIONS)
      for (let n = 0; Date.now() < end; n++) {
        const t0 = performance.now()
        const r = await fetch(url, request(k, n))
        await r.arrayBuffer()
        if (r.status !== 200) throw new Error(`paced: ${r.status}`)
        const took = performance.now() - t0
        times.push(took)
        await Bun.sleep(Math.max(0, PACE_MS - took))
      }
    }),
  )
  return { p50: pct(times, 50), p99: pct(times, 99), count: times.length }
}

/** Reservation i, as bench/reservations.ts seeds them: module i % MODULES, one in a hundred a glob. */
const heldPath = (i: number) => {
  const mod = i % MODULES
  const n = Math.floor(i / MODULES)
  return i % 100 === 99 ? `src/mod${mod}/gen${n}/**` : `src/mod${mod}/file${n}.ts`
}

type Mix = 'free' | 'denied' | 'reserve' | 'mixed' | 'shell'
/** Which file session k edits on its request n, and whether it is in edit-reserve mode, per load mix (as Lua). */
const CHOICE: Record<Mix, string> = {
  // no reservation in the way, no edit-reserve mode: answered from committed reads
  free: `file = "lib/s" .. k .. "/f" .. j .. ".ts"`,
  // every edit hits a file another instance holds: each a unit with its event and audit entry
  denied: `file = "src/mod" .. k .. "/file" .. j .. ".ts"`,
  // every session in edit-reserve mode, 10 files each: a grant, then renewals at most once a second per file
  reserve: `h["X-Muster-Reserve"] = "10m"; file = "work/reserve/s" .. k .. "/f" .. (j % 10) .. ".ts"`,
  // a quarter reserving, the others alternating between a held file and a free one
  mixed: `if k < ${RESERVING} then h["X-Muster-Reserve"] = "10m"; file = "work/mixed/s" .. k .. "/f" .. (j % 10) .. ".ts"
    elseif n % 2 == 0 then file = "src/mod" .. k .. "/file" .. j .. ".ts" else file = "lib/s" .. k .. "/f" .. j .. ".ts" end`,
  // a shell command instead of a file: its writes read from the text
  shell: `file = ""`,
}
/** The Bash command of session k's request n in the shell mix: a held file's in-place edit, or a free file written by a pipeline. */
const shellCommand = (k: number, j: number, n: number) =>
  n % 2 === 0 ? `cd src/mod${k} && sed -i 's/a/b/' file${j}.ts` : `git diff --stat | grep -v x | tee -a lib/s${k}/f${j}.log > /dev/null && echo done`
const SHELL_LUA = `if n % 2 == 0 then cmd = "cd src/mod" .. k .. " && sed -i 's/a/b/' file" .. j .. ".ts" else cmd = "git diff --stat | grep -v x | tee -a lib/s" .. k .. "/f" .. j .. ".log > /dev/null && echo done" end`
// Each wrk request: session n % 32 of the mix (sessions of one mix apart from the others').
const lua = (mix: Mix) => `
local n = 0
request = function()
  n = n + 1
  local k = n % ${SESSIONS}
  local j = math.floor(n / ${SESSIONS}) % 20
  local h = { ["Content-Type"] = "application/json", ["X-Muster-Project"] = "big", ["X-Muster-Root"] = "${ROOT}" }
  local file
  ${CHOICE[mix]}
  local body
  if ${mix === 'shell' ? 'true' : 'false'} then
    local cmd
    ${SHELL_LUA}
    body = '{"session_id":"bench-${mix}-' .. k .. '","hook_event_name":"PreToolUse","cwd":"${ROOT}","tool_name":"Bash","tool_input":{"command":"' .. cmd .. '"}}'
  else
    body = '{"session_id":"bench-${mix}-' .. k .. '","hook_event_name":"PreToolUse","cwd":"${ROOT}","tool_name":"Write","tool_input":{"file_path":"${ROOT}/' .. file .. '","content":"x"}}'
  end
  return wrk.format("POST", nil, h, body)
end`
const MIXES: Mix[] = ['free', 'denied', 'reserve', 'mixed', 'shell']

const baseline = await startBaseline()
const base: LoadResult = await wrk(baseline.url, lua('mixed'), { seconds: SECONDS, warmup: 1 })
const basePaced = await paced(baseline.url, () => json('POST', { session_id: 'x', hook_event_name: 'PreToolUse' }))
await baseline.stop()

const pg = process.argv.includes('--pg') ? await startPg() : null
if (process.argv.includes('--pg') && !pg) throw new Error('--pg: PostgreSQL is not installed')
const replicas = pg ? await pg.replicas(1) : null
const m: Proc = replicas ? replicas.procs[0] : await startMuster()

const agents = await Promise.all(
  Array.from({ length: AGENTS }, async (_, i) => ({ 'x-instance-token': (await ok(fetch(`${m.url}/api/instances/register`, json('POST', { name: `holder-${i}` })))).token as string })),
)
await Promise.all(
  agents.map(async (token, a) => {
    for (let i = a; i < HELD; i += AGENTS) await ok(fetch(`${m.url}/api/reservations`, json('POST', { project: 'big', paths: [heldPath(i)] }, token)), 201)
  }),
)

// Every session starts (registers), and each kind of decision answers as it should before timing.
const sessionId = (mix: Mix, k: number) => `bench-${mix}-${k}`
const headersOf = (reserve: boolean): Record<string, string> => ({ 'x-muster-project': 'big', 'x-muster-root': ROOT, ...(reserve ? { 'x-muster-reserve': '10m' } : {}) })
const event = (id: string, name: string, file = '') => ({ session_id: id, hook_event_name: name, cwd: ROOT, tool_name: 'Write', tool_input: { file_path: `${ROOT}/${file}`, content: 'x' } })
const hook = (body: unknown, reserve = false) => ok(fetch(`${m.url}/api/hooks/claude-code`, json('POST', body, headersOf(reserve))))
for (const mix of MIXES) for (let k = 0; k < SESSIONS; k++) await hook(event(sessionId(mix, k), 'SessionStart'))
const denied = await hook(event(sessionId('denied', 0), 'PreToolUse', 'src/mod0/file0.ts'))
if (denied.hookSpecificOutput?.permissionDecision !== 'deny') throw new Error(`expected a denial: ${JSON.stringify(denied)}`)
if (JSON.stringify(await hook(event(sessionId('free', 0), 'PreToolUse', 'lib/free.ts'))) !== '{}') throw new Error('expected {} for a free file')
const bash = (id: string, command: string) => ({ session_id: id, hook_event_name: 'PreToolUse', cwd: ROOT, tool_name: 'Bash', tool_input: { command } })
if ((await hook(bash(sessionId('shell', 0), shellCommand(0, 0, 0)))).hookSpecificOutput?.permissionDecision !== 'deny') throw new Error('expected a shell write denied')
if (JSON.stringify(await hook(bash(sessionId('shell', 0), shellCommand(0, 0, 1)))) !== '{}') throw new Error('expected {} for a free shell write')

// Each mix paced: file choice as in the Lua above, sessions of their own.
const fileOf: Record<Mix, (k: number, j: number, n: number) => string> = {
  free: (k, j) => `lib/s${k}/f${j}.ts`,
  denied: (k, j) => `src/mod${k}/file${j}.ts`,
  reserve: (k, j) => `work/paced-reserve/s${k}/f${j % 10}.ts`,
  mixed: (k, j, n) => (k < RESERVING ? `work/paced-mixed/s${k}/f${j % 10}.ts` : n % 2 === 0 ? `src/mod${k}/file${j}.ts` : `lib/s${k}/f${j}.ts`),
  shell: () => '',
}
const reserving = (mix: Mix, k: number) => mix === 'reserve' || (mix === 'mixed' && k < RESERVING)
const pacedRuns: [Mix, Awaited<ReturnType<typeof paced>>][] = []
for (const mix of MIXES) {
  for (let k = 0; k < SESSIONS; k++) await hook(event(`bench-paced-${mix}-${k}`, 'SessionStart'))
  pacedRuns.push([
    mix,
    await paced(`${m.url}/api/hooks/claude-code`, (k, n) => {
      const id = `bench-paced-${mix}-${k}`
      const j = Math.floor(n / 2) % 20
      return json('POST', mix === 'shell' ? bash(id, shellCommand(k, j, n)) : event(id, 'PreToolUse', fileOf[mix](k, j, n)), headersOf(reserving(mix, k)))
    }),
  ])
}
const runs: [Mix, LoadResult][] = []
for (const mix of MIXES) runs.push([mix, await wrk(`${m.url}/api/hooks/claude-code`, lua(mix), { seconds: SECONDS, warmup: 1 })])

// Edit-reserve mode renewed instead of adding: at most one reservation per file of a reserving session.
const sessions: any[] = await ok(fetch(`${m.url}/api/sessions`))
const edits = (await ok(fetch(`${m.url}/api/reservations?project=big`))).filter((r: any) => r.reason === 'edit')
const reservers = new Set(
  sessions
    .filter((s) => /^bench-(paced-)?reserve-/.test(s.session_id) || (/^bench-(paced-)?mixed-/.test(s.session_id) && Number(s.session_id.split('-').pop()) < RESERVING))
    .map((s) => s.instance_id),
)
const stillHeld = (await ok(fetch(`${m.url}/api/reservations?project=big`))).length
if (replicas) await replicas.stop()
else await m.stop()
if (pg) await pg.stop()

const ratio = (x: number, b: number) => `${((x / b) * 100).toFixed(1)}% of baseline`
console.log(`${HELD} reservations held by ${AGENTS} instances in one project (${pg ? 'PostgreSQL' : 'SQLite'}); PreToolUse Write (Bash in the shell mix) from ${SESSIONS} sessions at once; ${SECONDS} s each, wrk 32 connections`)
console.log(`baseline Bun.serve      ${fmt(base)}`)
for (const [mix, r] of runs) console.log(`${mix.padEnd(22)} ${fmt(r)}   ${ratio(r.rps, base.rps)}`)
const ms = (x: number) => `${x.toFixed(2)} ms`
console.log(`paced: ${SESSIONS} sessions, each one request per ${PACE_MS} ms:`)
console.log(`  baseline Bun.serve     p50 ${ms(basePaced.p50)}   p99 ${ms(basePaced.p99)}   (${basePaced.count} requests)`)
for (const [mix, r] of pacedRuns) console.log(`  ${mix.padEnd(20)} p50 ${ms(r.p50)}   p99 ${ms(r.p99)}   (${r.count} requests)`)
const most = 2 * (SESSIONS + RESERVING) * 10
console.log(`edit reservations held: ${edits.length} by ${new Set(edits.map((r: any) => r.instance_id)).size} sessions (at most ${most})`)
if (edits.length > most || edits.some((r: any) => !reservers.has(r.instance_id))) throw new Error('edit-reserve mode added reservations it should have renewed')
if (stillHeld !== HELD + edits.length) throw new Error(`expected ${HELD + edits.length} reservations held, found ${stillHeld}`)

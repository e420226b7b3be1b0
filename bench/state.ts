// State store throughput: GET and PUT of a ~1 KB JSON value over 1000 keys at 32
// connections, against a bare Bun.serve hello-world measured in the same run.
// Targets (reported, not asserted): GET >= 50% of baseline, PUT >= 15%.
import { fmt, hasWrk, startBaseline, startMuster, wrk } from './lib'

if (!hasWrk()) {
  console.error('bench/state needs wrk (apt-get install wrk)')
  process.exit(1)
}
const SECONDS = Number(process.env.BENCH_SECONDS ?? 5)
const KEYS = 1000
const value = JSON.stringify({
  owner: 'agent-7',
  description: 'x'.repeat(900),
  tags: ['bench', 'state', 'kv'],
  updated: '2026-01-01T00:00:00Z',
})

const baseline = await startBaseline()
const base = await wrk(baseline.url, '', { seconds: SECONDS })
await baseline.stop()

const muster = await startMuster()
await Promise.all(
  Array.from({ length: KEYS }, (_, i) => fetch(`${muster.url}/api/state/bench/${i}`, { method: 'PUT', body: value })),
)
const luaValue = value.replace(/\\/g, '\\\\').replace(/"/g, '\\"')
const get = await wrk(
  muster.url,
  `request = function() return wrk.format("GET", "/api/state/bench/" .. math.random(0, ${KEYS - 1})) end`,
  { seconds: SECONDS },
)
const put = await wrk(
  muster.url,
  `request = function() return wrk.format("PUT", "/api/state/bench/" .. math.random(0, ${KEYS - 1}), {["Content-Type"]="application/json"}, "${luaValue}") end`,
  { seconds: SECONDS },
)
await muster.stop()

console.log(`value ${value.length} bytes, ${KEYS} keys, 32 connections, ${SECONDS} s each (wrk -t2)`)
console.log(`baseline Bun.serve  ${fmt(base)}`)
console.log(`GET /api/state/k    ${fmt(get)}   ratio ${((get.rps / base.rps) * 100).toFixed(1)}% (target >= 50%)`)
console.log(`PUT /api/state/k    ${fmt(put)}   ratio ${((put.rps / base.rps) * 100).toFixed(1)}% (target >= 15%)`)

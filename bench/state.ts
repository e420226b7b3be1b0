// State store throughput: GET and PUT of a ~1 KB JSON value over 1000 keys at 32
// connections, against a bare Bun.serve hello-world measured in the same run, then the
// same PUTs after five 10 MB values, and etcd's v3 JSON gateway when etcd is installed.
// GETs and their baseline are driven by one wrk thread (on 2 cores a second one takes
// the server's CPU), PUTs and theirs by two. The ratios are against the hello-world
// driven by the same wrk script (random keys, the same 1 KB PUT bodies), so the load
// generator's own cost is the same on both sides; the ratio against a plain `GET /`
// of the hello-world (the cheapest request wrk can make) is printed beside it. GETs
// alternate with their baseline in one-second slices; the PUT runs (Muster's, then the
// references') are bracketed by their baseline. Every run is preceded by a second of
// unrecorded warm-up (JIT).
// Targets (reported as met / NOT MET, not asserted): GET >= 70% of baseline, PUT >= 30% with
// p99 < 20 ms (after the large values too), PUT >= 3x etcd's.
// Beside them, the floor (bench/floor.ts): the state route's own work (the store's read and
// Muster's response; the PUT handler body with its rows and group commit) behind a bare
// Bun.serve, measured the same way, so a run shows how much of the distance to the
// hello-world is Muster's per-request handling and how much the store and the answer.
// And a naive key/value server (bench/kv.ts: one row per key, a SELECT per GET, SQLite's
// defaults), the reference the issue names: what Bun and bun:sqlite give a write with nothing on top.
import { alternate, fmt, hasWrk, startBaseline, startEtcd, startMuster, startReference, startPg, wrk, wrkAll, type LoadResult } from './lib'

if (!hasWrk()) {
  console.error('bench/state needs wrk (apt-get install wrk)')
  process.exit(1)
}
const SECONDS = Number(process.env.BENCH_SECONDS ?? 5)
const WARMUP = 1
const KEYS = 1000
const value = JSON.stringify({
  owner: 'agent-7',
  description: 'x'.repeat(900),
  tags: ['bench', 'state', 'kv'],
  updated: '2026-01-01T00:00:00Z',
})
const getLua = `request = function() return wrk.format("GET", "/api/state/bench/" .. math.random(0, ${KEYS - 1})) end`
const luaValue = value.replace(/\\/g, '\\\\').replace(/"/g, '\\"')
const putLua = () =>
  `request = function() return wrk.format("PUT", "/api/state/bench/" .. math.random(0, ${KEYS - 1}), {["Content-Type"]="application/json"}, "${luaValue}") end`

const fill = (url: string) =>
  Promise.all(Array.from({ length: KEYS }, (_, i) => fetch(`${url}/api/state/bench/${i}`, { method: 'PUT', body: value })))
const baseline = await startBaseline()
const muster = await startMuster()
const floor = await startReference('floor')
const kv = await startReference('kv')
for (const p of [muster, floor, kv]) await fill(p.url)
// GETs: the baseline, the references and Muster in alternating one-second slices (the machine's drift hits all alike).
const [base1, floorGet, kvGet, get] = await alternate([baseline, floor, kv, muster].map((p) => ({ url: p.url, lua: getLua })), { seconds: SECONDS, slices: SECONDS, threads: 1, warmup: WARMUP })
const plain1 = await wrk(baseline.url, '', { seconds: 2, threads: 1 })
// PUTs: the p99 target needs one unbroken run of Muster (a stall must not fall between slices).
// Muster's two runs come first, then the references': the naive KV's writes (its inline
// checkpoints, its files removed at stop) left the disk busy for seconds and put 72-111 ms
// p99s into Muster's after-10 MB run when that followed them. The baseline is measured
// before and after them all, and averaged.
const baseBefore = await wrk(baseline.url, putLua(), { seconds: Math.ceil(SECONDS / 2), warmup: WARMUP })
const put = await wrk(muster.url, putLua(), { seconds: SECONDS, warmup: WARMUP })
// Large values must not slow the small writes that follow.
const big = new Uint8Array(10 * 1024 * 1024).fill(120)
for (let i = 0; i < 5; i++) await fetch(`${muster.url}/api/state/bench-big/${i}`, { method: 'PUT', body: big, headers: { 'content-type': 'application/octet-stream' } })
const putAfterBig = await wrk(muster.url, putLua(), { seconds: SECONDS })
await muster.stop()
const floorPut = await wrk(floor.url, putLua(), { seconds: SECONDS, warmup: WARMUP })
await floor.stop()
const kvPut = await wrk(kv.url, putLua(), { seconds: SECONDS, warmup: WARMUP })
await kv.stop()
const baseAfter = await wrk(baseline.url, putLua(), { seconds: Math.ceil(SECONDS / 2) })
const base: LoadResult = {
  rps: (baseBefore.rps + baseAfter.rps) / 2,
  p50ms: Math.max(baseBefore.p50ms, baseAfter.p50ms),
  p99ms: Math.max(baseBefore.p99ms, baseAfter.p99ms),
  errors: baseBefore.errors + baseAfter.errors,
}
const plain = await wrk(baseline.url, '', { seconds: 2 })
await baseline.stop()

// etcd's v3 JSON gateway: keys and values base64, PUT /v3/kv/put, GET as POST /v3/kv/range.
const etcd = await startEtcd()
let etcdPut: LoadResult | null = null
let etcdGet: LoadResult | null = null
if (etcd) {
  const b64 = (text: string) => Buffer.from(text).toString('base64')
  await Promise.all(Array.from({ length: KEYS }, (_, i) => fetch(`${etcd.url}/v3/kv/put`, { method: 'POST', body: JSON.stringify({ key: b64(`bench/${i}`), value: b64(value) }) })))
  const keys = Array.from({ length: KEYS }, (_, i) => b64(`bench/${i}`))
  const lua = (path: string, withValue: boolean) => `local keys = {${keys.map((k) => `"${k}"`).join(',')}}
request = function() return wrk.format("POST", "${path}", {["Content-Type"]="application/json"}, '{"key":"' .. keys[math.random(1, ${KEYS})] .. '"${withValue ? `,"value":"${b64(value)}"` : ''}}') end`
  etcdPut = await wrk(etcd.url, lua('/v3/kv/put', true), { seconds: SECONDS, warmup: WARMUP })
  etcdGet = await wrk(etcd.url, lua('/v3/kv/range', false), { seconds: SECONDS })
  await etcd.stop()
}

const pct = (a: LoadResult, b: LoadResult) => `${((a.rps / b.rps) * 100).toFixed(1)}%`
const verdict = (ok: boolean) => (ok ? 'met' : 'NOT MET')
const putOk = (r: LoadResult) => r.rps / base.rps >= 0.3 && r.p99ms < 20
console.log(`value ${value.length} bytes, ${KEYS} keys, 32 connections, ${SECONDS} s each after ${WARMUP} s of warm-up`)
console.log(`baseline GET / -t1        ${fmt(plain1)}`)
console.log(`baseline, GET script -t1  ${fmt(base1)}`)
console.log(`floor GET -t1             ${fmt(floorGet)}   ratio ${pct(floorGet, base1)}`)
console.log(`naive KV GET -t1          ${fmt(kvGet)}   ratio ${pct(kvGet, base1)}`)
console.log(`GET /api/state/k -t1      ${fmt(get)}   ratio ${pct(get, base1)} (target >= 70%: ${verdict(get.rps / base1.rps >= 0.7)}; of GET /: ${pct(get, plain1)}; of the floor: ${pct(get, floorGet)})`)
console.log(`baseline GET / -t2        ${fmt(plain)}`)
console.log(`baseline, PUT script -t2  ${fmt(base)}`)
console.log(`floor PUT                 ${fmt(floorPut)}   ratio ${pct(floorPut, base)}`)
console.log(`naive KV PUT              ${fmt(kvPut)}   ratio ${pct(kvPut, base)}`)
console.log(`PUT /api/state/k          ${fmt(put)}   ratio ${pct(put, base)} (target >= 30%, p99 < 20 ms: ${verdict(putOk(put))}; of GET /: ${pct(put, plain)}; of the floor: ${pct(put, floorPut)}; of the naive KV: ${pct(put, kvPut)})`)
console.log(`PUT after 5 x 10 MB       ${fmt(putAfterBig)}   ratio ${pct(putAfterBig, base)} (target as PUT: ${verdict(putOk(putAfterBig))})`)
if (etcdPut && etcdGet) {
  console.log(`etcd PUT /v3/kv/put       ${fmt(etcdPut)}`)
  console.log(`etcd GET /v3/kv/range     ${fmt(etcdGet)}`)
  const times = (a: LoadResult, b: LoadResult) => a.rps / b.rps
  console.log(`Muster / etcd: PUT ${times(put, etcdPut).toFixed(2)}x (target >= 3x: ${verdict(times(put, etcdPut) >= 3)}), GET ${times(get, etcdGet).toFixed(2)}x`)
} else console.log('etcd: not installed (apt-get install etcd-server), no comparison')

// PostgreSQL mode (docs/replicas.md): the same GETs and PUTs with one and
// with two replicas on one database, wrk's connections split between the replicas. No
// target: what a user gives up for replicas, measured beside the embedded figures above.
const pg = await startPg()
if (!pg) console.log('PostgreSQL mode: skipped (PostgreSQL is not installed)')
else {
  try {
    for (const n of [1, 2]) {
      const set = await pg.replicas(n, ['--log-level', 'warn'])
      try {
        await fill(set.urls[0])
        const g = await wrkAll(set.urls, getLua, { seconds: SECONDS, threads: 1 })
        const p = await wrkAll(set.urls, putLua(), { seconds: SECONDS })
        console.log(`PostgreSQL x${n} GET -t1   ${fmt(g)}   ratio ${pct(g, base1)}`)
        console.log(`PostgreSQL x${n} PUT       ${fmt(p)}   ratio ${pct(p, base)}`)
      } finally {
        await set.stop()
      }
    }
  } finally {
    await pg.stop()
  }
}

// State PUT on PostgreSQL against its floor (bench/pg-floor.ts: the same rows in a bare
// transaction per request), one and two replicas on one throwaway cluster with
// production durability. Floor and Muster alternate in slices, so a shared machine's
// drift hits both alike; wrk's connections split between the replicas (or floors). A
// second floor takes event ids from a sequence: what gapless ids cost a bare transaction.
// Targets (issue 36, reported, not asserted): 1 replica >= 3,000 PUT/s with p99 < 20 ms,
// 2 replicas >= 2,500 PUT/s.
// With a second checkout (A/B), its Muster runs in the same slices on a database of its own.
// Run: bun bench/pg-state.ts [seconds per server, default 9] [slices, default 3] [other checkout]
import { SQL } from 'bun'
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { pgBinaries, startCluster } from '../test/pg'
import { fmt, hasWrk, mergeSlices, spawnChild, startMuster, wrkAll, type LoadResult, type Proc } from './lib'

const SECONDS = Number(process.argv[2] ?? 9)
const SLICES = Number(process.argv[3] ?? 3)
const OTHER = process.argv[4]
const KEYS = 1000
const CONNECTIONS = 32
const TARGETS: Record<number, number> = { 1: 3000, 2: 2500 }

if (!hasWrk()) throw new Error('bench/pg-state needs wrk (apt-get install wrk)')
const bins = pgBinaries()
if (!bins) throw new Error('bench/pg-state needs PostgreSQL (apt-get install postgresql)')

const value = JSON.stringify({ owner: 'agent-7', description: 'x'.repeat(900), tags: ['bench', 'state', 'kv'], updated: '2026-01-01T00:00:00Z' })
const lua = `request = function() return wrk.format("PUT", "/api/state/bench/" .. math.random(0, ${KEYS - 1}), {["Content-Type"]="application/json"}, "${value.replace(/\\/g, '\\\\').replace(/"/g, '\\"')}") end`

/** A floor server on `database`, stopped (and its output dir removed) by stop(). */
async function startFloor(database: string, ...flags: string[]): Promise<Proc> {
  const dir = mkdtempSync(join(tmpdir(), 'muster-pg-floor-'))
  const proc = spawnChild([process.execPath, join(import.meta.dir, 'pg-floor.ts'), database, ...flags], { stdout: 'pipe', stderr: 'inherit' })
  const reader = proc.stdout.getReader()
  let text = ''
  let m: RegExpExecArray | null = null
  while (!(m = /pg-floor on (\S+),/.exec(text))) {
    const { value: chunk, done } = await reader.read()
    if (done) throw new Error(`pg-floor exited: ${text}`)
    text += new TextDecoder().decode(chunk)
  }
  reader.releaseLock()
  return { url: m[1], pid: proc.pid, stop: async () => (proc.kill('SIGTERM'), void (await proc.exited), rmSync(dir, { recursive: true, force: true })) }
}

const cluster = await startCluster(bins, { durable: true })
let dbs = 0
async function database(): Promise<string> {
  const name = `pgstate_${process.pid}_${++dbs}`
  const admin = new SQL(`${cluster.url}/postgres`)
  await admin.unsafe(`CREATE DATABASE ${name}`)
  await admin.close()
  return `${cluster.url}/${name}`
}
const fill = (url: string) => Promise.all(Array.from({ length: KEYS }, (_, i) => fetch(`${url}/api/state/bench/${i}`, { method: 'PUT', body: value })))

console.log(`PUT of ${value.length} bytes over ${KEYS} keys, ${CONNECTIONS} connections, ${SECONDS} s per server in ${SLICES} alternating slices, PostgreSQL with fsync`)
try {
  for (const n of [1, 2]) {
    const sets: { name: string; procs: Proc[] }[] = []
    try {
      for (const [name, start] of [
        ['floor ', (db: string) => startFloor(db)],
        // Not a floor of the same work: events without gapless ids, for what those cost.
        ['seq   ', (db: string) => startFloor(db, '--sequence')],
        ['Muster', (db: string) => startMuster(['--database', db, '--log-level', 'warn'])],
        ...(OTHER ? [['other ', (db: string) => startMuster(['--database', db, '--log-level', 'warn'], OTHER)] as const] : []),
      ] as const) {
        const set = { name, procs: [] as Proc[] }
        sets.push(set)
        const db = await database()
        for (let i = 0; i < n; i++) set.procs.push(await start(db))
        await fill(set.procs[0].url)
      }
      const slice = { seconds: Math.max(1, Math.round(SECONDS / SLICES)), connections: CONNECTIONS }
      // Warm-up, unrecorded (JIT, prepared statements on every pooled connection).
      for (const set of sets) await wrkAll(set.procs.map((p) => p.url), lua, { ...slice, seconds: 1 })
      const runs: LoadResult[][] = sets.map(() => [])
      for (let s = 0; s < SLICES; s++) for (const [k, set] of sets.entries()) runs[k].push(await wrkAll(set.procs.map((p) => p.url), lua, slice))
      const [f, ...rest] = runs.map(mergeSlices)
      console.log(`floor  x${n} ${fmt(f)}`)
      const [seq, ...musters] = rest
      console.log(`floor with sequence ids x${n} ${fmt(seq)}`)
      for (const [k, m] of musters.entries()) {
        const met = m.rps >= TARGETS[n] && (n > 1 || m.p99ms < 20)
        console.log(`${sets[k + 2].name} x${n} ${fmt(m)}   of the floor: ${((m.rps / f.rps) * 100).toFixed(1)}%   target >= ${TARGETS[n]}/s${n === 1 ? ', p99 < 20 ms' : ''}: ${met ? 'met' : 'NOT MET'}`)
      }
    } finally {
      await Promise.all(sets.flatMap((set) => set.procs).map((p) => p.stop()))
    }
  }
} finally {
  await cluster.stop()
}

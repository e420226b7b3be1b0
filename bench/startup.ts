// The compiled server (built as npm run build builds it): time from spawn to the first
// healthy GET /health over 20 starts (min / median / max), each on a fresh data dir, and
// its resident memory once idle after start (median of the first three starts: which
// pages of the binary a start maps varies by a few MB from one start to the next).
// Targets (reported, not asserted): start to healthy < 150 ms, idle RSS < 60 MB.
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { buildServer } from '../build'
import { freePort, rssMb, spawnChild } from './lib'

const STARTS = Number(process.env.BENCH_STARTS ?? 20)
const RSS_STARTS = Math.min(3, STARTS)
const IDLE_MS = 2000
const dir = mkdtempSync(join(tmpdir(), 'muster-startup-'))
process.on('exit', () => rmSync(dir, { recursive: true, force: true }))
const binary = join(dir, 'muster-server')
await buildServer(binary)

const times: number[] = []
const rss: number[] = []
for (let i = 0; i < STARTS; i++) {
  const port = freePort()
  const data = join(dir, `data-${i}`)
  const t0 = performance.now()
  const proc = spawnChild([binary, '--bind', `127.0.0.1:${port}`, '--dashboard-bind', '', '--data-dir', data], { stdout: 'ignore', stderr: 'ignore' })
  for (;;) {
    const ok = await fetch(`http://127.0.0.1:${port}/health`).then((r) => r.ok, () => false)
    if (ok) break
    if (performance.now() - t0 > 10_000) throw new Error('server did not become healthy in 10 s')
    await Bun.sleep(2)
  }
  times.push(performance.now() - t0)
  if (i < RSS_STARTS) {
    await Bun.sleep(IDLE_MS) // idle: jobs scheduled, nothing to do
    rss.push(rssMb(proc.pid))
  }
  proc.kill('SIGTERM')
  await proc.exited
}
const sorted = (a: number[]) => [...a].sort((x, y) => x - y)
const median = (a: number[]) => sorted(a)[Math.floor(a.length / 2)]
const verdict = (value: number, target: number, unit: string) => `(target < ${target} ${unit}: ${value < target ? 'met' : 'NOT met'})`
const ms = (v: number) => `${v.toFixed(0)} ms`
console.log(`compiled server, ${STARTS} starts on fresh data dirs`)
console.log(`start to healthy  min ${ms(sorted(times)[0])}  median ${ms(median(times))}  max ${ms(sorted(times).at(-1)!)}   ${verdict(median(times), 150, 'ms')} by the median`)
console.log(`idle RSS ${IDLE_MS / 1000} s after start  ${median(rss).toFixed(1)} MB (median of ${rss.map((r) => r.toFixed(1)).join(', ')})   ${verdict(median(rss), 60, 'MB')}`)

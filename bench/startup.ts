// The compiled server: time from spawn to the first healthy GET /health over 20 starts
// (min / median / max), and its resident memory once idle after start.
// Targets (reported, not asserted): start to healthy < 150 ms, idle RSS < 60 MB.
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { freePort, rssMb } from './lib'

const ROOT = join(import.meta.dir, '..')
const STARTS = Number(process.env.BENCH_STARTS ?? 20)
const dir = mkdtempSync(join(tmpdir(), 'muster-startup-'))
const binary = join(dir, 'muster-server')
const build = Bun.spawnSync(
  [process.execPath, 'build', '--compile', 'app.ts', 'store/checkpointer.ts', 'lib/rules-worker.ts', '--outfile', binary],
  { cwd: ROOT, stdout: 'pipe', stderr: 'pipe' },
)
if (build.exitCode !== 0) throw new Error(`build failed: ${build.stderr}`)

const times: number[] = []
let idleRss = NaN
for (let i = 0; i < STARTS; i++) {
  const port = freePort()
  const data = join(dir, `data-${i}`)
  const t0 = performance.now()
  const proc = Bun.spawn([binary, '--bind', `127.0.0.1:${port}`, '--dashboard-bind', '', '--data-dir', data], { stdout: 'ignore', stderr: 'ignore' })
  for (;;) {
    const ok = await fetch(`http://127.0.0.1:${port}/health`).then((r) => r.ok, () => false)
    if (ok) break
    if (performance.now() - t0 > 10_000) throw new Error('server did not become healthy in 10 s')
    await Bun.sleep(2)
  }
  times.push(performance.now() - t0)
  if (i === 0) {
    await Bun.sleep(2000) // idle: workers started, nothing to do
    idleRss = rssMb(proc.pid)
  }
  proc.kill('SIGTERM')
  await proc.exited
}
rmSync(dir, { recursive: true, force: true })
times.sort((a, b) => a - b)
const ms = (v: number) => `${v.toFixed(0)} ms`
console.log(`compiled server, ${STARTS} starts on fresh data dirs`)
console.log(`start to healthy  min ${ms(times[0])}  median ${ms(times[Math.floor(times.length / 2)])}  max ${ms(times.at(-1)!)}   (target < 150 ms)`)
console.log(`idle RSS after start  ${idleRss.toFixed(1)} MB   (target < 60 MB)`)

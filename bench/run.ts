// npm run bench [name…]: runs bench/<name>.ts for each name given, or every benchmark.
import { readdirSync } from 'node:fs'
import { join } from 'node:path'

// Not benchmarks: this runner, the shared helpers, the reference servers bench/state.ts runs beside
// Muster, and the A/B comparison, which needs another checkout to compare with.
const HELPERS = ['run.ts', 'lib.ts', 'floor.ts', 'kv.ts', 'reference.ts', 'ab.ts']
const all = readdirSync(import.meta.dir).filter((f) => f.endsWith('.ts') && !HELPERS.includes(f)).map((f) => f.slice(0, -3)).sort()
const chosen = process.argv.slice(2).length ? process.argv.slice(2) : all
for (const name of chosen) {
  if (!all.includes(name)) {
    console.error(`unknown benchmark ${name}; have: ${all.join(', ')}`)
    process.exit(2)
  }
  console.log(`\n=== bench/${name}.ts ===`)
  const proc = Bun.spawn([process.execPath, join(import.meta.dir, `${name}.ts`)], { stdout: 'inherit', stderr: 'inherit' })
  // A SIGTERM to this runner goes on to the benchmark running, which then stops what it started.
  const forward = () => proc.kill('SIGTERM')
  process.on('SIGTERM', forward)
  const code = await proc.exited
  process.off('SIGTERM', forward)
  if (code !== 0) process.exit(1)
}

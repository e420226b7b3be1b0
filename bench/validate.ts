// Validation speed: a 1 MB TypeScript-like source file against 100 rules, timed in
// the pure engine (validation/rules.ts) and over HTTP (POST /api/validate/{project},
// rules loaded from the database on every request). Two rule sets: "typical"
// (rules that rarely match, as lint rules do) and "dense" (10 of the 100 rules
// match on most lines, ~78k violations; over HTTP the first 10,000 are listed).
// Reports the median ms per validation (min-max in brackets) against the targets
// of issue 16 (engine < 40 ms, HTTP < 60 ms, set for the typical rules; the dense
// ones are held to them too), and beside it a POST of the same 1 MB body to a bare
// Bun.serve (the transport floor).
import { checkRules, evaluate } from '../validation/rules'
import { startBaseline, startMuster } from './lib'

const RUNS = Number(process.env.BENCH_RUNS ?? 10)

function source(): string {
  const lines: string[] = []
  let size = 0
  for (let i = 0; size < 1024 * 1024; i++) {
    const line = [
      `export function handler${i}(req: Request, ctx: Context): Promise<Response> {`,
      `  const value = await ctx.store.get(\`key/\${req.url}\`) // fetch ${i}`,
      `  if (!value) return new Response('missing', { status: 404 })`,
      `  return Response.json({ id: ${i}, value, at: Date.now() })`,
      `}`,
    ][i % 5]
    lines.push(i === 7000 ? 'console.log("debug") // TODO remove' : line)
    size += line.length + 1
  }
  return lines.join('\n')
}

function ruleSet(dense: boolean) {
  return Array.from({ length: 100 }, (_, i) => {
    const id = `r${String(i).padStart(3, '0')}`
    if (dense && i < 10) return { rule_id: id, pattern: ['\\bconst\\b', 'ctx\\.\\w+', '\\d+', 'Response', '\\(\\w+'][i % 5] }
    switch (i % 10) {
      case 0: return { rule_id: id, pattern: 'no-console-log', match_type: 'custom' }
      case 1: return { rule_id: id, pattern: `SPDX-License-Identifier|@license ${i}`, match_type: 'missing', severity: 'warning' }
      case 2: return { rule_id: id, pattern: '(?i)\\b(todo|fixme|xxx)\\b', applies_to: ['*.ts', '*.tsx'] }
      case 3: return { rule_id: id, pattern: `AKIA[0-9A-Z]{16}|secret_${i}` }
      case 4: return { rule_id: id, pattern: `:\\s*any${i}\\b`, stack: i % 20 === 4 ? 'react' : '' }
      default: return { rule_id: id, pattern: `\\bforbidden_${i}\\s*\\(` }
    }
  })
}

const TARGET = { engine: 40, http: 60 }

interface Timing {
  median: number
  min: number
  max: number
}
async function time(fn: () => unknown | Promise<unknown>): Promise<Timing> {
  await fn() // warm-up: compiles and caches the patterns
  const ms: number[] = []
  for (let i = 0; i < RUNS; i++) {
    const t0 = performance.now()
    await fn()
    ms.push(performance.now() - t0)
  }
  ms.sort((a, b) => a - b)
  return { median: ms[Math.floor(ms.length / 2)], min: ms[0], max: ms[ms.length - 1] }
}
const against = (t: Timing, target: number) =>
  `${t.median.toFixed(1).padStart(6)} ms [${t.min.toFixed(1)}-${t.max.toFixed(1)}] (target < ${target} ms: ${t.median < target ? 'met' : 'NOT met'})`

const content = source()
const lineCount = content.split('\n').length
const muster = await startMuster()
const baseline = await startBaseline()
console.log(`content ${(content.length / 1024 / 1024).toFixed(2)} MB, ${lineCount} lines, 100 rules, median of ${RUNS} runs`)
for (const dense of [false, true]) {
  const raw = ruleSet(dense)
  const project = dense ? 'dense' : 'typical'
  const rules = checkRules(raw, { project })
  let count = 0
  const engine = await time(() => (count = evaluate(rules, { content, filename: 'src/handlers.ts' }).length))
  const put = await fetch(`${muster.url}/api/validate/${project}/rules`, { method: 'PUT', body: JSON.stringify(raw), headers: { 'content-type': 'application/json' } })
  if (!put.ok) throw new Error(`PUT rules: ${put.status} ${await put.text()}`)
  const body = JSON.stringify({ content, filename: 'src/handlers.ts' })
  let httpCount = 0
  const http = await time(async () => {
    const res = await fetch(`${muster.url}/api/validate/${project}`, { method: 'POST', body, headers: { 'content-type': 'application/json' } })
    httpCount = ((await res.json()) as { count: number }).count
  })
  if (httpCount !== count) throw new Error(`engine found ${count} violations, HTTP ${httpCount}`)
  const floor = await time(async () => {
    await (await fetch(baseline.url, { method: 'POST', body, headers: { 'content-type': 'application/json' } })).text()
  })
  console.log(
    `${project.padEnd(8)} ${String(count).padStart(6)} violations   engine ${against(engine, TARGET.engine)}   HTTP ${against(http, TARGET.http)}` +
      `   bare Bun.serve POST ${floor.median.toFixed(1)} ms`,
  )
}
await muster.stop()
await baseline.stop()

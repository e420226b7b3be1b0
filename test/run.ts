// `npm test`: the whole suite on the embedded SQLite database, then again on
// PostgreSQL (a throwaway cluster, test/pg.ts) for the files that can reach it,
// then the real agents (test/agents, `npm run test:agents`) on SQLite, and one total
// at the end. Without PostgreSQL installed the second run cannot happen, and the
// last lines say so. The agents run once: they test the wiring between an agent's
// own loop and Muster (hooks, CLI, MCP), which takes the same service code on either
// backend, and the hook services' storage is tested on both in test/hooks*.test.ts.
import { testsWithoutPostgres, pgBinaries, startCluster, type Cluster } from './pg'

const args = process.argv.slice(2)

async function suite(label: string, env: Record<string, string>, extra: string[] = []): Promise<{ pass: number; fail: number; code: number }> {
  console.log(`\n===== test suite on ${label} =====\n`)
  const proc = Bun.spawn([process.execPath, 'test', '--timeout', '30000', ...extra, ...args], {
    cwd: `${import.meta.dir}/..`,
    env: { ...process.env, ...env },
    stdout: 'pipe',
    stderr: 'pipe',
  })
  let text = ''
  const pump = async (stream: ReadableStream<Uint8Array>, out: NodeJS.WriteStream) => {
    const decoder = new TextDecoder()
    for await (const chunk of stream) {
      const s = decoder.decode(chunk, { stream: true })
      text += s
      out.write(s)
    }
  }
  await Promise.all([pump(proc.stdout, process.stdout), pump(proc.stderr, process.stderr)])
  const code = await proc.exited
  const count = (word: string) => Number([...text.matchAll(new RegExp(`^\\s*(\\d+) ${word}$`, 'gm'))].pop()?.[1] ?? 0)
  return { pass: count('pass'), fail: count('fail'), code }
}

// Given files to run, bun's filter decides (test/agents included when named); else the agents get a pass of their own.
const agentsApart = args.length === 0
const results: { label: string; pass: number; fail: number; code: number }[] = []
results.push({ label: 'SQLite', ...(await suite('SQLite (embedded)', {}, agentsApart ? ['--path-ignore-patterns=test/agents/**'] : [])) })

const bins = pgBinaries()
let missing = ''
if (!bins) missing = 'PostgreSQL is not installed (no initdb under /usr/lib/postgresql/*/bin): the PostgreSQL run was SKIPPED.'
else {
  let cluster: Cluster | null = null
  try {
    cluster = await startCluster(bins)
    // A file that never reaches PostgreSQL would only repeat what it did in the SQLite run.
    const once = testsWithoutPostgres(import.meta.dir)
    console.log(`\n${once.length} files never reach PostgreSQL and run in the SQLite pass only: ${once.join(' ')}`)
    const skip = ['--pass-with-no-tests', '--path-ignore-patterns=test/agents/**', ...once.map((f) => `--path-ignore-patterns=test/${f}`)]
    results.push({ label: 'PostgreSQL', ...(await suite(`PostgreSQL (${cluster.url})`, { MUSTER_TEST_PG: cluster.url }, skip)) })
  } catch (err) {
    missing = `the PostgreSQL cluster could not start (${(err as Error).message.trim()}): the PostgreSQL run was SKIPPED.`
  } finally {
    await cluster?.stop()
  }
}

// Two files at once: an agent spends most of a scenario waiting on its model and its hooks, and the pass halves.
if (agentsApart) results.push({ label: 'Agents', ...(await suite('real agents (test/agents, SQLite)', {}, ['--timeout', '90000', '--parallel=2', 'test/agents'])) })

console.log('\n===== summary =====')
for (const r of results) console.log(`${r.label.padEnd(11)} ${r.pass} pass, ${r.fail} fail${r.code !== 0 && r.fail === 0 ? ` (exit ${r.code})` : ''}`)
if (missing) console.log(`\n!!! WARNING: ${missing}\n!!! Install the Debian package "postgresql" to run the suite on both backends.\n`)
const pass = results.reduce((n, r) => n + r.pass, 0)
const fail = results.reduce((n, r) => n + r.fail, 0)
console.log(` ${pass} pass`)
console.log(` ${fail} fail`)
process.exit(results.some((r) => r.code !== 0) ? 1 : 0)

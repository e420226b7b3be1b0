// The cost of a token check: state GETs under wrk with the admin token, an agent token and a
// viewer token, against one server, in alternating slices with a bare Bun.serve (run
// in the same invocation) as the floor. An agent or viewer token is a map lookup after
// its first use, so its figure should be within noise of the admin token's.
// Run: bun bench/access.ts   (BENCH_SECONDS, default 12)
import { alternate, fmt, hasWrk, startBaseline, startMuster } from './lib'

if (!hasWrk()) throw new Error('wrk is needed: apt-get install wrk')
const SECONDS = Number(process.env.BENCH_SECONDS ?? 12)
const ADMIN = 'bench-admin-token'

const [baseline, muster] = await Promise.all([startBaseline(), startMuster(['--auth-token', ADMIN])])
try {
  const admin = { authorization: `Bearer ${ADMIN}`, 'content-type': 'application/json' }
  await fetch(`${muster.url}/api/state/bench`, { method: 'PUT', headers: admin, body: JSON.stringify({ value: 'x'.repeat(200) }) })
  const token = async (role: string) =>
    ((await (await fetch(`${muster.url}/api/tokens`, { method: 'POST', headers: admin, body: JSON.stringify({ name: `bench-${role}`, role }) })).json()) as { token: string }).token
  const bearers = { admin: ADMIN, agent: await token('agent'), viewer: await token('viewer') }
  const lua = (bearer: string) => `wrk.method = "GET"\nwrk.path = "/api/state/bench"\nwrk.headers["Authorization"] = "Bearer ${bearer}"`
  const targets = [
    { url: baseline.url, lua: 'wrk.method = "GET"' },
    ...Object.values(bearers).map((b) => ({ url: muster.url, lua: lua(b) })),
  ]
  const [bare, byAdmin, byAgent, byViewer] = await alternate(targets, { seconds: SECONDS, slices: SECONDS / 2, threads: 1, warmup: 2 })
  console.log(`bare Bun.serve         ${fmt(bare)}`)
  for (const [label, r] of [['admin token ', byAdmin], ['agent token ', byAgent], ['viewer token', byViewer]] as const)
    console.log(`GET, ${label}      ${fmt(r)}   ${((100 * r.rps) / bare.rps).toFixed(1)}% of bare, ${((100 * r.rps) / byAdmin.rps).toFixed(1)}% of admin`)
} finally {
  await Promise.all([baseline.stop(), muster.stop()])
}

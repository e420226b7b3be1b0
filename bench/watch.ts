// Long-poll fan-out: 1,000 requests held on one state key (If-None-Match +
// ?wait=), one write, and the time until every one of them has its answer
// (target < 100 ms); the server's RSS idle and with the 1,000 requests held.
// Clients are raw TCP sockets in this process, so the figure is the server's
// fan-out, not a client connection pool's.
import { rssMb, startMuster } from './lib'

const HELD = Number(process.env.BENCH_WATCHERS ?? 1000)
const ROUNDS = 3

const m = await startMuster()
const { hostname: host, port } = new URL(m.url)
const put = async (value: unknown) => (await (await fetch(`${m.url}/api/state/bench/watched`, { method: 'PUT', body: JSON.stringify(value) })).json()).hash as string

/** Opens `n` sockets, each with one held GET; resolves per socket with the time its answer's first bytes came. */
async function holdAll(n: number, etag: string) {
  const answered: Promise<{ at: number; status: number }>[] = []
  const sockets: { end(): void }[] = []
  await Promise.all(
    Array.from({ length: n }, async () => {
      let resolve!: (v: { at: number; status: number }) => void
      answered.push(new Promise((r) => (resolve = r)))
      let seen = false
      const socket = await Bun.connect({
        hostname: host.replace(/^\[|\]$/g, ''),
        port: Number(port),
        socket: {
          data(_s, chunk) {
            if (seen) return
            seen = true
            resolve({ at: performance.now(), status: Number(/^HTTP\/1\.1 (\d+)/.exec(chunk.toString())?.[1]) })
          },
        },
      })
      socket.write(`GET /api/state/bench/watched?wait=60s HTTP/1.1\r\nHost: ${host}\r\nIf-None-Match: "${etag}"\r\n\r\n`)
      sockets.push(socket)
    }),
  )
  return { answered, close: () => sockets.forEach((s) => s.end()) }
}

await put({ round: 0 })
await Bun.sleep(500)
const idle = rssMb(m.pid)
const results: { all: number; first: number; rss: number }[] = []
for (let round = 1; round <= ROUNDS; round++) {
  const etag = await put({ round: round - 0.5 })
  const held = await holdAll(HELD, etag)
  // Give every request time to reach its wait (they are parsed and registered asynchronously).
  await Bun.sleep(1500)
  const rss = rssMb(m.pid)
  const early = await Promise.race([Promise.all(held.answered).then(() => true), Bun.sleep(0).then(() => false)])
  if (early) throw new Error('requests were answered before the write')
  const t0 = performance.now()
  await put({ round })
  const answers = await Promise.all(held.answered)
  const bad = answers.filter((a) => a.status !== 200).length
  if (bad) throw new Error(`${bad} watchers did not get 200`)
  results.push({ all: Math.max(...answers.map((a) => a.at)) - t0, first: Math.min(...answers.map((a) => a.at)) - t0, rss })
  held.close()
  await Bun.sleep(300)
}
await m.stop()

console.log(`${HELD} long-polls held on one key (If-None-Match, wait=60s), one PUT; ${ROUNDS} rounds`)
for (const [i, r] of results.entries())
  console.log(`round ${i + 1}: all ${HELD} answered ${r.all.toFixed(1)} ms after the PUT was sent (first ${r.first.toFixed(1)} ms)   RSS held ${r.rss.toFixed(0)} MB`)
const worst = Math.max(...results.map((r) => r.all))
console.log(`worst ${worst.toFixed(1)} ms (target < 100 ms)   server RSS idle ${idle.toFixed(0)} MB, with ${HELD} held ${Math.max(...results.map((r) => r.rss)).toFixed(0)} MB`)

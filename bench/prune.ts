// Event pruning and the event loop: a fleet writes tens of thousands of events between two
// prune runs. The same prune (all but the newest 1,000 of BENCH_EVENTS, default 80,000) in one
// unit, as it was, and in steps (services/events.ts pruneEvents), with the longest pause a 1 ms
// timer sees meanwhile: every request waits at least that long. In-process, on SQLite (the
// server's own store, so the pause is the one its requests would see).
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { startServer } from '../app'
import { loadConfig } from '../lib/config'
import { pruneEvents } from '../services/events'

const EVENTS = Number(process.env.BENCH_EVENTS ?? 80_000)
const KEEP = 1000
const ROUNDS = 2

const dir = mkdtempSync(join(tmpdir(), 'muster-prune-'))
const server = await startServer(loadConfig(['--bind', '127.0.0.1:0', '--dashboard-bind', '', '--data-dir', dir, '--log-level', 'warn', '--prune-interval', '24h']))
const { ctx } = server

/** EVENTS events of about 250 bytes each, 1,000 to a unit. */
async function fill() {
  for (let i = 0; i < EVENTS; i += 1000)
    await ctx.store.write(async (tx) => {
      for (let k = i; k < Math.min(EVENTS, i + 1000); k++) await tx.emit('bench.prune', { k, pad: 'x'.repeat(200) }, '')
    })
}

/** Runs `prune`, timing it and the longest gap between two ticks of a 1 ms timer. */
async function timed(prune: () => Promise<number>) {
  let last = performance.now()
  let longest = 0
  const tick = setInterval(() => {
    const now = performance.now()
    longest = Math.max(longest, now - last)
    last = now
  }, 1)
  const t0 = performance.now()
  const deleted = await prune()
  clearInterval(tick)
  return `${deleted} events in ${(performance.now() - t0).toFixed(0)} ms, longest pause of the event loop ${longest.toFixed(1)} ms`
}

try {
  for (let r = 1; r <= ROUNDS; r++) {
    await fill()
    console.log(`round ${r}, one unit: ${await timed(() => ctx.store.write(async (tx) => await tx.events.prune(await ctx.store.events.pruneCutoff(KEEP), Number.MAX_SAFE_INTEGER)))}`)
    await fill()
    console.log(`round ${r}, in steps: ${await timed(() => pruneEvents(ctx, KEEP))}`)
  }
} finally {
  await server.stop()
  rmSync(dir, { recursive: true, force: true })
}

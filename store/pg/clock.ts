// Replicas compare timestamps they wrote (liveness, TTLs, visibility timeouts), so
// they all read the database's clock: the offset from ours is measured at start and
// every few seconds after. Half the round trip corrects for the query's own time, so
// the error is at most half of it: of a few reads, the one with the shortest round
// trip is kept (on a busy host one read may wait milliseconds for a CPU), timed to a
// fraction of a millisecond (an offset rounded to a whole millisecond the wrong way
// puts a TTL a millisecond past its end).
import type { SQL } from 'bun'
import { setClockOffset } from '../../lib/time'

const READS = 5

/**
 * Our wall clock at `performance.now()` instants, to a few microseconds: Date.now() counts
 * whole milliseconds, so the instant it ticks over (waited for, under a millisecond) anchors it.
 */
function wallClock(): (perf: number) => number {
  const start = Date.now()
  let tick: number
  let at: number
  do {
    at = performance.now()
    tick = Date.now()
  } while (tick === start)
  return (perf) => tick + (perf - at)
}

export async function syncClock(sql: SQL): Promise<void> {
  const wall = wallClock()
  let best = { rtt: Infinity, offset: 0 }
  for (let i = 0; i < READS; i++) {
    const sent = performance.now()
    const [row] = await sql.unsafe('SELECT (EXTRACT(EPOCH FROM clock_timestamp()) * 1000)::float8 AS ms')
    const received = performance.now()
    if (received - sent < best.rtt) best = { rtt: received - sent, offset: Number(row.ms) - wall((sent + received) / 2) }
  }
  setClockOffset(best.offset)
}

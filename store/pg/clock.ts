// Replicas compare timestamps they wrote (liveness, TTLs, visibility timeouts), so
// they all read the database's clock: the offset from ours is measured at start and
// every few seconds after (half the round trip corrects for the query's own time).
import type { SQL } from 'bun'
import { setClockOffset } from '../../lib/time'

export async function syncClock(sql: SQL): Promise<void> {
  const sent = Date.now()
  const [row] = await sql.unsafe('SELECT (EXTRACT(EPOCH FROM clock_timestamp()) * 1000)::float8 AS ms')
  const received = Date.now()
  setClockOffset(Number(row.ms) - (sent + received) / 2)
}

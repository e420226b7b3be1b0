// TTL expiry: four times a second, grants whose expires_at has passed are released
// (reason `expired`), so a grant outlives its TTL by less than a second. Each release
// emits its event (lock.released, reservation.released, task.requeued or task.failed),
// so the events a pass emitted say whether it did anything worth a log line.
import type { Ctx } from '../services/context'
import type { Tx } from '../store'
import { nowIso } from '../lib/time'
import { onLeader } from './timer'

export const EXPIRY_INTERVAL_MS = 250

export function startExpiryJob(ctx: Ctx): () => Promise<void> {
  return onLeader(ctx, 'expiry', EXPIRY_INTERVAL_MS, async () => {
    let events = 0
    const counting = (tx: Tx): Tx => ({ ...tx, emit: (...args) => (events++, tx.emit(...args)) })
    const now = nowIso()
    await ctx.store.write(async (tx) => {
      for (const releaser of ctx.releasers) await releaser.expire(counting(tx), now)
    })
    return { events }
  })
}

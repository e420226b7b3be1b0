// Hook sessions ended by /clear or resume hold their instance for the next SessionStart
// (services/hooks/session.ts); one that nobody took over deregisters once its hold runs
// out, on the leader, whichever replica ended the session.
import type { Ctx } from '../services/context'
import { releaseExpiredHolds } from '../services/hooks/session'
import { onLeader } from './timer'

/** How often held sessions are looked at: an unclaimed instance goes within a hold and this. */
export const SESSION_HOLDS_EVERY_MS = 2_000

export function startSessionHoldsJob(ctx: Ctx): () => Promise<void> {
  return onLeader(ctx, 'session-holds', SESSION_HOLDS_EVERY_MS, async () => ({ deregistered: await releaseExpiredHolds(ctx) }))
}

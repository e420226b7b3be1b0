// Pruning: every --prune-interval, keep only the newest --event-retention events
// (oldest ids go first), and the newest COMPLIANCE_RUNS_KEPT runs of each
// (instance, contract) so scheduled compliance does not grow the database forever.
import type { Ctx } from '../services/context'
import { pruneEvents } from '../services/events'
import { pruneCompliance } from '../services/compliance'
import { onLeader } from './timer'

export const COMPLIANCE_RUNS_KEPT = 100

export function startPruneJob(ctx: Ctx): () => Promise<void> {
  return onLeader(ctx, 'prune', ctx.config.pruneIntervalMs, async () => {
    await pruneEvents(ctx, ctx.config.eventRetention)
    await pruneCompliance(ctx, COMPLIANCE_RUNS_KEPT)
  })
}

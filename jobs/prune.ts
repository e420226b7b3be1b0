// Pruning: every --prune-interval, keep only the newest --event-retention events
// (spec 6.6, oldest ids go first), and the newest COMPLIANCE_RUNS_KEPT runs of each
// (instance, contract) so scheduled compliance does not grow the database forever.
import type { Ctx } from '../lib/context'
import { every } from './timer'

export const COMPLIANCE_RUNS_KEPT = 100

export function startPruneJob(ctx: Ctx): () => void {
  return every('prune', ctx.config.pruneIntervalMs, async () => {
    await ctx.store.events.prune(ctx.config.eventRetention)
    await ctx.store.compliance.prune(COMPLIANCE_RUNS_KEPT)
  })
}

// Event pruning (spec 6.6): every --prune-interval, keep only the newest
// --event-retention events, removing the oldest ids first.
import type { Ctx } from '../lib/context'
import { every } from './timer'

export function startPruneJob(ctx: Ctx): () => void {
  return every('prune', ctx.config.pruneIntervalMs, () => ctx.store.events.prune(ctx.config.eventRetention))
}

// Pruning: every --prune-interval, keep only the newest --event-retention events
// (oldest ids go first), the newest COMPLIANCE_RUNS_KEPT runs of each (instance,
// contract) so scheduled compliance does not grow the database forever, and of each
// state key the versions --state-history and --state-history-max-age keep.
import type { Ctx } from '../services/context'
import { pruneEvents } from '../services/events'
import { pruneCompliance } from '../services/compliance'
import { afterMs, nowIso } from '../lib/time'
import type { PruneLimits } from '../store/versioned'
import { onLeader } from './timer'

export const COMPLIANCE_RUNS_KEPT = 100

/**
 * One unit of state pruning looks at this many keys and deletes about this many versions
 * (a 64 KB version frees 16 pages), so the writer is never held for long: the other
 * writes queued meanwhile go in between two units.
 */
export const HISTORY_STEP: PruneLimits = { keys: 100, versions: 128 }
/** A run stops after this long and the next one goes on from the key it reached. */
const HISTORY_RUN_MS = 10_000

export function startPruneJob(ctx: Ctx): () => Promise<void> {
  let after = ''
  return onLeader(ctx, 'prune', ctx.config.pruneIntervalMs, async () => {
    const events = await pruneEvents(ctx, ctx.config.eventRetention)
    const compliance_runs = await pruneCompliance(ctx, COMPLIANCE_RUNS_KEPT)
    const history = await pruneStateHistory(ctx, after)
    after = history.after
    return { events, compliance_runs, state_versions: history.deleted }
  })
}

/**
 * Prunes state history from the key after `after` until every key is done (`after` is '') or the
 * run's time is up or the server stops (`after` is the key to go on after); `deleted` versions went.
 */
export async function pruneStateHistory(ctx: Ctx, after = ''): Promise<{ after: string; deleted: number }> {
  const { stateHistory, stateHistoryMaxAgeMs } = ctx.config
  const before = stateHistoryMaxAgeMs === null ? null : afterMs(nowIso(), -stateHistoryMaxAgeMs)
  const retention = { keep: stateHistory, before }
  const until = performance.now() + HISTORY_RUN_MS
  let deleted = 0
  for (;;) {
    const step = await ctx.store.write(async (tx) => tx.state.prune(retention, after, HISTORY_STEP))
    deleted += step.deleted
    if (step.next === null) return { after: '', deleted }
    after = step.next
    if (performance.now() > until || ctx.shutdown.aborted) return { after, deleted }
  }
}

// Compliance on a schedule: every --compliance-interval, services/compliance.ts checks every instance's contracts.
import type { Ctx } from '../services/context'
import { runCompliance } from '../services/compliance'
import { onLeader } from './timer'

/** Starts the schedule; the returned stop cancels a run in progress (its live calls too) and waits for it. */
export function startComplianceJob(ctx: Ctx): () => Promise<void> {
  const shutdown = new AbortController()
  const stop = onLeader(ctx, 'compliance', ctx.config.complianceIntervalMs, async () => {
    const runs = await runCompliance(ctx, shutdown.signal)
    return { checked: runs.length, failed: runs.filter((r) => !r.pass).length }
  })
  return async () => {
    shutdown.abort()
    await stop()
  }
}

// Liveness (spec part 3): every --liveness-interval, active instances without a
// heartbeat within --stale-timeout become stale, each announced as instance.stale.
import type { Ctx } from '../lib/context'
import type { Instance } from '../store/instances'
import { every } from './timer'

/** One check, shared by the job and POST /api/liveness/check; returns the newly stale instances. */
export async function checkLiveness(ctx: Ctx): Promise<Instance[]> {
  const cutoff = new Date(Date.now() - ctx.config.staleTimeoutMs).toISOString()
  const stale = await ctx.store.instances.markStale(cutoff)
  for (const i of stale) await ctx.bus.publish('instance.stale', { id: i.id, name: i.name, workspace: i.workspace, last_seen: i.last_seen }, 'liveness')
  return stale
}

export function startLivenessJob(ctx: Ctx): () => void {
  return every('liveness', ctx.config.livenessIntervalMs, () => checkLiveness(ctx))
}

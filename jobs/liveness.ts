// Liveness on a schedule: every --liveness-interval, services/instances.ts marks
// instances without a sign of life within --stale-timeout stale.
import type { Ctx } from '../services/context'
import { checkLiveness } from '../services/instances'
import { onLeader } from './timer'

export function startLivenessJob(ctx: Ctx): () => Promise<void> {
  return onLeader(ctx, 'liveness', ctx.config.livenessIntervalMs, async () => ({ stale: (await checkLiveness(ctx)).length }))
}

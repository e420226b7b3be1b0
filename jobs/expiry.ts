// TTL expiry: four times a second, grants whose expires_at has passed are released
// (reason `expired`), so a grant outlives its TTL by less than a second.
import type { Ctx } from '../services/context'
import { expireGrants } from '../services/releasers'
import { onLeader } from './timer'

export const EXPIRY_INTERVAL_MS = 250

export function startExpiryJob(ctx: Ctx): () => Promise<void> {
  return onLeader(ctx, 'expiry', EXPIRY_INTERVAL_MS, () => expireGrants(ctx))
}

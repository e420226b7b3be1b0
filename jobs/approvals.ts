// Approvals whose holder went away: a pending request past its wait (plus a grace) that
// no replica answers any more is expired here, with its event, so lists and the dashboard
// never show it waiting forever. Runs on the leader.
import type { Ctx } from '../services/context'
import { expireOverdue } from '../services/approvals'
import { onLeader } from './timer'

export const APPROVALS_INTERVAL_MS = 5000

export function startApprovalsJob(ctx: Ctx): () => Promise<void> {
  return onLeader(ctx, 'approvals', APPROVALS_INTERVAL_MS, async () => ({ expired: await expireOverdue(ctx) }))
}

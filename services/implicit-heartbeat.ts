// Any authenticated call made with a valid instance token is a sign of life, as
// good as a heartbeat: it refreshes last_seen and turns a stale instance active.
// Written at most once per TOUCH_EVERY_MS per instance (never slower than half
// the stale timeout), so an agent's burst of calls costs one write, not one each.
import { log } from '../obs/log'
import type { Ctx } from './context'
import { track } from '../lib/background'
import { heartbeat } from './instances'

export const TOUCH_EVERY_MS = 5000
/** Instances remembered; past this the memory is simply forgotten (a few extra writes). */
const MAX_REMEMBERED = 10_000

const lastTouched = new Map<string, number>()

export function seen(ctx: Ctx, instanceId: string): void {
  const now = Date.now()
  const last = lastTouched.get(instanceId)
  if (last !== undefined && now - last < Math.min(TOUCH_EVERY_MS, ctx.config.staleTimeoutMs / 2)) return
  if (lastTouched.size >= MAX_REMEMBERED) lastTouched.clear()
  lastTouched.set(instanceId, now)
  track(heartbeat(ctx, undefined, instanceId).catch((err) => log.error({ err, instance_id: instanceId }, 'implicit heartbeat failed')))
}

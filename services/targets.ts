// The target policy of this server (lib/targets.ts) from its configuration and
// the ports it actually listens on.
import type { Ctx } from './context'
import { invalid } from '../lib/errors'
import { parseHostPort } from '../lib/config'
import { targetRefusal, type TargetPolicy } from '../lib/targets'

export function targetPolicy(ctx: Ctx): TargetPolicy {
  const bound = [ctx.apiBind, ctx.dashboardBind].map((b) => (b ? parseHostPort(b) : null)).filter((b) => b !== null)
  return {
    allowLinkLocal: ctx.config.allowLinkLocalTargets,
    ownPorts: bound.map((b) => b.port),
    ownHosts: bound.map((b) => b.host.toLowerCase()),
  }
}

/** Why this server must not call `url`, or null. */
export const refusal = (ctx: Ctx, url: string | URL): string | null => targetRefusal(new URL(url), targetPolicy(ctx))

/** Throws invalid (400) naming `field` when this server must not call `url`. */
export function checkTarget(ctx: Ctx, url: string, field: string): void {
  const why = refusal(ctx, url)
  if (why) throw invalid(`invalid ${field}: ${why}`)
}

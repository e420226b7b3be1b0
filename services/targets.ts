// The target policy of this server (lib/targets.ts) from its configuration, the
// ports it actually listens on and, under a wildcard bind, this machine's addresses
// (read on each check: an interface can gain an address while the server runs).
import type { Ctx } from './context'
import { parseHostPort } from '../lib/config'
import { lookup } from 'node:dns/promises'
import { isIP } from 'node:net'
import { networkInterfaces } from 'node:os'
import { ownHosts, targetRefusal, type TargetPolicy } from '../lib/targets'

export function targetPolicy(ctx: Ctx): TargetPolicy {
  const bound = [ctx.apiBind, ctx.dashboardBind].map((b) => (b ? parseHostPort(b) : null)).filter((b) => b !== null)
  return {
    allowLinkLocal: ctx.config.allowLinkLocalTargets,
    ownPorts: bound.map((b) => b.port),
    ownHosts: ownHosts(
      bound.map((b) => b.host),
      () => Object.values(networkInterfaces()).flatMap((list) => (list ?? []).map((i) => i.address)),
    ),
  }
}

/** Why this server must not call `url`, or null. */
export const refusal = (ctx: Ctx, url: string | URL): string | null => targetRefusal(new URL(url), targetPolicy(ctx))

/**
 * refusal(), and for a hostname also every address it resolves to now: a name of
 * one's own pointing at 169.254.169.254 is refused when a request is about to go
 * out. (The request resolves it again; a DNS answer that changes in between is not caught.)
 */
export async function resolvedRefusal(ctx: Ctx, url: string | URL): Promise<string | null> {
  const target = new URL(url)
  const why = refusal(ctx, target)
  const host = target.hostname.replace(/^\[|\]$/g, '')
  if (why || isIP(host)) return why
  const addresses = await lookup(host, { all: true }).catch(() => [])
  for (const { address, family } of addresses) {
    const resolved = new URL(target)
    resolved.hostname = family === 6 ? `[${address}]` : address
    const because = refusal(ctx, resolved)
    if (because) return `${target.hostname} resolves to ${because}`
  }
  return null
}

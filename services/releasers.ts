// What ends a grant its holder did not release: its TTL passing (jobs/expiry.ts runs
// expireGrants four times a second) or its holder going stale or deregistering
// (services/instances.ts runs releaseHeld inside the unit that marks or deletes it, so
// the release commits with that change). Each primitive (locks, reservations, task
// claims) exports one Releaser; services/coordination.ts lists them on the server's
// context, so what gets released never depends on which modules happen to be imported.
import { nowIso } from '../lib/time'
import type { Ctx } from './context'
import type { Tx } from '../store'
import type { Instance } from '../store/instances'
import type { ReleaseReason } from './holders'

export type GoneReason = Extract<ReleaseReason, 'holder_stale' | 'holder_deregistered'>

export interface Releaser {
  /** Releases the grants whose time ran out by `now`. */
  expire(tx: Tx, now: string): Promise<void>
  /** Releases what `instance` holds. */
  gone(tx: Tx, instance: Instance, reason: GoneReason): Promise<void>
}

/** One expiry pass over every primitive, in one unit. */
export function expireGrants(ctx: Ctx): Promise<void> {
  const now = nowIso()
  return ctx.store.write(async (tx) => {
    for (const releaser of ctx.releasers) await releaser.expire(tx, now)
  })
}

/** Releases everything `instance` holds, inside the caller's unit. */
export async function releaseHeld(ctx: Ctx, tx: Tx, instance: Instance, reason: GoneReason): Promise<void> {
  for (const releaser of ctx.releasers) await releaser.gone(tx, instance, reason)
}

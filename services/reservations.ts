// Path reservation use cases: all-or-nothing grants decided inside one unit (so
// two racing callers can never both get overlapping exclusive paths), renew,
// release, force, the pre-commit check, and the releases the holder machinery
// triggers (expiry, holder stale or gone).
import { nowIso } from '../lib/time'
import type { Ctx } from './context'
import type { Tx } from '../store'
import type { Instance } from '../store/instances'
import type { Holding, HoldingsReads, Reservation } from '../store/reservations'
import { conflict, forbidden, invalid, notFound } from '../lib/errors'
import { overlaps, patternProblem } from '../lib/overlap'
import { recordAudit, type AuditScope } from './audit'
import { SOURCE, expiresAt, touch, withHolders, type ReleaseReason } from './holders'
import type { Releaser } from './releasers'

export const MAX_PATHS = 100

export interface NewReservation {
  project: string
  paths: string[]
  exclusive: boolean
  ttl?: number
  reason: string | null
}

/** One overlap in the way: the caller's path, the held path and whose reservation it is. */
export interface Overlap {
  path: string
  held_path: string
  holding: Holding
}

export function checkProject(project: unknown): string {
  if (typeof project !== 'string' || project.trim() === '') throw invalid('project is required')
  if (project.length > 1024) throw invalid('invalid project: at most 1024 characters')
  return project
}

export function checkPaths(paths: unknown): string[] {
  if (!Array.isArray(paths) || paths.length === 0) throw invalid('paths is required: 1 to 100 globs')
  if (paths.length > MAX_PATHS) throw invalid(`invalid paths: at most ${MAX_PATHS}`)
  for (const p of paths) {
    if (typeof p !== 'string') throw invalid('invalid paths: expected strings')
    const problem = patternProblem(p)
    if (problem) throw invalid(`invalid paths: ${problem}`)
  }
  return paths
}

/**
 * What stands in the way of `paths` in `project` inside a unit (or on committed reads):
 * every overlap with a reservation of another instance than `self` where at least one
 * side is exclusive. Task claims and agent hooks decide with this too.
 */
export async function overlapsIn(
  reads: HoldingsReads,
  project: string,
  paths: string[],
  exclusive: boolean,
  self: string | null,
): Promise<Overlap[]> {
  // Only the reservations the index says could meet `paths`: the same answer as all of them.
  const held = await reads.holdingsFor(project, paths)
  // The project's case rule is read only when something could overlap at all (most checks find nothing).
  const caseless = held.some((r) => r.instance_id !== self && (exclusive || r.exclusive)) && (await reads.caseInsensitive(project))
  return overlapsWith(held, paths, exclusive, self, caseless)
}

/** Overlaps between `paths` and the reservations of others where at least one side is exclusive. */
function overlapsWith(held: readonly Holding[], paths: string[], exclusive: boolean, self: string | null, caseless: boolean): Overlap[] {
  const out: Overlap[] = []
  for (const r of held) {
    if (r.instance_id === self || (!exclusive && !r.exclusive)) continue
    for (const path of paths) for (const h of r.paths) if (overlaps(path, h, caseless)) out.push({ path, held_path: h, holding: r })
  }
  return out
}

/** The 409 body's conflicts, with each reservation's expiry and reason as read in the deciding unit. */
export type Found = { path: string; held_path: string; reservation: Reservation }[]

export async function withReservations(get: (id: string) => Promise<Reservation | null>, found: Overlap[]): Promise<Found> {
  const out: Found = []
  for (const o of found) {
    const reservation = await get(o.holding.id)
    if (reservation) out.push({ path: o.path, held_path: o.held_path, reservation })
  }
  return out
}

export async function conflictsBody(ctx: Ctx, found: Found) {
  const rows = found.map(({ path, held_path, reservation: r }) => ({
    path,
    held_path,
    reservation_id: r.id,
    instance_id: r.instance_id,
    exclusive: r.exclusive,
    expires_at: r.expires_at,
    reason: r.reason,
  }))
  return withHolders(ctx, rows)
}

async function released(tx: Tx, rows: Reservation[], reason: ReleaseReason): Promise<void> {
  for (const r of rows)
    await tx.emit('reservation.released', { id: r.id, project: r.project, instance_id: r.instance_id, paths: r.paths, reason }, SOURCE)
}

export const reservationReleaser: Releaser = {
  expire: async (tx, now) => released(tx, await tx.reservations.removeExpired(now), 'expired'),
  gone: async (tx, instance, reason) => released(tx, await tx.reservations.removeInstance(instance.id), reason),
}

/** Writes a grant inside the caller's unit (which has found nothing in the way), with its reservation.granted event. */
export async function grantIn(tx: Tx, holder: Instance, input: NewReservation): Promise<Reservation> {
  const r: Reservation = {
    id: crypto.randomUUID(),
    project: input.project,
    instance_id: holder.id,
    paths: input.paths,
    exclusive: input.exclusive,
    fence: await tx.holders.nextFence(),
    reason: input.reason,
    created_at: nowIso(),
    expires_at: expiresAt(input.ttl),
  }
  await tx.reservations.insert(r)
  await tx.emit('reservation.granted', { id: r.id, project: r.project, instance_id: r.instance_id, paths: r.paths, exclusive: r.exclusive }, SOURCE)
  return r
}

/** Ends a reservation inside the caller's unit, with its reservation.released event; null when it was gone already. */
export async function releaseIn(tx: Tx, id: string, reason: ReleaseReason): Promise<Reservation | null> {
  const gone = await tx.reservations.remove(id)
  if (gone) await released(tx, [gone], reason)
  return gone
}

/** Grants every path or none: 409 naming each overlap with another instance's reservation. */
export async function reserve(ctx: Ctx, audit: AuditScope | undefined, holder: Instance, input: NewReservation): Promise<Reservation> {
  const result = await ctx.store.write(async (tx): Promise<{ found: Found } | { granted: Reservation }> => {
    await touch(tx, holder.id)
    const found = await overlapsIn(tx.reservations, input.project, input.paths, input.exclusive, holder.id)
    // The refusal commits too: the call still counts as a heartbeat.
    if (found.length) return { found: await withReservations((id) => tx.reservations.get(id), found) }
    const r = await grantIn(tx, holder, input)
    await recordAudit(tx, audit, `${r.project}: ${r.paths.join(', ')} (fence ${r.fence})`)
    return { granted: r }
  })
  if ('found' in result) throw conflict('paths are reserved', { conflicts: await conflictsBody(ctx, result.found) })
  return result.granted
}

/** The holder's reservation inside a unit: 404 when gone, 403 for anyone else. */
async function own(tx: Tx, holder: Instance, id: string): Promise<Reservation> {
  await touch(tx, holder.id)
  const r = await tx.reservations.get(id)
  if (!r) throw notFound('reservation not found')
  if (r.instance_id !== holder.id) throw forbidden('reservation is held by another instance')
  return r
}

export function renewReservation(ctx: Ctx, audit: AuditScope | undefined, holder: Instance, id: string, ttl: number): Promise<Reservation> {
  return ctx.store.write(async (tx) => {
    await own(tx, holder, id)
    const r = (await tx.reservations.renew(id, expiresAt(ttl)))!
    await recordAudit(tx, audit, `expires ${r.expires_at}`)
    return r
  })
}

/** Release by the holder, or by anyone with `force` (reason `forced`). */
export function releaseReservation(ctx: Ctx, audit: AuditScope | undefined, holder: Instance | null, id: string): Promise<void> {
  return ctx.store.write(async (tx) => {
    if (holder) await own(tx, holder, id)
    const gone = await releaseIn(tx, id, holder ? 'released' : 'forced')
    if (!gone) throw notFound('reservation not found')
    await recordAudit(tx, audit, holder ? '' : 'forced')
  })
}

/** The pre-commit check: overlaps with what others (everyone, without a caller) hold exclusively. */
export async function checkPathsFree(ctx: Ctx, caller: Instance | null, project: string, paths: string[]) {
  if (caller) await ctx.store.write((tx) => touch(tx, caller.id))
  const overlapping = await overlapsIn(ctx.store.reservations, project, paths, false, caller?.id ?? null)
  // Read apart from the list: one released in between no longer counts.
  const found = await withReservations((id) => ctx.store.reservations.get(id), overlapping)
  if (found.length) throw conflict('paths are reserved', { conflicts: await conflictsBody(ctx, found) })
  return { ok: true as const, conflicts: [] as never[] }
}

// Lock use cases: acquire (or renew), wait in line, release, force, and the
// releases the holder machinery triggers (expiry, holder stale or gone). Every
// decision is made inside one unit of work, so of N racing callers exactly as
// many win as there are free slots. Waiters queue per lock name in arrival order
// and are woken by the commit of a release (lock.released), never by polling.
import { nowIso } from '../lib/time'
import type { Bus } from './bus'
import type { Ctx } from './context'
import type { Tx } from '../store'
import type { Instance } from '../store/instances'
import type { LockHolderRow } from '../store/locks'
import { conflict, forbidden, invalid, notFound } from '../lib/errors'
import { Waiters } from '../lib/waiters'
import { recordAudit, type AuditScope } from './audit'
import { throwIfEnded } from './credentials'
import { SOURCE, expiresAt, touchId, withHolders, type ReleaseReason } from './holders'
import type { Releaser } from './releasers'

export const LIMIT_MAX = 1000

export interface AcquireOptions {
  ttl?: number
  waitMs: number
  /** Aborted when the caller hangs up: it leaves the line rather than be granted a lock it never hears of. */
  signal?: AbortSignal
  /** Aborted when the caller's token is revoked or expires: it leaves the line with a 401. */
  until?: AbortSignal
  limit?: number
  reason: string | null
}

/** The calling instance: a lock needs only its id (the unit's heartbeat refuses one gone meanwhile). */
type Holder = Pick<Instance, 'id'>

/** A grant as the acquire answers it. */
export type Grant = LockHolderRow

/** The callers waiting for one lock, in arrival order. */
interface Queue {
  tickets: object[]
  /** The lock's limit as last seen: only the first `limit` in line can be granted, so only they are woken. */
  limit: number
}

/** Waiting callers of one server (ctx.lockLines): their lines per lock name, and their wake-ups (one key per caller). */
export interface LockLines {
  waiters: Waiters<object>
  queues: Map<string, Queue>
}

/** The server's lock lines, woken by the commit of each lock release. */
export function lockLines(bus: Bus, shutdown: AbortSignal): LockLines {
  const lines: LockLines = { waiters: new Waiters(shutdown), queues: new Map() }
  bus.listen((event) => {
    if (event.topic === 'lock.released' && event.source === SOURCE) wakeHead(lines, (event.data as { name: string }).name)
  })
  return lines
}

/** Wakes those at the head of the line for `name`: the only ones a free slot can go to. */
function wakeHead(lines: LockLines, name: string): void {
  const q = lines.queues.get(name)
  if (q) for (const ticket of q.tickets.slice(0, q.limit)) lines.waiters.wake(ticket)
}

async function released(tx: Tx, rows: LockHolderRow[], reason: ReleaseReason): Promise<void> {
  for (const r of rows) await tx.emit('lock.released', { name: r.name, instance_id: r.instance_id, fence: r.fence, reason }, SOURCE)
}

export const lockReleaser: Releaser = {
  expire: async (tx, now) => released(tx, await tx.locks.removeExpired(now), 'expired'),
  gone: async (tx, instance, reason) => released(tx, await tx.locks.removeInstance(instance.id), reason),
}

type Attempt = { grant: LockHolderRow } | { held: LockHolderRow[] }

/**
 * One try, inside one unit: renew when the caller holds the lock already, else
 * take a free slot unless earlier waiters are in line for it (`ahead` of them).
 * A refusal commits too: the call still counts as a heartbeat.
 */
async function attempt(tx: Tx, audit: AuditScope | undefined, holder: Holder, name: string, o: AcquireOptions, ahead: number): Promise<Attempt> {
  await touchId(tx, holder.id)
  const rows = await tx.locks.holders(name)
  const limit = rows[0]?.limit ?? o.limit ?? 1
  if (rows.length && o.limit !== undefined && o.limit !== limit)
    throw invalid(`invalid limit: the lock is held with limit ${limit}`)
  const expires = expiresAt(o.ttl)
  if (rows.some((r) => r.instance_id === holder.id)) {
    const grant = (await tx.locks.renew(name, holder.id, o.reason, expires))!
    await recordAudit(tx, audit, `renewed, fence ${grant.fence}`)
    return { grant }
  }
  if (rows.length + ahead >= limit) return { held: rows }
  const grant: LockHolderRow = {
    name,
    instance_id: holder.id,
    limit,
    fence: await tx.holders.nextFence(),
    reason: o.reason,
    acquired_at: nowIso(),
    expires_at: expires,
  }
  await tx.locks.insert(grant)
  await tx.emit('lock.acquired', { name, instance_id: holder.id, fence: grant.fence }, SOURCE)
  await recordAudit(tx, audit, `fence ${grant.fence}`)
  return { grant }
}

const heldError = async (ctx: Ctx, rows: LockHolderRow[]) =>
  conflict('lock is held', { holders: await withHolders(ctx, rows.map(holderFields)) })

/** Takes a slot of lock `name` (or renews the caller's), waiting up to `wait_ms` in line; 409 naming the holders otherwise. */
export async function acquireLock(ctx: Ctx, audit: AuditScope | undefined, holder: Holder, name: string, o: AcquireOptions): Promise<Grant> {
  const line = ctx.lockLines
  const queued = line.queues.get(name)?.tickets.length ?? 0
  const first = await ctx.store.write((tx) => attempt(tx, audit, holder, name, o, queued))
  if ('grant' in first) return first.grant
  if (o.waitMs === 0) throw await heldError(ctx, first.held)

  const ticket = {}
  const queue = line.queues.get(name) ?? { tickets: [], limit: 1 }
  line.queues.set(name, queue)
  queue.tickets.push(ticket)
  const deadline = Date.now() + o.waitMs
  try {
    for (;;) {
      // Registered before the re-check, so a release committed in between still wakes it.
      throwIfEnded(o.until)
      const wait = line.waiters.wait(ticket, Math.max(0, deadline - Date.now()), o.until)
      if (o.signal?.aborted) wait.cancel()
      else o.signal?.addEventListener('abort', wait.cancel, { once: true })
      const r = await ctx.store.write((tx) => attempt(tx, audit, holder, name, o, o.signal?.aborted ? Infinity : queue.tickets.indexOf(ticket)))
      if ('grant' in r) {
        wait.cancel()
        return r.grant
      }
      queue.limit = Math.max(queue.limit, r.held[0]?.limit ?? o.limit ?? 1)
      const why = await wait.done
      o.signal?.removeEventListener('abort', wait.cancel)
      throwIfEnded(o.until)
      if (why !== 'woken') throw await heldError(ctx, r.held)
    }
  } finally {
    const at = queue.tickets.indexOf(ticket)
    queue.tickets.splice(at, 1)
    if (!queue.tickets.length) line.queues.delete(name)
    // Leaving from the head lets the next in line within the free slots.
    else if (at < queue.limit) wakeHead(line, name)
  }
}

const holderFields = (r: LockHolderRow) => ({
  instance_id: r.instance_id,
  fence: r.fence,
  reason: r.reason,
  acquired_at: r.acquired_at,
  expires_at: r.expires_at,
})

/** Held locks (optionally under a name prefix) with their holders' names and liveness, by name. */
export async function listLocks(ctx: Ctx, prefix?: string) {
  const rows = await ctx.store.locks.list(prefix)
  const views = await withHolders(ctx, rows.map((r) => ({ ...holderFields(r), name: r.name, limit: r.limit })))
  const out: { name: string; limit: number; holders: Omit<(typeof views)[number], 'name' | 'limit'>[] }[] = []
  for (const { name, limit, ...h } of views) {
    if (out.at(-1)?.name !== name) out.push({ name, limit, holders: [] })
    out.at(-1)!.holders.push(h)
  }
  return out
}

export async function getLock(ctx: Ctx, name: string) {
  const rows = await ctx.store.locks.holders(name)
  if (!rows.length) throw notFound('lock not held')
  return { name, limit: rows[0].limit, holders: await withHolders(ctx, rows.map(holderFields)) }
}

/** The holder's release: 404 when nobody holds the lock, 403 when the caller is not among its holders. */
export function releaseLock(ctx: Ctx, audit: AuditScope | undefined, holder: Holder, name: string): Promise<void> {
  return ctx.store.write(async (tx) => {
    await touchId(tx, holder.id)
    const rows = await tx.locks.holders(name)
    if (!rows.length) throw notFound('lock not held')
    const gone = rows.find((r) => r.instance_id === holder.id)
    if (!gone) throw forbidden('lock is held by another instance')
    await tx.locks.drop(name, holder.id)
    await released(tx, [gone], 'released')
    await recordAudit(tx, audit, `fence ${gone.fence}`)
  })
}

/** Releases every holder (reason `forced`); 404 when nobody holds the lock. */
export function forceReleaseLock(ctx: Ctx, audit: AuditScope | undefined, name: string): Promise<void> {
  return ctx.store.write(async (tx) => {
    const gone = await tx.locks.removeAll(name)
    if (!gone.length) throw notFound('lock not held')
    await released(tx, gone, 'forced')
    await recordAudit(tx, audit, `forced, fences ${gone.map((g) => g.fence).join(', ')}`)
  })
}

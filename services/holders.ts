// The holder machinery every coordination primitive shares (locks, reservations,
// task claims): each holder's call a sign of life, TTLs and their expiry, fences,
// and the 409 view of who is in the way.
// What releases a grant its holder did not release (TTL expiry, holder stale or
// gone) is services/releasers.ts.
import { nowIso, nowMs, parseDuration } from '../lib/time'
import type { Ctx } from './context'
import type { Tx } from '../store'
import type { Instance } from '../store/instances'
import type { HolderView } from '../store/holders'
import { forbidden, invalid } from '../lib/errors'
import { scopeFor, type AuditScope, type Caller } from './audit'

export const SOURCE = 'coordination'
export const TTL_MIN_MS = 1_000
export const TTL_MAX_MS = 604_800_000
export const WAIT_MAX_MS = 60_000

/** How a grant ended, as its release event says. */
export type ReleaseReason = 'released' | 'expired' | 'holder_stale' | 'holder_deregistered' | 'forced'

/**
 * A read of locks, reservations or tasks by an instance is a sign of life too (its
 * own unit). Reads need no token, so a caller without a known instance is no one here.
 */
export async function readerHeartbeat(ctx: Ctx, reader: Caller): Promise<void> {
  const id = reader.instanceId
  if (id) await ctx.store.write(async (tx) => void (await tx.instances.heartbeat(id)))
}

/**
 * Every call a holder makes counts as a heartbeat: inside the unit of its call,
 * last_seen is refreshed and a stale instance turns active (holding nothing: what it
 * held went when it turned stale). 403 when it deregistered meanwhile. Returns the
 * instance as it is now (capabilities included).
 */
export async function touch(tx: Tx, instanceId: string): Promise<Instance> {
  const instance = await tx.instances.heartbeat(instanceId)
  if (!instance) throw forbidden(UNKNOWN_TOKEN)
  return instance
}

/** touch for a call that needs nothing of its instance but that it exists: the same write, nothing read back. */
export async function touchId(tx: Tx, instanceId: string): Promise<void> {
  if (!(await tx.holders.beat(instanceId, nowIso()))) throw forbidden(UNKNOWN_TOKEN)
}

/** The 403 of a call whose X-Instance-Token names no registered instance (gone, or never). */
export const UNKNOWN_TOKEN = 'unknown instance token: register again'

/** Grants with their holder's name and liveness (read after the unit: names and statuses are committed data). */
export async function withHolders<T extends { instance_id: string }>(ctx: Ctx, rows: T[]): Promise<(HolderView & T)[]> {
  const views = await ctx.store.holders.views(rows.map((r) => r.instance_id))
  return rows.map((r) => ({ ...views.get(r.instance_id)!, ...r }))
}

/** The longest reason a grant keeps. */
export const REASON_MAX = 1000

/** An optional free-text `reason`: null when absent, at most REASON_MAX characters. */
export function reasonParam(reason: unknown): string | null {
  if (reason === undefined || reason === null) return null
  if (typeof reason !== 'string' || reason.length > REASON_MAX) throw invalid(`invalid reason: expected a string of at most ${REASON_MAX} characters`)
  return reason
}

/** The audit scope of a holder's call (a hook event acting as its session's instance): the actor is the instance id. */
export const holderScope = (instance: Instance, action: string, resource: string): AuditScope =>
  scopeFor({ actor: instance.id, instanceId: instance.id, role: 'agent', tokenId: null }, action, resource)

/** An optional ttl_ms: undefined, or an integer within the contract's bounds (else 400). */
export function ttlParam(ttl: unknown): number | undefined {
  if (ttl === undefined || ttl === null) return undefined
  if (typeof ttl !== 'number' || !Number.isInteger(ttl) || ttl < TTL_MIN_MS || ttl > TTL_MAX_MS)
    throw invalid(`invalid ttl_ms: expected an integer from ${TTL_MIN_MS} to ${TTL_MAX_MS}`)
  return ttl
}

/** An optional wait_ms (or any *_ms bounded by WAIT_MAX_MS): 0 when absent. */
export function waitMsParam(value: unknown, name = 'wait_ms', max = WAIT_MAX_MS): number {
  if (value === undefined || value === null) return 0
  if (typeof value !== 'number' || !Number.isInteger(value) || value < 0 || value > max)
    throw invalid(`invalid ${name}: expected an integer from 0 to ${max}`)
  return value
}

/** A `wait=DUR` query parameter (500ms, 25s): at most 60 s, else 400; absent: undefined. */
export function waitParam(value: string | undefined): number | undefined {
  if (value === undefined || value === '') return undefined
  const ms = parseDuration(value)
  if (ms === null) throw invalid('invalid wait: expected a duration like 500ms or 25s')
  if (ms > WAIT_MAX_MS) throw invalid('invalid wait: at most 60s')
  return ms
}

/** expires_at for a TTL from now: RFC 3339 UTC with ms, or null without a TTL. */
export const expiresAt = (ttl: number | undefined, now = nowMs()): string | null =>
  ttl === undefined ? null : new Date(now + ttl).toISOString()

// Who is calling: bearer-token auth, the instance behind X-Instance-Token, and the
// per-instance call counters (agent metrics).
import { timingSafeEqual } from 'node:crypto'
import type { Ctx } from '../services/context'
import type { MetricName } from '../services/metrics'
import type { Caller } from '../services/audit'
import { hashToken } from '../lib/token'
import { seen } from '../services/implicit-heartbeat'
import { log } from '../obs/log'
import { urlOf } from './url'
export { hashToken } from '../lib/token'
export type { Caller } from '../services/audit'

/** The WebSocket routes: the only ones where ?token= stands in for the header (browsers cannot set headers on an upgrade). */
export const WEBSOCKET_PATHS = new Set(['/api/events/subscribe'])

/** A real WebSocket handshake on a WebSocket route, not any request that claims `Upgrade: websocket`. */
const isUpgrade = (request: Request, path: string) =>
  request.method === 'GET' &&
  WEBSOCKET_PATHS.has(path) &&
  request.headers.get('upgrade')?.toLowerCase() === 'websocket' &&
  /\bupgrade\b/i.test(request.headers.get('connection') ?? '') &&
  request.headers.has('sec-websocket-key')

/**
 * Bearer check in constant time; GET /health is open. WebSocket upgrades may pass ?token= instead.
 * `path` is the request's path without the query, as the router matches it.
 */
export function authorized(ctx: Ctx, request: Request, path: string): boolean {
  const expected = ctx.config.authToken
  if (!expected) return true
  if (path === '/health' && request.method === 'GET') return true
  const header = request.headers.get('authorization') ?? ''
  let given = /^Bearer\s+(.+)$/i.exec(header)?.[1]?.trim()
  if (!given && isUpgrade(request, path)) given = urlOf(request).searchParams.get('token') ?? undefined
  const ok = !!given && timingSafeEqual(Buffer.from(hashToken(given), 'hex'), Buffer.from(hashToken(expected), 'hex'))
  if (!ok) log.warn({ method: request.method, path, reason: given ? 'wrong token' : 'no token' }, 'auth failure')
  return ok
}

const callers = new WeakMap<Request, Caller>()

/** Who a caller without a valid instance token is: whoever holds the server token, or anyone when there is none. */
export const actorWithoutInstance = (ctx: Ctx) => (ctx.config.authToken ? 'admin' : 'anonymous')

export async function callerOf(ctx: Ctx, request: Request): Promise<Caller> {
  const known = callers.get(request)
  if (known) return known
  const token = request.headers.get('x-instance-token')
  const instanceId = token ? await ctx.store.instances.idByTokenHash(hashToken(token)) : null
  if (instanceId) seen(ctx, instanceId)
  const caller = { actor: instanceId ?? actorWithoutInstance(ctx), instanceId }
  callers.set(request, caller)
  return caller
}

/** Counts `n` of an agent metric for the calling instance; a no-op for callers without a valid instance token. */
export async function countForCaller(ctx: Ctx, request: Request, name: MetricName, n = 1): Promise<void> {
  if (!request.headers.has('x-instance-token')) return
  const { instanceId } = await callerOf(ctx, request)
  if (instanceId) ctx.metrics.count(instanceId, name, n)
}



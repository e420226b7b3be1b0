// Who is calling: bearer-token auth, the instance behind X-Instance-Token, and the
// per-instance call counters (agent metrics).
import { timingSafeEqual } from 'node:crypto'
import type { Ctx } from '../services/context'
import type { MetricName } from '../lib/metrics'
import type { Caller } from '../services/audit'
import { hashToken } from '../lib/token'
import { seen } from '../services/implicit-heartbeat'
import { log } from '../lib/log'
export { hashToken } from '../lib/token'
export type { Caller } from '../services/audit'

/** Bearer check in constant time; GET /health is open. WebSocket upgrades may pass ?token= (browsers cannot set headers). */
export function authorized(ctx: Ctx, request: Request, url: URL): boolean {
  const expected = ctx.config.authToken
  if (!expected) return true
  if (url.pathname === '/health' && request.method === 'GET') return true
  const header = request.headers.get('authorization') ?? ''
  let given = /^Bearer\s+(.+)$/i.exec(header)?.[1]?.trim()
  if (!given && request.headers.get('upgrade')?.toLowerCase() === 'websocket') given = url.searchParams.get('token') ?? undefined
  const ok = !!given && timingSafeEqual(Buffer.from(hashToken(given), 'hex'), Buffer.from(hashToken(expected), 'hex'))
  if (!ok) log.warn({ method: request.method, path: url.pathname, reason: given ? 'wrong token' : 'no token' }, 'auth failure')
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



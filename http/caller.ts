// Who is calling: bearer-token auth, and the instance behind X-Instance-Token,
// resolved once per request for everyone who asks (audit scope, agent metrics,
// holders, the access log's actor).
import { timingSafeEqual } from 'node:crypto'
import type { Ctx } from '../services/context'
import type { MetricName } from '../services/metrics'
import type { Caller } from '../services/audit'
import type { Instance } from '../store/instances'
import { hashToken } from '../lib/token'
import { forbidden, invalid } from '../lib/errors'
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
  if (request.method === 'GET' && (path === '/health' || path === '/livez' || path === '/readyz')) return true
  const header = request.headers.get('authorization') ?? ''
  let given = /^Bearer\s+(.+)$/i.exec(header)?.[1]?.trim()
  if (!given && isUpgrade(request, path)) given = urlOf(request).searchParams.get('token') ?? undefined
  const ok = !!given && timingSafeEqual(Buffer.from(hashToken(given), 'hex'), Buffer.from(hashToken(expected), 'hex'))
  if (!ok) log.warn({ method: request.method, path, reason: given ? 'wrong token' : 'no token' }, 'auth failure')
  return ok
}

/** Who a caller without a valid instance token is: whoever holds the server token, or anyone when there is none. */
export const actorWithoutInstance = (ctx: Ctx) => (ctx.config.authToken ? 'admin' : 'anonymous')

// The lookup itself is kept, not its result: whoever asks while it runs (the agent
// metric count and the audit scope of one request, on PostgreSQL) shares it.
const callers = new WeakMap<Request, Promise<Caller>>()

async function lookUp(ctx: Ctx, token: string | null): Promise<Caller> {
  const instanceId = token ? await ctx.tokens.idOf(ctx, token) : null
  if (instanceId) ctx.heartbeats.seen(ctx, instanceId)
  return { actor: instanceId ?? actorWithoutInstance(ctx), instanceId, role: 'admin', tokenId: null }
}

/** The caller of a request: its actor, and the registered instance behind its X-Instance-Token (null without one or for an unknown one). */
export function caller(ctx: Ctx, request: Request): Promise<Caller> {
  let known = callers.get(request)
  if (!known) callers.set(request, (known = lookUp(ctx, request.headers.get('x-instance-token'))))
  return known
}

/**
 * The API hands its handlers a replacement of the request it received (size-bounded,
 * relabelled JSON): both are one caller, looked up once.
 */
export function sameCaller(ctx: Ctx, received: Request, replacement: Request): void {
  if (received !== replacement && received.headers.has('x-instance-token')) callers.set(replacement, caller(ctx, received))
}

/** The calling instance of a holder route: 400 without X-Instance-Token, 403 for a token of no registered instance. */
export async function holderOf(ctx: Ctx, request: Request): Promise<Instance> {
  if (!request.headers.get('x-instance-token')) throw invalid('X-Instance-Token is required')
  const { instanceId } = await caller(ctx, request)
  const instance = instanceId ? await ctx.store.instances.get(instanceId) : null
  if (!instance) throw forbidden('unknown instance token: register again')
  return instance
}

/**
 * The calling instance's id and name, for a route that needs no more (the inbox): as
 * holderOf, but where this process is the database's only writer (SQLite) a token
 * whose instance is known here is answered without reading it again; its
 * instance.deregistered reaches ctx.tokens right after that COMMIT, before any other request.
 */
export async function readerOf(ctx: Ctx, request: Request): Promise<Pick<Instance, 'id' | 'name'>> {
  const token = request.headers.get('x-instance-token')
  if (token && ctx.store.backend === 'sqlite') {
    const name = ctx.tokens.nameOf(token)
    if (name !== undefined) {
      const { instanceId } = await caller(ctx, request)
      if (instanceId) return { id: instanceId, name }
    }
  }
  const instance = await holderOf(ctx, request)
  if (token) ctx.tokens.named(token, instance)
  return instance
}

/** The instance of an optional X-Instance-Token (null without one; 403 for an unknown one). */
export function optionalHolder(ctx: Ctx, request: Request): Promise<Instance | null> {
  return request.headers.has('x-instance-token') ? holderOf(ctx, request) : Promise.resolve(null)
}

/** Counts `n` of an agent metric for the calling instance; a no-op for callers without a valid instance token. */
export async function countForCaller(ctx: Ctx, request: Request, name: MetricName, n = 1): Promise<void> {
  if (!request.headers.has('x-instance-token')) return
  const { instanceId } = await caller(ctx, request)
  if (instanceId) ctx.metrics.count(instanceId, name, n)
}

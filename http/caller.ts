// Who is calling: the credential admission settled (http/access.ts), and the instance
// behind X-Instance-Token, resolved once per request for everyone who asks (audit scope,
// agent metrics, holders, the access log's actor).
import type { Ctx } from '../services/context'
import type { MetricName } from '../services/metrics'
import type { Caller } from '../services/audit'
import type { Instance } from '../store/instances'
import { ADMIN, type Credential } from '../services/credentials'
import { forbidden, invalid } from '../lib/errors'
import { UNKNOWN_TOKEN } from '../services/holders'
import type { Owner } from '../services/instances'
import { bearerOf } from './access'
export type { Caller } from '../services/audit'

const credentials = new WeakMap<Request, Credential>()

/** Admission's credential for `request` (and for the replacement its handler gets). */
export function setCredential(request: Request, credential: Credential): void {
  credentials.set(request, credential)
}

/** The credential of an admitted request (the admin's when auth is off or for a request that did not pass admission). */
export const credentialFor = (request: Request): Credential => credentials.get(request) ?? ADMIN

/** The agent token of a request, as the owner of the instances it registers (null for the admin token or with auth off). */
export function ownerOf(request: Request): Owner | null {
  const { role, tokenId } = credentialFor(request)
  const secret = role === 'agent' && tokenId ? bearerOf(request) : null
  return secret ? { id: tokenId!, secret } : null
}

/** Aborted when the request's token is revoked or expires: what a held read waits on beside its own time (none for the admin). */
export const heldUntil = (ctx: Ctx, request: Request): AbortSignal | undefined => ctx.credentials.endOf(credentialFor(request)) ?? undefined

/** `?force=1` (access.md): 403 unless the call is the admin token's. */
export function assertForce(request: Request): void {
  if (credentialFor(request).role !== 'admin') throw forbidden('?force=1 needs the admin token: release what your instance holds without it, or ask a person')
}

/** Who a caller without a valid instance token is: its agent or viewer token, else whoever holds the server token, else anyone. */
export function actorWithoutInstance(ctx: Ctx, request?: Request): string {
  const name = request && credentials.get(request)?.name
  if (name) return `token:${name}`
  return ctx.config.authToken ? 'admin' : 'anonymous'
}

// The lookup itself is kept, not its result: whoever asks while it runs (the agent
// metric count and the audit scope of one request, on PostgreSQL) shares it.
const callers = new WeakMap<Request, Promise<Caller>>()

async function lookUp(ctx: Ctx, request: Request): Promise<Caller> {
  const token = request.headers.get('x-instance-token')
  const { role, tokenId } = credentialFor(request)
  const instanceId = token ? await ctx.tokens.idOf(ctx, token) : null
  if (instanceId) ctx.heartbeats.seen(ctx, instanceId)
  return { actor: instanceId ?? actorWithoutInstance(ctx, request), instanceId, role, tokenId }
}

/** The caller of a request: its actor, and the registered instance behind its X-Instance-Token (null without one or for an unknown one). */
export function caller(ctx: Ctx, request: Request): Promise<Caller> {
  let known = callers.get(request)
  if (!known) callers.set(request, (known = lookUp(ctx, request)))
  return known
}

/**
 * The API hands its handlers a replacement of the request it received (size-bounded,
 * relabelled JSON): both are one caller, looked up once.
 */
export function sameCaller(ctx: Ctx, received: Request, replacement: Request): void {
  if (received !== replacement && received.headers.has('x-instance-token')) callers.set(replacement, caller(ctx, received))
}

/**
 * The calling instance's id, for a holder route that needs nothing else of it (locks): 400
 * without X-Instance-Token, 403 for a token of no registered instance. The instance is not
 * read: the unit's heartbeat (services/holders.ts touchId) refuses, with the same 403, an
 * instance deregistered since its token was known.
 */
export async function holderIdOf(ctx: Ctx, request: Request): Promise<Pick<Instance, 'id'>> {
  if (!request.headers.get('x-instance-token')) throw invalid('X-Instance-Token is required')
  const { instanceId } = await caller(ctx, request)
  if (!instanceId) throw forbidden(UNKNOWN_TOKEN)
  return { id: instanceId }
}

/** The calling instance of a holder route, read: as holderIdOf, and 403 for an instance gone since its token was known. */
export async function holderOf(ctx: Ctx, request: Request): Promise<Instance> {
  const instance = await ctx.store.instances.get((await holderIdOf(ctx, request)).id)
  if (!instance) throw forbidden(UNKNOWN_TOKEN)
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

/** As optionalHolder, for a call that needs only the id: its unit's heartbeat (touchId) refuses an instance gone since, with the same 403. */
export function optionalHolderId(ctx: Ctx, request: Request): Promise<Pick<Instance, 'id'> | null> {
  return request.headers.has('x-instance-token') ? holderIdOf(ctx, request) : Promise.resolve(null)
}

/** As optionalHolder, for a call that needs only the id and name (readerOf: on SQLite not read again). */
export function optionalReader(ctx: Ctx, request: Request): Promise<Pick<Instance, 'id' | 'name'> | null> {
  return request.headers.has('x-instance-token') ? readerOf(ctx, request) : Promise.resolve(null)
}

/** Counts `n` of an agent metric for the calling instance; a no-op for callers without a valid instance token. */
export async function countForCaller(ctx: Ctx, request: Request, name: MetricName, n = 1): Promise<void> {
  if (!request.headers.has('x-instance-token')) return
  const { instanceId } = await caller(ctx, request)
  if (instanceId) ctx.metrics.count(instanceId, name, n)
}

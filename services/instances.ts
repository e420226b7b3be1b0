// Instance use cases: registration, signs of life, deregistration and the liveness
// check. Each change commits with its event and audit entry. When an instance goes
// stale or deregisters, the server's releasers run inside that same unit, so whatever
// it held (locks, reservations, task claims) is released atomically with the change.
import { nowMs } from '../lib/time'
import { randomBytes } from 'node:crypto'
import type { Ctx } from './context'
import type { Tx } from '../store'
import type { Instance, NewInstance } from '../store/instances'
import { derivedInstanceToken, hashToken } from '../lib/token'
import { forbidden, invalid, notFound } from '../lib/errors'
import { recordAudit, type AuditScope, type Caller } from './audit'
import { releaseHeld } from './releasers'

export const MAX_TEXT = 1000
export const MAX_CAPABILITIES = 100
export const CAPABILITY_MAX_LENGTH = 200

function checkText(field: string, value: string | undefined): void {
  if (value !== undefined && value.length > MAX_TEXT) throw invalid(`invalid ${field}: at most ${MAX_TEXT} characters`)
}

export function checkCapabilities(caps: string[] | undefined): string[] | undefined {
  if (caps === undefined) return undefined
  if (caps.length > MAX_CAPABILITIES) throw invalid(`invalid capabilities: at most ${MAX_CAPABILITIES}`)
  if (caps.some((c) => c.trim() === '' || c.length > CAPABILITY_MAX_LENGTH)) throw invalid(`invalid capabilities: each must be 1 to ${CAPABILITY_MAX_LENGTH} characters`)
  return [...new Set(caps)]
}

/** The instance, or 404 instance not found. */
export const found = <T>(instance: T | null): T => {
  if (!instance) throw notFound('instance not found')
  return instance
}

/**
 * 403 unless `who` may change instance `id` (intent, capabilities, heartbeat, activation,
 * deregistration): the admin token, or the agent token that registered it (access.md).
 * An unknown instance is not refused here: its use case answers 404.
 */
export async function assertManages(ctx: Ctx, who: Pick<Caller, 'role' | 'tokenId'>, id: string): Promise<void> {
  if (who.role === 'admin') return
  const boundTo = await ctx.store.instances.tokenIdOf(id)
  if (boundTo === undefined || (who.role === 'agent' && boundTo === who.tokenId)) return
  throw forbidden(`instance ${id} was registered with another token: only that token or the admin token may change it`)
}

/** `resumed` and `warning` appear only when they say something: a first registration answers as the spec shows it. */
export type Registered = Instance & { token: string; resumed?: true; warning?: string }

/**
 * The agent token a registration is made with: `id` the token's id, `secret` the token as
 * presented (the instance token is made from it, so the same token can be told it again).
 * Null for the admin token or with auth off.
 */
export interface Owner {
  id: string
  secret: string
}

/** A registration's body: `new` forces a new instance where one of that name would be resumed. */
export type Registration = NewInstance & { new?: boolean }

/**
 * Registers and announces an instance; returns it with its token (shown only here and to
 * the caller that presented it). `presented`: the caller's X-Instance-Token. When it is the
 * token of a registered instance of the same name, that instance is resumed (same id, what
 * it holds kept). Without one, an agent token that registered an instance of this name
 * (REST, MCP or a hook session) resumes it: one name, one live instance per agent token,
 * unless `new`. Otherwise a new one is made, and the answer warns when another active
 * instance already has the name.
 */
export async function registerInstance(ctx: Ctx, scope: AuditScope | undefined, body: Registration, presented?: string | null, owner?: Owner | null): Promise<Registered> {
  if (!body.name?.trim()) throw invalid('name is required')
  for (const field of ['name', 'workspace', 'intent', 'stack'] as const) checkText(field, body[field])
  const { new: fresh, ...fields } = body
  const input: NewInstance = { ...fields, capabilities: checkCapabilities(body.capabilities) }
  const resumable = presented ? await ctx.tokens.idOf(ctx, presented) : null
  if (resumable) {
    const resumed = await ctx.store.write(async (tx) => {
      const known = await tx.instances.get(resumable)
      return known?.name === input.name ? resumeIn(tx, scope, known.id, input) : null
    })
    if (resumed) return { ...resumed, token: presented!, resumed: true as const }
  }
  if (owner && !presented && !fresh) {
    const resumed = await ctx.store.write(async (tx) => {
      for (const { id, token_hash } of await tx.instances.namedFor(input.name, owner.id)) {
        // Only an instance whose token was made from this agent token can be told its token again.
        const token = derivedInstanceToken(owner.secret, id)
        if (hashToken(token) !== token_hash) continue
        const instance = await resumeIn(tx, scope, id, input)
        if (instance) return { ...instance, token, resumed: true as const }
      }
      return null
    })
    if (resumed) return resumed
  }
  const namesakes = (await ctx.store.instances.list({ name: input.name, status: 'active' })).length
  const id = crypto.randomUUID()
  const token = instanceTokenFor(id, owner)
  const instance = await ctx.store.write((tx) => registerIn(tx, scope, input, token, owner?.id ?? scope?.tokenId ?? null, id))
  const registered: Registered = { ...instance, token }
  if (namesakes > 0)
    registered.warning =
      `${namesakes} other active instance${namesakes > 1 ? 's are' : ' is'} named "${input.name}": messages to that name reach all of them. ` +
      `To take up your earlier instance instead, register with its X-Instance-Token (the CLI does so unless --new).`
  return registered
}

/** Takes up instance `id` again inside the caller's unit, with its event and audit entry. */
async function resumeIn(tx: Tx, scope: AuditScope | undefined, id: string, input: NewInstance): Promise<Instance | null> {
  const instance = await tx.instances.resume(id, input)
  if (!instance) return null
  await tx.emit('instance.resumed', { id: instance.id, name: instance.name, workspace: instance.workspace, stack: instance.stack }, 'instances')
  await recordAudit(tx, scope, `${instance.id} (${instance.name}) resumed`)
  return instance
}

/** The token of a new instance `id`: made from the agent token when there is one (see Owner), else random. */
export const instanceTokenFor = (id: string, owner?: Owner | null) => (owner ? derivedInstanceToken(owner.secret, id) : newToken())

export const newToken = () => randomBytes(32).toString('hex')

/**
 * Registers inside the caller's unit (input already checked), with its event; audited when
 * `scope` is given. `tokenId`: the agent token it is bound to (null for the admin token).
 */
export async function registerIn(tx: Tx, scope: AuditScope | undefined, input: NewInstance, token: string, tokenId: string | null, id?: string): Promise<Instance> {
  const instance = await tx.instances.register(input, hashToken(token), tokenId, id)
  await tx.emit('instance.registered', { id: instance.id, name: instance.name, workspace: instance.workspace, stack: instance.stack }, 'instances')
  await recordAudit(tx, scope, `${instance.id} (${instance.name})`)
  return instance
}

/** A sign of life: refreshes last_seen and turns stale into active. */
export function heartbeat(ctx: Ctx, scope: AuditScope | undefined, id: string): Promise<Instance> {
  return ctx.store.write(async (tx) => {
    const instance = found(await tx.instances.heartbeat(id))
    await recordAudit(tx, scope)
    return instance
  })
}

export function activateInstance(ctx: Ctx, scope: AuditScope | undefined, id: string): Promise<Instance> {
  return ctx.store.write(async (tx) => {
    const instance = found(await tx.instances.activate(id))
    await recordAudit(tx, scope)
    return instance
  })
}

export function setCapabilities(ctx: Ctx, scope: AuditScope | undefined, id: string, capabilities: string[]): Promise<Instance> {
  const caps = checkCapabilities(capabilities)!
  return ctx.store.write(async (tx) => {
    const instance = found(await tx.instances.setCapabilities(id, caps))
    await recordAudit(tx, scope, instance.capabilities.join(', '))
    return instance
  })
}

export function setIntent(ctx: Ctx, scope: AuditScope | undefined, id: string, intent: string): Promise<Instance> {
  checkText('intent', intent)
  return ctx.store.write(async (tx) => {
    const instance = found(await tx.instances.setIntent(id, intent))
    await recordAudit(tx, scope)
    return instance
  })
}

/** Deregisters: what it held is released in the same unit, then instance.deregistered. */
export function deregisterInstance(ctx: Ctx, scope: AuditScope | undefined, id: string): Promise<Instance> {
  return ctx.store.write(async (tx) => {
    const gone = found(await deregisterIn(ctx, tx, id))
    await recordAudit(tx, scope)
    return gone
  })
}

/** Deregisters inside the caller's unit, releasing what it held; null when it was gone already. */
export async function deregisterIn(ctx: Ctx, tx: Tx, id: string): Promise<Instance | null> {
  const gone = await tx.instances.delete(id)
  if (!gone) return null
  await releaseHeld(ctx, tx, gone, 'holder_deregistered')
  await tx.emit('instance.deregistered', { id: gone.id, name: gone.name }, 'instances')
  return gone
}

/** One liveness check (the job and POST /api/liveness/check): returns the newly stale instances. */
export function checkLiveness(ctx: Ctx): Promise<Instance[]> {
  const cutoff = new Date(nowMs() - ctx.config.staleTimeoutMs).toISOString()
  return ctx.store.write(async (tx) => {
    const stale = await tx.instances.markStale(cutoff)
    for (const i of stale) {
      await releaseHeld(ctx, tx, i, 'holder_stale')
      await tx.emit('instance.stale', { id: i.id, name: i.name, workspace: i.workspace, last_seen: i.last_seen }, 'liveness')
    }
    return stale
  })
}

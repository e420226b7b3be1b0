// Token use cases (access.md): an agent or viewer token is made by the admin, shown once,
// kept as its SHA-256, and revoked at once; each write commits with its event and audit
// entry. The secret never reaches an event, an audit entry, a log line or an error.
import { randomBytes } from 'node:crypto'
import type { Ctx } from './context'
import type { TokenRecord, TokenRole } from '../store/tokens'
import { hashToken } from '../lib/token'
import { conflict, invalid, notFound } from '../lib/errors'
import { nowIso } from '../lib/time'
import { recordAudit, type AuditScope } from './audit'
import { TTL_MAX_MS, TTL_MIN_MS } from './holders'

export const ROLES: readonly TokenRole[] = ['agent', 'viewer']
export const NAME_MAX = 100
const SOURCE = 'tokens'

export interface NewTokenInput {
  name: unknown
  role: unknown
  ttl_ms?: unknown
}

/** Checks a request to make a token: 400 naming the field. */
function checked(input: NewTokenInput): { name: string; role: TokenRole; ttlMs: number | null } {
  const { name, role, ttl_ms } = input
  if (typeof name !== 'string' || name.trim() === '' || name.length > NAME_MAX) throw invalid(`invalid name: expected 1 to ${NAME_MAX} characters`)
  if (typeof role !== 'string' || !ROLES.includes(role as TokenRole)) throw invalid('invalid role: expected "agent" or "viewer"')
  if (ttl_ms !== undefined && ttl_ms !== null && (typeof ttl_ms !== 'number' || !Number.isInteger(ttl_ms) || ttl_ms < TTL_MIN_MS || ttl_ms > TTL_MAX_MS))
    throw invalid(`invalid ttl_ms: expected an integer from ${TTL_MIN_MS} to ${TTL_MAX_MS}`)
  return { name, role: role as TokenRole, ttlMs: (ttl_ms as number | undefined) ?? null }
}

const announced = ({ id, name, role }: TokenRecord) => ({ id, name, role })

/** Makes a token: 201's body, with the secret shown this once. 409 when a live token has the name. */
export function createToken(ctx: Ctx, scope: AuditScope | undefined, input: NewTokenInput): Promise<TokenRecord & { token: string }> {
  const { name, role, ttlMs } = checked(input)
  const token = `mst_${randomBytes(32).toString('base64url')}`
  const now = Date.now()
  return ctx.store.write(async (tx) => {
    const holder = await tx.tokens.byName(name)
    if (holder) {
      // An expired token gives its name up: it is revoked as the new one is made.
      if (holder.expires_at === null || Date.parse(holder.expires_at) > now)
        throw conflict(`a token named "${name}" exists (id ${holder.id}): revoke it first or choose another name`)
      await tx.tokens.revoke(holder.id, nowIso())
    }
    const made = await tx.tokens.create(
      { name, role, hash: hashToken(token), expires_at: ttlMs === null ? null : new Date(now + ttlMs).toISOString() },
      new Date(now).toISOString(),
    )
    await tx.emit('token.created', announced(made), SOURCE)
    await recordAudit(tx, scope, `${made.id} (${name}, ${role})`)
    const { last_used_at: _, ...shown } = made
    return { ...shown, token } as TokenRecord & { token: string }
  })
}

/** Revokes a token: refused from the next request on, on every replica once its event arrives. */
export function revokeToken(ctx: Ctx, scope: AuditScope | undefined, id: string): Promise<{ id: string; revoked: true }> {
  return ctx.store.write(async (tx) => {
    const gone = await tx.tokens.revoke(id, nowIso())
    if (!gone) throw notFound('token not found (unknown or already revoked)')
    await tx.emit('token.revoked', announced(gone), SOURCE)
    await recordAudit(tx, scope, `${gone.id} (${gone.name}, ${gone.role})`)
    return { id: gone.id, revoked: true as const }
  })
}

/** Live tokens (not revoked, not expired), oldest first; never a secret. */
export const listTokens = (ctx: Ctx) => ctx.store.tokens.live(nowIso())

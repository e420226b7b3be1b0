// Who may call what (access.md): each request's credential — the admin token, an agent or
// viewer token, or anyone when auth is off — and the role its route needs. Both are settled
// before the route sees the request: a call its role may not make is 403 before its body,
// parameters or resources are looked at.
import { timingSafeEqual } from 'node:crypto'
import type { Ctx } from '../services/context'
import type { Role } from '../services/audit'
import { ADMIN, type Credential } from '../services/credentials'
import { hashToken } from '../lib/token'
import { log } from '../obs/log'
import { pathOf, urlOf } from './url'

/** The WebSocket routes: the only ones where ?token= stands in for the header (browsers cannot set headers on an upgrade). */
const WEBSOCKET_PATHS = new Set(['/api/events/subscribe'])

/** The probes a load balancer calls: open whatever the auth. */
const OPEN_PATHS = new Set(['/health', '/livez', '/readyz'])

/** Routes only the admin token may call, as the router lists them. */
const ADMIN_ONLY = new Set([
  'GET /api/backup',
  'POST /api/restore',
  'POST /api/tokens',
  'GET /api/tokens',
  'DELETE /api/tokens/:id',
  'POST /api/webhooks',
  'PATCH /api/webhooks/:id',
  'DELETE /api/webhooks/:id',
  'POST /api/webhooks/:id/test',
  'POST /api/webhooks/:id/enable',
  'POST /api/webhooks/:id/disable',
  'POST /api/webhooks/:id/redeliver',
  'POST /api/webhooks/:id/deliveries/:delivery/redeliver',
  'POST /api/rules/:project/:ruleID/accept',
  'POST /api/rules/:project/:ruleID/reject',
  'PUT /api/rules/:project/:ruleID',
  'DELETE /api/rules/:project/:ruleID',
  'PUT /api/validate/:project/rules',
  'POST /api/rules/import',
  'POST /api/templates',
  'PUT /api/templates/:id',
  'DELETE /api/templates/:id',
  'DELETE /api/contracts/:project/:name',
  'DELETE /api/specs/:project/:name',
  'POST /api/compliance/run',
  'PUT /api/budgets/:name',
  'DELETE /api/budgets/:name',
  'POST /api/approvals/:id/decision',
  'POST /api/approvals/decision',
  'POST /api/approval-rules',
  'DELETE /api/approval-rules/:id',
])

/** Calls that only compute an answer (or, for /mcp, whose tools check the role themselves): a viewer may make them. */
const VIEWER_CALLS = new Set([
  'POST /api/reservations/check',
  'POST /api/validate/:project',
  'POST /api/contracts/:project/:name/validate',
  'POST /mcp',
])

/** The routes of access.md's lists, for a test that each names a served route. */
export const NAMED_ROUTES = [...ADMIN_ONLY, ...VIEWER_CALLS]

/** The role a route needs: reads and pure computations a viewer's, the admin list the admin's, the rest an agent's; a HEAD what its GET needs (both routers serve it with the GET's handler). */
export function requiredRole(method: string, pattern: string): Role {
  const key = `${method === 'HEAD' ? 'GET' : method} ${pattern}`
  if (ADMIN_ONLY.has(key)) return 'admin'
  if (method === 'GET' || method === 'HEAD' || VIEWER_CALLS.has(key)) return 'viewer'
  return 'agent'
}

const RANK: Record<Role, number> = { viewer: 0, agent: 1, admin: 2 }
const mayCall = (role: Role, needed: Role) => RANK[role] >= RANK[needed]

export const READ_ONLY = 'read-only token'
const ADMIN_ONLY_MESSAGE = 'this call needs the admin token (an agent token may not make it)'

/** A real WebSocket handshake on a WebSocket route, not any request that claims `Upgrade: websocket`. */
const isUpgrade = (request: Request, path: string) =>
  request.method === 'GET' &&
  WEBSOCKET_PATHS.has(path) &&
  request.headers.get('upgrade')?.toLowerCase() === 'websocket' &&
  /\bupgrade\b/i.test(request.headers.get('connection') ?? '') &&
  request.headers.has('sec-websocket-key')

/** The bearer token a request presents (?token= on a WebSocket upgrade), or null. */
export function bearerOf(request: Request, path = pathOf(request.url)): string | null {
  const given = /^Bearer\s+(.+)$/i.exec(request.headers.get('authorization') ?? '')?.[1]?.trim()
  if (given) return given
  return isUpgrade(request, path) ? (urlOf(request).searchParams.get('token') ?? null) : null
}

// The admin token's hash, made once per token rather than per request.
const adminHashes = new Map<string, Buffer>()
const isAdminToken = (ctx: Ctx, given: string) => {
  const admin = ctx.config.authToken!
  let expected = adminHashes.get(admin)
  if (!expected) adminHashes.set(admin, (expected = Buffer.from(hashToken(admin), 'hex')))
  return timingSafeEqual(Buffer.from(hashToken(given), 'hex'), expected)
}

/** The credential of a presented token when it is known without a read (null: none given); undefined when it must be read. */
const knownCredential = (ctx: Ctx, given: string | null): Credential | null | undefined =>
  !given ? null : isAdminToken(ctx, given) ? ADMIN : ctx.credentials.peek(given)

// Each prepared request's credential (null: no valid token), settled before admission reads it.
const settled = new WeakMap<Request, Credential | null>()

/**
 * Settles the credential of `request`, reading what this server does not know yet: its
 * token, and which token registered the instance of its X-Instance-Token. Undefined
 * (nothing to wait for) on every request after a token's first.
 */
export function prepareAccess(ctx: Ctx, request: Request): Promise<unknown> | undefined {
  if (!ctx.config.authToken) return undefined
  const given = bearerOf(request)
  const credential = knownCredential(ctx, given)
  const waits: Promise<unknown>[] = []
  if (credential === undefined) waits.push(ctx.credentials.load(ctx, given!).then((c) => settled.set(request, c)))
  else settled.set(request, credential)
  const instanceToken = request.headers.get('x-instance-token')
  const mayBeBound = credential !== null && credential?.role !== 'admin'
  if (mayBeBound && instanceToken && ctx.tokens.boundTo(instanceToken) === undefined) waits.push(ctx.tokens.idOf(ctx, instanceToken))
  return waits.length ? Promise.all(waits) : undefined
}

/**
 * The credential of a request, as prepareAccess settled it: null when auth is on and it
 * presents no valid token. `path` is the request's path without the query, as the router matches it.
 */
export function credentialOf(ctx: Ctx, request: Request, path: string): Credential | null {
  if (!ctx.config.authToken) return ADMIN
  if (request.method === 'GET' && OPEN_PATHS.has(path)) return ADMIN
  const credential = settled.has(request) ? settled.get(request)! : (knownCredential(ctx, bearerOf(request, path)) ?? null)
  if (!credential) log.warn({ method: request.method, path, reason: bearerOf(request, path) ? 'wrong token' : 'no token' }, 'auth failure')
  else ctx.credentials.used(credential)
  return credential
}

/**
 * Why `credential` may not make this call (the 403's message), or null when it may:
 * the route's role first, then the X-Instance-Token it presents (an agent token acts
 * only as the instances it registered; a viewer as none; the admin token as any).
 */
export function refusal(ctx: Ctx, credential: Credential, needed: Role, request: Request): string | null {
  if (!mayCall(credential.role, needed)) return credential.role === 'viewer' ? READ_ONLY : ADMIN_ONLY_MESSAGE
  if (credential.role === 'admin') return null
  const instanceToken = request.headers.get('x-instance-token')
  if (!instanceToken) return null
  const boundTo = ctx.tokens.boundTo(instanceToken)
  if (boundTo === undefined) return null // no such instance: the route answers that
  if (credential.role === 'viewer') return `${READ_ONLY}: a viewer token cannot act as an instance (drop X-Instance-Token)`
  if (boundTo !== credential.tokenId)
    return `X-Instance-Token belongs to an instance registered with another token: act as it with the token that registered it, or register your own`
  return null
}

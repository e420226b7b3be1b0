// Admission: what every API request passes before its handler, on Elysia's
// onRequest and on the fast routes alike: the bearer check and its role (access.md), its route's body limit
// (413 before a byte of the body is read), JSON bodies whatever their label, and
// the agent metric count of the calling instance.
import type { Ctx } from '../services/context'
import { logFailure } from '../obs/log'
import { asJson, boundedRequest, tooLarge } from './body'
import { countForCaller, sameCaller, setCredential } from './caller'
import { credentialOf, refusal, requiredRole } from './access'
import { UNAUTHORIZED, errorResponse } from './errors'
import type { BodyRule, RouteTable } from './route-table'
import { sameConnection } from './holds'

/** The answer to a request no route is known by (404, or 405 with Allow), as the router's error hook gives it. */
const unserved = (table: RouteTable, method: string, path: string): Response => {
  const { status, message, allow } = table.notServed(method, path)
  const answer = errorResponse(status, message)
  if (allow) answer.headers.set('allow', allow)
  return answer
}

/** The request as its handler gets it (size-bounded, labelled JSON), or the early answer when refused (401, 403, 413). */
export type Admit = (request: Request, path: string, rule?: BodyRule, pattern?: string) => Request | Response

/**
 * `path` is the request's path without the query; `rule` its route's body rule and
 * `pattern` its route when the caller knows them (the fast routes), else looked up in
 * `table`. The credential's reads (a token seen for the first time) are done before
 * (http/access.ts prepareAccess), so admission never waits.
 */
export function admission(ctx: Ctx, table: RouteTable): Admit {
  /**
   * Agent metrics: every call an instance makes (its token identifies it), /mcp apart.
   * The count settles within microtasks, before any later request is read. Tracked: on
   * PostgreSQL the token lookup is a round trip that may end after the answer, and
   * shutdown's last flush waits for it.
   */
  const countCall = (request: Request, path: string) => {
    const metric = path === '/mcp' ? 'mcp_calls' : path.startsWith('/api/') ? 'rest_calls' : null
    const token = metric && request.headers.get('x-instance-token')
    if (!token) return
    // A token whose instance is known here is counted (and heartbeats, as its lookup would) at once.
    const known = ctx.tokens.knownId(token)
    if (known !== undefined) {
      ctx.heartbeats.seen(ctx, known)
      ctx.metrics.count(known, metric)
    } else ctx.background.track(countForCaller(ctx, request, metric).catch((err) => logFailure('agent metric count failed', err)))
  }

  return (request, path, rule, pattern) => {
    const credential = credentialOf(ctx, request, path)
    if (!credential) return errorResponse(401, UNAUTHORIZED)
    const route = pattern ? null : table.routeOf(request.method, path)
    if (credential.role !== 'admin') {
      const needed = pattern ? requiredRole(request.method, pattern) : (route?.role ?? requiredRole(request.method, path))
      const refused = refusal(ctx, credential, needed, request)
      if (refused) return errorResponse(403, refused)
    }
    // A spelling no route is known by goes no further: whatever a router would make of it (a parameter
    // taking a trailing slash), no handler runs on a role decided for another route (access.md).
    if (!pattern && !route) return unserved(table, request.method, path)
    setCredential(request, credential)
    const declared = request.headers.get('content-length')
    let admitted = request
    // A request without a body needs no rule: most requests, and every read (no GET route reads a body).
    if (declared !== null || (request.method !== 'GET' && request.body)) {
      const { limit, raw } = rule ?? table.bodyRule(request.method, path)
      if (Number(declared ?? 0) > limit) return errorResponse(413, tooLarge(limit).message)
      // A body without Content-Length (chunked) is cut off with 413 as soon as it passes the limit, and
      // fails if Bun refused what followed its last chunk (a trailer), whoever reads it (http/body.ts).
      if (declared === null) admitted = boundedRequest(admitted, limit)
      if (!raw) admitted = asJson(admitted)
      sameCaller(ctx, request, admitted)
      sameConnection(request, admitted)
      setCredential(admitted, credential)
    }
    countCall(admitted, path)
    return admitted
  }
}

// The audit plugin: a route declares `audit: 'action.name'` and receives the
// request's AuditScope (`audit` in its context) to hand to its service, which
// commits the entry with the change. What the service did not write (an error
// answer, or a route that changes nothing durable) is written here after the response.
import { logFailure } from '../obs/log'
import { Elysia } from 'elysia'
import type { Ctx } from '../services/context'
import type { AuditScope } from '../services/audit'
import { caller } from './caller'
import { thrownResponse } from './errors'

const scopes = new WeakMap<Request, AuditScope>()
const details = new WeakMap<Request, string>()

/** Adds a detail line to this request's audit entry when the HTTP layer writes it (e.g. "12 violations"). */
export function noteAudit(request: Request, detail: string): void {
  details.set(request, detail)
}

/** The resource an entry names: the request path below /api/, decoded. */
export function resourceOf(url: string): string {
  const path = new URL(url).pathname.replace(/^\/api\//, '').replace(/^\//, '')
  try {
    return decodeURIComponent(path)
  } catch {
    return path
  }
}

/** The audit scope of a request to a route audited as `action` (made once per request). */
export async function scopeOf(ctx: Ctx, request: Request, action: string): Promise<AuditScope> {
  let scope = scopes.get(request)
  if (!scope) {
    scope = { ...(await caller(ctx, request)), action, resource: resourceOf(request.url), written: false }
    scopes.set(request, scope)
  }
  return scope
}

/**
 * Writes the entry the request's service did not write, for an answer with `status`: a
 * failure, or a success that wrote nothing durable (the audit plugin after a route; a fast
 * route itself: a deduplicated create, an empty claim).
 */
export async function auditLeftover(ctx: Ctx, request: Request, action: string, status: number): Promise<void> {
  try {
    const scope = await scopeOf(ctx, request, action)
    if (scope.written && status < 400) return
    await ctx.store.write(async (tx) =>
      tx.audit.append({
        actor: scope.actor,
        action,
        resource: scope.resource,
        detail: details.get(request) ?? (status >= 400 ? `status ${status}` : ''),
        outcome: status < 400 ? 'success' : 'error',
      }),
    )
  } catch (err) {
    logFailure('audit append failed', err)
  }
}

/**
 * The answer of a handler outside Elysia (a fast route) audited as `action` that
 * threw `err`: {error, code} as the API's error hook answers, its entry written first.
 */
export async function failedCall(ctx: Ctx, request: Request, action: string, err: unknown): Promise<Response> {
  const answer = thrownResponse(err, request)
  await auditLeftover(ctx, request, action, answer.status)
  return answer
}

/**
 * A fast route's audited answer: `answer` gets the request's audit scope, and whatever
 * it throws (the caller's lookup included) is answered and audited as failedCall does.
 */
export async function auditedAnswer(ctx: Ctx, request: Request, action: string, answer: (scope: AuditScope) => Promise<Response>): Promise<Response> {
  try {
    return await answer(await scopeOf(ctx, request, action))
  } catch (err) {
    return failedCall(ctx, request, action, err)
  }
}

/**
 * Route modules start from this plugin: it gives them the `audit: 'action.name'`
 * route option. Entries are written before the answer goes out, so the log's order
 * is the order in which callers got their answers.
 */
export function audited(ctx: Ctx) {
  return new Elysia().macro({
    audit(action: string) {
      return {
        // Kept in the route's detail (Elysia drops the macro option itself): the API app finds a
        // failing route's action there, and the OpenAPI document shows it as x-audit.
        ...({ detail: { 'x-audit': action } } as {}), // (the macro typings do not admit detail)
        resolve: async ({ request }: { request: Request }) => ({ audit: await scopeOf(ctx, request, action) }),
        afterHandle: ({ request, set }: { request: Request; set: { status?: number | string } }) => {
          const status = typeof set.status === 'number' ? set.status : 200
          // The usual case, a success whose service wrote the entry, stays synchronous:
          // an async hook costs every write request a few promise turns.
          if (status < 400 && scopes.get(request)?.written) return
          return auditLeftover(ctx, request, action, status)
        },
      }
    },
  })
}

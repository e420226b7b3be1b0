// The audit plugin: a route declares `audit: 'action.name'` and receives the
// request's AuditScope (`audit` in its context) to hand to its service, which
// commits the entry with the change. What the service did not write (an error
// answer, or a route that changes nothing durable) is written here after the response.
import { log } from '../lib/log'
import { Elysia } from 'elysia'
import type { Ctx } from '../services/context'
import { track } from '../lib/background'
import type { AuditScope } from '../services/audit'
import { callerOf } from './caller'

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

async function scopeOf(ctx: Ctx, request: Request, action: string): Promise<AuditScope> {
  let scope = scopes.get(request)
  if (!scope) {
    const caller = await callerOf(ctx, request)
    scope = { ...caller, action, resource: resourceOf(request.url), written: false }
    scopes.set(request, scope)
  }
  return scope
}

async function writeLeftover(ctx: Ctx, request: Request, action: string, status: number): Promise<void> {
  try {
    const scope = await scopeOf(ctx, request, action)
    if (scope.written && status < 400) return
    await ctx.store.write(async (tx) =>
      await tx.audit.append({
        actor: scope.actor,
        action,
        resource: scope.resource,
        detail: details.get(request) ?? (status >= 400 ? `status ${status}` : ''),
        outcome: status < 400 ? 'success' : 'error',
      }),
    )
  } catch (err) {
    log.error({ err }, 'audit append failed')
  }
}

/** Route modules start from this plugin: it gives them the `audit` route option. */
export function audited(ctx: Ctx) {
  return new Elysia().macro({
    audit(action: string) {
      return {
        resolve: async ({ request }: { request: Request }) => ({ audit: await scopeOf(ctx, request, action) }),
        // Not async: Elysia would wait on the returned promise; the leftover entry is written in the background.
        afterResponse({ request, set }: { request: Request; set: { status?: number | string } }) {
          const status = typeof set.status === 'number' ? set.status : 200
          track(writeLeftover(ctx, request, action, status))
        },
      }
    },
  })
}

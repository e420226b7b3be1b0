// The API app: auth and body-size guard, one error mapper, OpenAPI, and every
// resource's routes. Built by app.ts; tests start the whole server as a process.
import { Elysia } from 'elysia'
import { openapi } from '@elysiajs/openapi'
import { timingSafeEqual } from 'node:crypto'
import { AppError } from './lib/errors'
import type { Ctx } from './lib/context'
import { MAX_BODY, STATUS, errorResponse, hashToken } from './routes/http'
import { healthRoutes } from './routes/health'
import { stateRoutes } from './routes/state'
import { specsRoutes } from './routes/specs'
import { auditRoutes } from './routes/audit'
import { eventsRoutes } from './routes/events'
import { webhooksRoutes } from './routes/webhooks'

/** Bearer check in constant time; GET /health is open. WebSocket upgrades may pass ?token= (browsers cannot set headers). */
export function authorized(ctx: Ctx, request: Request, url: URL): boolean {
  const expected = ctx.config.authToken
  if (!expected) return true
  if (url.pathname === '/health' && request.method === 'GET') return true
  const header = request.headers.get('authorization') ?? ''
  let given = /^Bearer\s+(.+)$/i.exec(header)?.[1]?.trim()
  if (!given && request.headers.get('upgrade')?.toLowerCase() === 'websocket') given = url.searchParams.get('token') ?? undefined
  if (!given) return false
  return timingSafeEqual(Buffer.from(hashToken(given), 'hex'), Buffer.from(hashToken(expected), 'hex'))
}

/** Human message for a TypeBox validation failure: "topic is required", "invalid limit: ...". */
function validationMessage(error: any): string {
  const first = error?.valueError ?? error?.all?.[0]
  if (!first) return 'invalid request'
  const name = String(first.path ?? '').replace(/^\//, '').replace(/\//g, '.')
  const where = error?.type === 'body' ? 'request body' : `${error?.type ?? 'request'}`
  if (!name) return `invalid ${where}: ${first.message}`
  if (first.value === undefined) return `${name} is required`
  return `invalid ${name}: ${first.message}`
}

export function createApi(ctx: Ctx) {
  const app = new Elysia({ serve: { maxRequestBodySize: MAX_BODY + 1024 * 1024 } })
  // Routes as regexes, to tell 405 (path exists, other method) from 404.
  let table: { method: string; re: RegExp }[] | null = null
  const allowedMethods = (path: string) => {
    table ??= app.routes.map((r) => ({
      method: r.method,
      re: new RegExp(`^${r.path.replace(/[.+?^${}()|[\]\\]/g, '\\$&').replace(/:[^/]+/g, '[^/]+').replace(/\*/g, '.*')}$`),
    }))
    return [...new Set(table.filter((r) => r.re.test(path)).map((r) => r.method))]
  }

  return app
    .onRequest(({ request }) => {
      const url = new URL(request.url)
      if (!authorized(ctx, request, url)) return errorResponse(401, 'invalid or missing bearer token')
      if (Number(request.headers.get('content-length') ?? 0) > MAX_BODY)
        return errorResponse(413, `request body exceeds the ${MAX_BODY / 1024 / 1024} MB limit`)
    })
    .onError(({ code, error, set, request }) => {
      let status = 500
      let message = 'internal server error'
      let extra: Record<string, unknown> = {}
      if (error instanceof AppError) {
        status = STATUS[error.kind]
        message = error.message
        extra = error.extra
      } else if (code === 'NOT_FOUND') {
        const allowed = allowedMethods(new URL(request.url).pathname).filter((m) => m !== request.method)
        if (allowed.length) {
          status = 405
          message = `method ${request.method} not allowed`
          set.headers['allow'] = allowed.join(', ')
        } else {
          status = 404
          message = 'not found'
        }
      } else if (code === 'PARSE') {
        status = 400
        message = 'malformed request body: expected valid JSON'
      } else if (code === 'VALIDATION') {
        status = 400
        message = validationMessage(error)
      } else if (typeof (error as any)?.status === 'number' && (error as any).status < 500) {
        status = (error as any).status
        message = (error as any).message || message
      } else {
        console.error(`internal error on ${request.method} ${request.url}:`, (error as Error)?.stack ?? error)
      }
      set.status = status
      set.headers['content-type'] = 'application/json'
      return { error: message, code: status, ...extra }
    })
    .use(
      openapi({
        path: '/docs',
        specPath: '/openapi.json',
        documentation: {
          info: { title: 'Muster API', version: '0.1.0', description: 'Coordination server for cooperating AI coding agents' },
        },
      }),
    )
    .use(healthRoutes(ctx.startedAt))
    .use(stateRoutes(ctx))
    .use(specsRoutes(ctx))
    .use(auditRoutes(ctx))
    .use(eventsRoutes(ctx))
    .use(webhooksRoutes(ctx))
}

// The API app: auth and body-size guard, one error mapper, OpenAPI, and every
// resource's routes. Built by app.ts; tests start the whole server as a process.
import { Elysia } from 'elysia'
import { openapi } from '@elysiajs/openapi'
import { timingSafeEqual } from 'node:crypto'
import { AppError } from './lib/errors'
import type { Ctx } from './lib/context'
import { MAX_ANY_BODY, STATUS, bodyLimit, boundedRequest, countForCaller, errorResponse, hashToken, isInternal, tooLarge } from './routes/http'
import { healthRoutes } from './routes/health'
import { stateRoutes } from './routes/state'
import { specsRoutes } from './routes/specs'
import { auditRoutes } from './routes/audit'
import { metricsRoutes } from './routes/metrics'
import { llmRoutes } from './routes/llm'
import { backupRoutes } from './routes/backup'
import { contractsRoutes } from './routes/contracts'
import { complianceRoutes } from './routes/compliance'
import { eventsRoutes } from './routes/events'
import { webhooksRoutes } from './routes/webhooks'
import { instancesRoutes } from './routes/instances'
import { livenessRoutes } from './routes/liveness'
import { mcpRoutes } from './routes/mcp'
import { validateRoutes } from './routes/validate'
import { rulesRoutes } from './routes/rules'
import { templatesRoutes } from './routes/templates'

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
  // No body at all where an object with required fields is expected: name the first one, as `{}` would.
  if (error?.type === 'body' && (error.value === undefined || error.value === '')) {
    const schema = error.validator?.schema ?? error.validator
    const required = schema?.required?.[0] ?? schema?.allOf?.find((s: any) => s.required)?.required?.[0]
    if (typeof required === 'string') return `${required} is required`
  }
  if (!first) return 'invalid request'
  const name = String(first.path ?? '').replace(/^\//, '').replace(/\//g, '.')
  const where = error?.type === 'body' ? 'request body' : `${error?.type ?? 'request'}`
  if (!name) return `invalid ${where}: ${first.message}`
  if (first.value === undefined) return `${name} is required`
  return `invalid ${name}: ${first.message}`
}

export function createApi(ctx: Ctx) {
  // The server-level cap admits the largest route limit; each request is held to its own route's limit below.
  const app = new Elysia({ serve: { maxRequestBodySize: MAX_ANY_BODY + 1024 * 1024 } })
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
    // Kept synchronous: an async hook costs every request (GET /api/state: -15% req/s).
    .onRequest((c) => {
      const url = new URL(c.request.url)
      if (!authorized(ctx, c.request, url)) return errorResponse(401, 'invalid or missing bearer token')
      const limit = bodyLimit(url.pathname)
      const declared = c.request.headers.get('content-length')
      if (Number(declared ?? 0) > limit) return errorResponse(413, tooLarge(limit).message)
      // A body without Content-Length is cut off with 413 as soon as it passes the limit, whoever reads it.
      if (declared === null && c.request.body) c.request = boundedRequest(c.request, limit)
      // Agent metrics: every call an instance makes (its token identifies it), /mcp apart.
      // The count settles within microtasks, before any later request is read.
      if (url.pathname === '/mcp') void countForCaller(ctx, c.request, 'mcp_calls')
      else if (url.pathname.startsWith('/api/') && !isInternal(c.request)) void countForCaller(ctx, c.request, 'rest_calls')
    })
    .onError(({ code, error, set, request }) => {
      let status = 500
      let message = 'internal server error'
      let extra: Record<string, unknown> = {}
      // A body stream cut off for size surfaces from the JSON parser wrapped in a parse error.
      const appError: AppError | null = error instanceof AppError ? error : (error as any)?.cause instanceof AppError ? (error as any).cause : null
      if (appError) {
        status = STATUS[appError.kind as keyof typeof STATUS]
        message = appError.message
        extra = appError.extra
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
    .use(metricsRoutes(ctx))
    .use(llmRoutes(ctx))
    .use(backupRoutes(ctx))
    .use(contractsRoutes(ctx))
    .use(complianceRoutes(ctx))
    .use(eventsRoutes(ctx))
    .use(webhooksRoutes(ctx))
    .use(instancesRoutes(ctx))
    .use(livenessRoutes(ctx))
    .use(mcpRoutes(ctx))
    .use(validateRoutes(ctx))
    .use(rulesRoutes(ctx))
    .use(templatesRoutes(ctx))
}

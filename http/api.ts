// The API app: auth and body-size guard, JSON bodies whatever their label, an
// access-log line and Prometheus numbers per request, one error mapper, OpenAPI and
// /docs, and every resource's routes. Built by app.ts; tests start the whole server as a process.
import { Elysia } from 'elysia'
import type { Ctx } from '../services/context'
import { MAX_BODY, SERVER_OPTIONS, asJson, boundedRequest, checkParsedRequest, tooLarge } from './body'
import { requestObserver } from './observe'
import { apiDocs } from './openapi'
import { authorized, countForCaller } from './caller'
import { track } from '../lib/background'
import { log } from '../obs/log'
import { pathOf, withOrigin } from './url'
import { stateReadRoute, stateWriteRoute } from './fast-state'
import { errorAnswer, errorResponse } from './errors'
import { auditFailure } from './audit'
import { healthRoutes } from '../routes/health'
import { stateRoutes } from '../routes/state'
import { specsRoutes } from '../routes/specs'
import { auditRoutes } from '../routes/audit'
import { metricsRoutes } from '../routes/metrics'
import { llmRoutes } from '../routes/llm'
import { backupRoutes } from '../routes/backup'
import { contractsRoutes } from '../routes/contracts'
import { complianceRoutes } from '../routes/compliance'
import { eventsRoutes } from '../routes/events'
import { webhooksRoutes } from '../routes/webhooks'
import { instancesRoutes } from '../routes/instances'
import { livenessRoutes } from '../routes/liveness'
import { mcpRoutes } from '../routes/mcp'
import { validateRoutes } from '../routes/validate'
import { rulesRoutes } from '../routes/rules'
import { templatesRoutes } from '../routes/templates'
import { queueRoutes } from '../routes/queue'
import { locksRoutes } from '../routes/locks'
import { reservationsRoutes } from '../routes/reservations'
import { prometheusRoutes } from '../routes/prometheus'

export function createApi(ctx: Ctx) {
  // Plain state reads and writes go straight from Bun's router to the store (http/fast-state.ts).
  const fastRoutes = { '/api/state/*': { GET: (request: Request) => stateRead(request), PUT: (request: Request) => stateWrite(request) } }
  const app = new Elysia({ ...SERVER_OPTIONS, serve: { ...SERVER_OPTIONS.serve, routes: fastRoutes } })
  // Filled once every route is mounted (below): read off the route options before Elysia compiles them away.
  let table: RouteInfo[] = []
  let large: RouteInfo[] = []
  let raw: RouteInfo[] = []
  const audits = new Map<string, string>()
  const allowedMethods = (path: string) => [...new Set(table.filter((r) => r.re.test(path)).map((r) => r.method))]
  // Only routes that declare maxBody differ from MAX_BODY: look those up, the rest need no match.
  const bodyLimit = (method: string, path: string) => large.find((r) => r.method === method && r.re.test(path))?.maxBody ?? MAX_BODY
  const readsRawBody = (method: string, path: string) => raw.some((r) => r.method === method && r.re.test(path))
  // The route pattern a request matched, for logs and metrics: fixed paths first, then parameters,
  // wildcards last, as the router matches. The WebSocket route is listed as "WS" and reached with a GET.
  const verb = (r: RouteInfo) => (r.method === 'WS' ? 'GET' : r.method)
  let patterns: { fixed: Map<string, string>; dynamic: RouteInfo[] } | null = null
  const routeOf = (method: string, path: string) => {
    patterns ??= {
      fixed: new Map(table.filter((r) => !/[:*]/.test(r.path)).map((r) => [`${verb(r)} ${r.path}`, r.path])),
      dynamic: table.filter((r) => /[:*]/.test(r.path)).sort((a, b) => Number(a.path.includes('*')) - Number(b.path.includes('*'))),
    }
    return patterns.fixed.get(`${method} ${path}`) ?? patterns.dynamic.find((r) => verb(r) === method && r.re.test(path))?.path
  }
  const observer = requestObserver(ctx, routeOf)
  // Elysia calls the wrapper for every request (hoc(route, request)(request)): each router's observed form is made once.
  const observed = new WeakMap<Route, Route>()
  const observe = (route: Route) => observed.get(route) ?? observed.set(route, observer.wrap(withOrigin(route))).get(route)!

  /** The 401 of a request without the server's token (null when it may pass). */
  const unauthorized = (request: Request, path: string) => (authorized(ctx, request, path) ? null : errorResponse(401, 'invalid or missing bearer token'))
  /** The request as the handler gets it (size-bounded, labelled JSON), or the early answer when refused (401, 413). */
  const admit = (request: Request): Request | Response => {
    const method = request.method
    const path = pathOf(request.url)
    const refused = unauthorized(request, path)
    if (refused) return refused
    const limit = bodyLimit(method, path)
    const declared = request.headers.get('content-length')
    if (Number(declared ?? 0) > limit) return errorResponse(413, tooLarge(limit).message)
    let admitted = request
    // A body without Content-Length is cut off with 413 as soon as it passes the limit, whoever reads it.
    if (declared === null && admitted.body) admitted = boundedRequest(admitted, limit)
    if (admitted.body && !readsRawBody(method, path)) admitted = asJson(admitted)
    observer.replaced(request, admitted)
    countCall(admitted, path)
    return admitted
  }
  /**
   * Agent metrics: every call an instance makes (its token identifies it), /mcp apart.
   * The count settles within microtasks, before any later request is read. Tracked: on
   * PostgreSQL the token lookup is a round trip that may end after the answer, and
   * shutdown's last flush waits for it.
   */
  const countCall = (request: Request, path: string) => {
    const metric = path === '/mcp' ? 'mcp_calls' : path.startsWith('/api/') ? 'rest_calls' : null
    if (metric && request.headers.has('x-instance-token')) track(countForCaller(ctx, request, metric).catch((err) => log.error({ err }, 'agent metric count failed')))
  }

  // Of admit's work the fast routes need only the auth check and the agent metric: a read has no
  // body, and a write that needs more (size bound, no Content-Length) goes to the full app.
  const gate = (request: Request, path: string) => {
    const refused = unauthorized(request, path)
    if (!refused) countCall(request, path)
    return refused
  }
  const stateRead = stateReadRoute(ctx, gate, observer.route('GET', '/api/state/*'), () => app.fetch)
  const stateWrite = stateWriteRoute(ctx, gate, observer.route('PUT', '/api/state/*'), () => app.fetch)
  app
    // The observer times the whole handling; withOrigin gives the router an absolute URL whatever the Host.
    .wrap(observe as never)
    // Elysia reads a hook's source to guess whether it is async (any `return f(` counts; then it is awaited on
    // every request and the whole router is async) and which context fields to prepare (all, when `c` is
    // passed on whole): these two hooks are written so that neither guess costs anything.
    .onRequest((c) => {
      const admitted = admit(c.request)
      if (admitted instanceof Response) return admitted
      c.request = admitted
    })
    // Parsed bodies are depth-checked before any schema check or handler walks them.
    .onTransform({ as: 'global' }, ({ body, request }) => {
      checkParsedRequest(request.url, body)
    })
    .onError(async ({ code, error, set, request, route }) => {
      const answer = errorAnswer(code, error, set, request, allowedMethods)
      // An audited route's failure is logged before the answer goes out (its service wrote nothing).
      const action = audits.get(`${request.method} ${route}`)
      if (action) await auditFailure(ctx, request, action, answer.code)
      return answer
    })
    .use(apiDocs(ctx, () => app))
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
    .use(queueRoutes(ctx))
    .use(locksRoutes(ctx))
    .use(reservationsRoutes(ctx))
    .use(prometheusRoutes(ctx))

  table = app.routes.map((r) => {
    const hooks = r.hooks as { maxBody?: number; parse?: unknown; detail?: { 'x-audit'?: string } } | undefined
    const action = hooks?.detail?.['x-audit']
    if (action) audits.set(`${r.method} ${r.path}`, action)
    return {
      method: r.method,
      path: r.path,
      re: new RegExp(`^${r.path.replace(/[.+?^${}()|[\]\\]/g, '\\$&').replace(/:[^/]+/g, '[^/]+').replace(/\*/g, '.*')}$`),
      maxBody: hooks?.maxBody,
      raw: [hooks?.parse].flat().some((p: any) => p === 'none' || p?.fn === 'none'),
    }
  })
  large = table.filter((r) => r.maxBody !== undefined)
  raw = table.filter((r) => r.raw)
  return app
}

type Route = (request: Request) => Response | Promise<Response> | undefined

/** A route as a regex (to tell 405 from 404), its declared body limit, and whether it reads its raw body itself (`parse: 'none'`). */
interface RouteInfo {
  method: string
  path: string
  re: RegExp
  maxBody?: number
  raw: boolean
}

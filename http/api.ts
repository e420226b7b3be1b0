// The API app, given its routes: admission (auth, body limits, JSON bodies, agent
// metrics), an access-log line and Prometheus numbers per request, one error mapper
// with the audit entry of a failing audited route, OpenAPI and /docs, and the fast
// routes answered on Bun's own router. Which routes it serves is the caller's to say.
import { Elysia, type AnyElysia } from 'elysia'
import type { Ctx } from '../services/context'
import { SERVER_OPTIONS, checkParsedRequest } from './body'
import { requestObserver } from './observe'
import { apiDocs } from './openapi'
import { admission, type Admit } from './admission'
import { prepareAccess } from './access'
import { pathOf, withOrigin } from './url'
import { errorAnswer, thrownResponse } from './errors'
import { auditLeftover } from './audit'
import { RouteTable, type BodyRule } from './route-table'
import { bodyRead, holdable } from './holds'

/**
 * A route answered on Bun's own router, without Elysia's request pipeline: the plain
 * requests (no query string, no NUL) of the hottest paths. It is admitted and observed
 * as any request; every other request of its pattern goes to the full app, where the
 * same pattern has its full route.
 */
export interface FastRoute {
  method: string
  /** As Bun's router and the full route both write it ('/api/state/*'). */
  pattern: string
  /** Answers an admitted request; `path` is its path. */
  handle(request: Request, path: string): Response | Promise<Response>
  /** Whether a plain request is this route's to answer (say, by its content type): else the full app's. Default all. */
  takes?(request: Request, path: string): boolean
}

type Handle = (request: Request) => Response | Promise<Response>

export function createApi(ctx: Ctx, routes: readonly AnyElysia[], fastRoutes: readonly FastRoute[] = []) {
  // Set once every route is mounted (below), before the app listens.
  let table: RouteTable
  let admit: Admit
  let observer: ReturnType<typeof requestObserver>
  // Bun's routes for the fast ones, each calling its handler once that is made (below).
  const served: Record<string, Record<string, Handle>> = {}
  const handlers = fastRoutes.map((route) => {
    const slot: { handle: Handle } = { handle: (request) => app.fetch(request) }
    ;(served[route.pattern] ??= {})[route.method] = (request) => slot.handle(request)
    return slot
  })

  const app = new Elysia({ ...SERVER_OPTIONS, serve: { ...SERVER_OPTIONS.serve, routes: served } })
  // Elysia calls the wrapper for every request (hoc(route, request)(request)): each router's observed form is made once.
  const observed = new WeakMap<Router, Router>()
  const observe = (route: Router) => observed.get(route) ?? observed.set(route, observer.wrap(holdable(() => app.server, withOrigin(prepared(ctx, route))))).get(route)!
  app
    // The observer times the whole handling; withOrigin gives the router an absolute URL whatever the Host.
    .wrap(observe as never)
    // Elysia reads a hook's source to guess whether it is async (any `return f(` counts; then it is awaited on
    // every request and the whole router is async) and which context fields to prepare (all, when `c` is
    // passed on whole): these two hooks are written so that neither guess costs anything.
    .onRequest((c) => {
      const admitted = admit(c.request, pathOf(c.request.url))
      if (admitted instanceof Response) return admitted
      c.request = admitted
    })
    // Parsed bodies are depth-checked before any schema check or handler walks them.
    .onTransform({ as: 'global' }, ({ body, request }) => {
      checkParsedRequest(request.url, body)
      bodyRead(request)
    })
    .onError(async ({ code, error, set, request, route }) => {
      const answer = errorAnswer(code, error, set, request, (method, path) => table.notServed(method, path))
      // An audited route's failure is logged before the answer goes out (its service wrote nothing).
      const action = table.auditOf(request.method, route)
      if (action) await auditLeftover(ctx, request, action, answer.code)
      return answer
    })
    .use(apiDocs(ctx, () => app))
  for (const routeModule of routes) app.use(routeModule)

  table = new RouteTable(app.routes)
  admit = admission(ctx, table)
  observer = requestObserver(ctx, table)
  fastRoutes.forEach((route, i) => (handlers[i].handle = holdable(() => app.server, fastHandler(ctx, app, route, table.bodyRule(route.method, route.pattern), admit, observer))))
  return app
}

/** What Elysia's wrap gets: the router of one request. */
type Router = (request: Request) => Response | Promise<Response> | undefined

/** `route`, called once what the access check needs is read (a token's first use; at once otherwise). */
const prepared =
  (ctx: Ctx, route: Router): Router =>
  (request) => {
    const reading = prepareAccess(ctx, request)
    return reading ? (reading.then(() => route(request)) as Promise<Response>) : route(request)
  }

/**
 * A fast route's handler: a plain request is admitted (held to `rule`, the body rule
 * of the full route it stands in for), observed and answered; the full app takes the rest.
 */
function fastHandler(ctx: Ctx, app: AnyElysia, route: FastRoute, rule: BodyRule, admit: Admit, observer: ReturnType<typeof requestObserver>): Handle {
  const observe = observer.route(route.method, route.pattern)
  const answer = (request: Request, path: string) => {
    const admitted = admit(request, path, rule, route.pattern)
    if (admitted instanceof Response) return admitted
    const answered = route.handle(admitted, path)
    // What the route did not answer itself (a read on an unreachable database) is mapped as the error hook maps it,
    // not left to Bun's plain-text 500; a Response stays a Response, so Bun still answers a cached read at once.
    return answered instanceof Promise ? answered.catch((err) => thrownResponse(err, admitted)) : answered
  }
  return (request) => {
    const url = request.url
    // A query, or a NUL (which the full app refuses, after auth, with 400): the full app's.
    if (url.includes('?') || url.includes('%00')) return app.fetch(request) as Promise<Response>
    const path = pathOf(url)
    if (route.takes && !route.takes(request, path)) return app.fetch(request) as Promise<Response>
    return observe(request, path, () => {
      const reading = prepareAccess(ctx, request)
      return reading ? reading.then(() => answer(request, path)) : answer(request, path)
    })
  }
}

// Per-request observation for the API app: one access-log line (method, route
// pattern, path, status, duration, actor) and the Prometheus request counter and
// latency histogram, both labelled with the route pattern (`/api/instances/:id`),
// never the raw path, so label sets stay bounded.
//
// It wraps the app's fetch (Elysia `wrap`) rather than using a global afterResponse
// or afterHandle hook: either (even empty) changes how Elysia compiles every route,
// and with one the server stalled past test/validate.test.ts's 100 ms bound while
// answering a large validation. The wrap also sees answers given in onRequest (401, 413).
// GET /health is counted but not access-logged: probes would drown the log (and a
// probe loop's log lines were enough to push that same stall past the bound).
import type { Ctx } from '../services/context'
import { accessLog } from '../lib/log'
import { httpDuration, httpRequests } from '../lib/prometheus'
import { Lru } from '../lib/lru'
import { actorWithoutInstance, callerOf } from './caller'

/** The path of an absolute request URL, without the query (cheaper than new URL on every request). */
const pathOf = (url: string) => {
  const start = url.indexOf('/', url.indexOf('//') + 2)
  const query = url.indexOf('?', start)
  return query < 0 ? url.slice(start) : url.slice(start, query)
}

/** Requests matching no route share one label. */
const UNMATCHED = '(unmatched)'

type Handle = (request: Request) => Response | Promise<Response> | undefined

export function requestObserver(ctx: Ctx, routeOf: (method: string, path: string) => string | undefined) {
  // onRequest may hand the handler a replacement request (size-bounded, relabelled JSON); the caller is cached on that one.
  const replacements = new WeakMap<Request, Request>()
  // Most requests repeat a few paths; matching one against the route table costs a regex scan.
  const routes = new Lru<string, string>(2048)

  const record = (request: Request, status: number, seconds: number, actor: string | null) => {
    const path = pathOf(request.url) // never the query: a WebSocket upgrade may carry ?token=
    const route = routes.getOr(`${request.method} ${path}`, () => routeOf(request.method, path) ?? UNMATCHED)
    const labels = { method: request.method, route, status: String(status) }
    httpRequests.inc(labels)
    httpDuration.observe(labels, seconds)
    if (path !== '/health') accessLog({ method: request.method, route, path, status, duration_ms: Math.round(seconds * 1e6) / 1e3, actor })
  }

  const finished = (request: Request, status: number, started: number) => {
    const seconds = (performance.now() - started) / 1000
    // A refused request has no caller; without an instance token the caller needs no lookup.
    if (status === 401) return record(request, status, seconds, null)
    if (!request.headers.has('x-instance-token')) return record(request, status, seconds, actorWithoutInstance(ctx))
    // Resolved from the cache the audit and agent metrics filled for the request the handler saw.
    void callerOf(ctx, replacements.get(request) ?? request).then(
      (caller) => record(request, status, seconds, caller.actor),
      () => record(request, status, seconds, null),
    )
  }

  return {
    replaced(original: Request, replacement: Request): void {
      if (original !== replacement) replacements.set(original, replacement)
    },
    /** For `app.wrap`: times the whole handling, up to the Response. */
    wrap: (handle: Handle) => (request: Request) => {
      const started = performance.now()
      // After a WebSocket upgrade Bun sends 101 and ignores the 200 (or nothing) the handler returns.
      const upgrade = request.headers.get('upgrade')?.toLowerCase() === 'websocket'
      const statusOf = (res: Response | undefined) => (!res || (upgrade && res.status === 200) ? 101 : res.status)
      const answer = handle(request)
      if (answer instanceof Promise)
        return answer.then((res) => {
          finished(request, statusOf(res), started)
          return res
        })
      finished(request, statusOf(answer), started)
      return answer
    },
  }
}

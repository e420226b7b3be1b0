// Per-request observation for the API app: one access-log line (method, route
// pattern, path, status, duration, actor) and the Prometheus request counter and
// latency histogram, both labelled with the route pattern (`/api/instances/:id`),
// never the raw path, so label sets stay bounded.
import type { Ctx } from '../services/context'
import { log } from '../lib/log'
import { httpDuration, httpRequests } from '../lib/prometheus'
import { callerOf } from './caller'

/** Requests matching no route share one label. */
const UNMATCHED = '(unmatched)'

const started = new WeakMap<Request, number>()

export function requestObserver(ctx: Ctx) {
  const elapsed = (request: Request) => (performance.now() - (started.get(request) ?? performance.now())) / 1000
  const record = (request: Request, route: string, status: number, seconds: number, actor: string | null) => {
    const labels = { method: request.method, route, status: String(status) }
    httpRequests.inc(labels)
    httpDuration.observe(labels, seconds)
    const path = new URL(request.url).pathname // never the query: a WebSocket upgrade may carry ?token=
    log.info({ method: request.method, route, path, status, duration_ms: Math.round(seconds * 1e6) / 1e3, actor }, `${request.method} ${path} ${status}`)
  }
  return {
    /** Marks the start; call with the request the handler will see. */
    start(request: Request): void {
      started.set(request, performance.now())
    },
    /** A request answered in onRequest (401, 413): no route ran, no caller was identified. */
    refused(request: Request, status: number): void {
      record(request, UNMATCHED, status, elapsed(request), null)
    },
    /** After the response: the route that ran (if any), the status sent, and who called. */
    finished(request: Request, route: string | undefined, status: number): void {
      const seconds = elapsed(request)
      // Resolved from the cache the audit and agent metrics filled; a lookup only for a token not seen yet.
      void callerOf(ctx, request).then(
        (caller) => record(request, route || UNMATCHED, status, seconds, caller.actor),
        () => record(request, route || UNMATCHED, status, seconds, null),
      )
    },
  }
}

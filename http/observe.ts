// Per-request observation for the API app: one access-log line (method, route
// pattern, path, status, duration, actor) and the Prometheus request counter and
// latency histogram, both labelled with the route pattern (`/api/instances/:id`),
// never the raw path, so label sets stay bounded.
//
// It wraps the app's fetch (Elysia `wrap`) rather than using a global afterResponse
// or afterHandle hook: either (even empty) changes how Elysia compiles every route,
// and with one the server stalled while answering a large validation (the stall
// test/validate.test.ts bounds). The wrap also sees answers given in onRequest (401, 413).
// GET /health, /livez and /readyz are counted but not access-logged: probes would drown the log (and a
// probe loop's log lines were enough to push that same stall past the bound).
import type { Ctx } from '../services/context'
import { accessLog } from '../obs/log'
import { httpDuration, httpRequests, type CounterSeries, type HistogramSeries } from '../obs/prometheus'
import { actorWithoutInstance, caller } from './caller'
import type { Route, RouteTable } from './route-table'
import { pathOf } from './url'

/** The probes a load balancer calls: not access-logged, and open to anyone, so they act as no instance. */
const PROBES = new Set(['/health', '/livez', '/readyz'])

/** Requests matching no route share one label. */
const UNMATCHED = '(unmatched)'

type Handle = (request: Request) => Response | Promise<Response> | undefined

/** A method and route pattern, with the counter and histogram series of each status it answered. */
class RouteSeries {
  private byStatus = new Map<number, { requests: CounterSeries; duration: HistogramSeries }>()

  constructor(
    private method: string,
    readonly route: string,
  ) {}

  count(status: number, seconds: number): void {
    let series = this.byStatus.get(status)
    if (!series) {
      const labels = [this.method, this.route, String(status)]
      this.byStatus.set(status, (series = { requests: httpRequests.labels(...labels), duration: httpDuration.labels(...labels) }))
    }
    series.requests.inc()
    series.duration.observe(seconds)
  }
}

export function requestObserver(ctx: Ctx, table: RouteTable) {
  const byRoute = new Map<string, RouteSeries>()
  // Keyed by the table's route object (the table remembers each path's): no key string to build per request.
  const ofRoute = new Map<Route, RouteSeries>()

  /** The series of one method and route pattern, made on first use. */
  const routeSeries = (method: string, route: string): RouteSeries => {
    const routeKey = `${method} ${route}`
    let series = byRoute.get(routeKey)
    if (!series) byRoute.set(routeKey, (series = new RouteSeries(method, route)))
    return series
  }

  const seriesOf = (method: string, path: string): RouteSeries => {
    const route = table.routeOf(method, path)
    if (!route) return routeSeries(method, UNMATCHED)
    let series = ofRoute.get(route)
    if (!series) ofRoute.set(route, (series = routeSeries(method, route.pattern)))
    return series
  }

  const record = (request: Request, path: string, series: RouteSeries, status: number, seconds: number, actor: string | null) => {
    series.count(status, seconds)
    if (!PROBES.has(path)) accessLog({ method: request.method, route: series.route, path, status, duration_ms: Math.round(seconds * 1e6) / 1e3, actor })
  }

  /** `path` never has the query (a WebSocket upgrade may carry ?token=); `known`: the route's series, when the caller has it. */
  const finished = (request: Request, status: number, started: number, path = pathOf(request.url), known: RouteSeries | null = null) => {
    const seconds = (performance.now() - started) / 1000
    const series = known ?? seriesOf(request.method, path)
    // A refused request has no caller; without an instance token the caller needs no lookup, nor a probe
    // (open to anyone, it acts as nobody). A call
    // its role may not make (403 at admission) is not looked up either: the lookup counts as the
    // instance's sign of life, and a refused call must change nothing.
    if (status === 401) return record(request, path, series, status, seconds, null)
    if (status === 403 || PROBES.has(path) || !request.headers.has('x-instance-token')) return record(request, path, series, status, seconds, actorWithoutInstance(ctx, request))
    // The lookup the audit and agent metrics made for this request (http/caller.ts), or its own.
    void caller(ctx, request).then(
      ({ actor }) => record(request, path, series, status, seconds, actor),
      () => record(request, path, series, status, seconds, null),
    )
  }

  /** Calls `done` with the answer once it is known (at once, or when its Promise settles), and passes the answer on. */
  const whenAnswered = <R>(answer: R | Promise<R>, done: (res: R) => void): R | Promise<R> => {
    if (answer instanceof Promise)
      return answer.then((res) => {
        done(res)
        return res
      })
    done(answer)
    return answer
  }

  // After a WebSocket upgrade Bun sends 101 and ignores the 200 (or nothing) the handler returns.
  const statusOf = (request: Request, res: Response | undefined) =>
    res && res.status !== 200 ? res.status : !res || request.headers.get('upgrade')?.toLowerCase() === 'websocket' ? 101 : 200

  return {
    /** For `app.wrap`: times the whole handling, up to the Response. */
    wrap:
      <H extends Handle>(handle: H) =>
      (request: Request): ReturnType<H> => {
        const started = performance.now()
        return whenAnswered(handle(request), (res) => finished(request, statusOf(request, res), started)) as ReturnType<H>
      },
    /**
     * For a handler that knows its route pattern and has the request's path (the fast
     * state routes, never a WebSocket upgrade): times `handle` as wrap does, recording to that
     * route's series without looking the path up.
     */
    route(method: string, pattern: string) {
      const series = routeSeries(method, pattern)
      return (request: Request, path: string, handle: () => Response | Promise<Response>): Response | Promise<Response> => {
        const started = performance.now()
        return whenAnswered(handle(), (res) => finished(request, res.status, started, path, series))
      }
    },
  }
}

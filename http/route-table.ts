// What the API must know of a route before or beside Elysia's router, read once
// from the options each route module declares next to its path (`maxBody`,
// `parse: 'none'`, `audit`): a request's body limit and whether its route reads
// the body raw (both needed before Elysia parses), the methods a path allows (405's
// Allow), the audit action of a failing route, and the route pattern that labels
// logs and Prometheus series (Elysia does not hand the matched pattern to a wrap).
import { MAX_BODY } from './body'
import type { Role } from '../services/audit'
import { requiredRole } from './access'
import { NOT_FOUND, methodNotAllowed, type NotServed } from './errors'
import { canonicalPath } from './url'

/** A route as Elysia lists it (`app.routes`): method, path pattern, and the options it was declared with. */
export interface DeclaredRoute {
  method: string
  path: string
  hooks?: unknown
}

/** What the API applies before a request's route is known: its body limit, and whether the route reads its raw body itself. */
export interface BodyRule {
  limit: number
  raw: boolean
}

/** A declared route, matched. */
export interface Route extends BodyRule {
  /** The method a request uses: the WebSocket route is listed as "WS" and reached with a GET. */
  method: string
  /** The method as listed (405's Allow names "WS"). */
  listed: string
  pattern: string
  re: RegExp
  audit?: string
  /** The least role that may call it (http/access.ts). */
  role: Role
}

/** Distinct `METHOD path` pairs remembered; raw paths are unbounded, so the memory starts over when full. */
const MAX_PATHS = 4096

const PLAIN: BodyRule = { limit: MAX_BODY, raw: false }

const patternRe = (path: string) =>
  new RegExp(`^${path.replace(/[.+?^${}()|[\]\\]/g, '\\$&').replace(/:[^/]+/g, '[^/]+').replace(/\*/g, '.*')}$`)

/** A segment's rank as the routers try them: a literal before a parameter before a wildcard. */
const segmentRank = (segment: string) => (segment === '*' ? 2 : segment.startsWith(':') ? 1 : 0)

/** Orders two patterns as the routers prefer them for a path both match: at the first segment they differ in, the more literal one. */
function bySpecificity(a: Route, b: Route): number {
  const [x, y] = [a.pattern.split('/'), b.pattern.split('/')]
  for (let i = 0; i < Math.min(x.length, y.length); i++) {
    const rank = segmentRank(x[i]) - segmentRank(y[i])
    if (rank) return rank
  }
  return y.length - x.length
}

export class RouteTable {
  private routes: Route[]
  /** Routes whose body rule is not PLAIN: the only ones a body needs matched against. */
  private special: Route[]
  private fixed = new Map<string, Route>()
  /** Parameters before wildcards, as the router matches. */
  private dynamic: Route[]
  private audits = new Map<string, string>()
  /** The route of each `METHOD path` seen, by method: no key string to build per request. */
  private seen = new Map<string, Map<string, Route | null>>()
  private paths = 0

  constructor(declared: readonly DeclaredRoute[]) {
    this.routes = declared.map((r) => {
      const hooks = r.hooks as { maxBody?: number; parse?: unknown; detail?: { 'x-audit'?: string } } | undefined
      const raw = [hooks?.parse].flat().some((p: any) => p === 'none' || p?.fn === 'none')
      const method = r.method === 'WS' ? 'GET' : r.method
      const role = requiredRole(method, r.path)
      return { method, listed: r.method, pattern: r.path, re: patternRe(r.path), limit: hooks?.maxBody ?? MAX_BODY, raw, audit: hooks?.detail?.['x-audit'], role }
    })
    this.special = this.routes.filter((r) => r.raw || r.limit !== MAX_BODY)
    const isDynamic = (r: Route) => /[:*]/.test(r.pattern)
    for (const r of this.routes) if (!isDynamic(r)) this.fixed.set(`${r.method} ${r.pattern}`, r)
    this.dynamic = this.routes.filter(isDynamic).sort(bySpecificity)
    for (const r of this.routes) if (r.audit) this.audits.set(`${r.listed} ${r.pattern}`, r.audit)
  }

  /** The body rule of a request (its route's declared `maxBody` and raw body, else MAX_BODY and parsed). */
  bodyRule(method: string, path: string): BodyRule {
    return this.special.find((r) => r.method === method && r.re.test(path)) ?? PLAIN
  }

  /**
   * The route a request matches (null for none), looked up once per method and path.
   * Only the exact spelling matches, as both routers serve it (Bun's, and Elysia's with
   * `strictPath`): no trailing or doubled slash, no other case, no percent-encoded
   * literal; parameters may be percent-encoded. A HEAD is served by its GET route.
   */
  routeOf(method: string, path: string): Route | null {
    let ofMethod = this.seen.get(method)
    const known = ofMethod?.get(path)
    if (known !== undefined) return known
    const route = this.match(method, path) ?? (method === 'HEAD' ? this.match('GET', path) : null)
    if (this.paths++ >= MAX_PATHS) {
      this.seen.clear()
      this.paths = 1
      ofMethod = undefined
    }
    if (!ofMethod) this.seen.set(method, (ofMethod = new Map()))
    ofMethod.set(path, route)
    return route
  }

  private match(method: string, path: string): Route | null {
    return this.fixed.get(`${method} ${path}`) ?? this.dynamic.find((r) => r.method === method && r.re.test(path)) ?? null
  }

  /** The methods of the routes a path matches (a 405's Allow). */
  allowed(path: string): string[] {
    return [...new Set(this.routes.filter((r) => r.re.test(path)).map((r) => r.listed))]
  }

  /**
   * The answer to `method path` when no route serves it: 405 with the methods served
   * there, else 404, naming the spelling that is served when the path is another
   * spelling of a route (a trailing or doubled slash, a percent-encoded letter).
   */
  notServed(method: string, path: string): NotServed {
    const allowed = this.allowed(path).filter((m) => m !== method)
    if (allowed.length) return { status: 405, message: methodNotAllowed(method), allow: allowed.join(', ') }
    const canonical = canonicalPath(path)
    if (canonical !== path && (this.routeOf(method, canonical) || this.allowed(canonical).length))
      return { status: 404, message: `not found: no route is spelled ${path}; call ${canonical} (no trailing or doubled slash, no percent-encoded letters)` }
    return NOT_FOUND
  }

  /** The audit action of the route `METHOD pattern`, when it is audited. */
  auditOf(method: string, pattern: string): string | undefined {
    return this.audits.get(`${method} ${pattern}`)
  }
}

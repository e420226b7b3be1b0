// GET /api/state/<key> on Bun's own router, without Elysia's request pipeline: the
// hottest read (an agent polling a key), answered synchronously from the document cache
// when the value is there. It does what the Elysia route does for a plain read (auth,
// agent metrics, the access-log line and Prometheus numbers, ETag and 304, {error, code}
// for 401, 400 and 404) and hands anything else (a query string: history, version,
// diff, wait) to the full app.
import type { Ctx } from '../services/context'
import type { Doc } from '../store/versioned'
import { errorResponse } from './errors'
import { keyParam, rawResponse } from './documents'
import { pathOf } from './url'

const PREFIX = '/api/state/'

type Handle = (request: Request) => Response | Promise<Response>

/**
 * `admit` is the API app's gate (auth, agent metric count), `observe` its per-request
 * observer, `full` the whole app for requests this path does not take.
 */
export function stateReadRoute(ctx: Ctx, admit: (request: Request) => Request | Response, observe: (h: Handle) => Handle, full: () => Handle): Handle {
  const answer = (request: Request, doc: Doc | null) => (doc ? rawResponse(request, doc) : errorResponse(404, 'key not found'))
  const read = observe((request) => {
    ;(globalThis as any).__hits = ((globalThis as any).__hits ?? 0) + 1
    const admitted = admit(request)
    if (admitted instanceof Response) return admitted
    let key: string
    try {
      key = keyParam(pathOf(request.url).slice(PREFIX.length))
    } catch (err) {
      return errorResponse(400, (err as Error).message)
    }
    // Returning a Response, not a Promise, is what lets Bun answer at once (measured: ~8% of GET throughput).
    const doc = ctx.store.state.cached(key)
    if (doc !== undefined) return answer(admitted, doc)
    return ctx.store.state.get(key).then((doc) => answer(admitted, doc))
  })
  // A query, or a NUL the full app refuses (after auth) with 400: the full app's, as are HEAD and the other methods.
  return (request) => (request.url.includes('?') || request.url.includes('%00') ? full()(request) : read(request))
}

// GET and PUT /api/state/<key> on Bun's own router, without Elysia's request pipeline:
// the hottest read (an agent polling a key), answered synchronously from the document
// cache when the value is there, and the hottest write. Each does what the Elysia route
// does for a plain request (auth, agent metrics, the access-log line and Prometheus
// numbers, {error, code} answers; for a read ETag and 304; for a write the same handler
// body, routes/state.ts putFromRequest, and the audit entry of a failure) and hands
// anything else (a query string: history, version, diff, wait, if_version; a write of
// unstated or oversized length) to the full app.
import type { Ctx } from '../services/context'
import type { Doc } from '../store/versioned'
import { errorResponse, thrownResponse } from './errors'
import { auditFailure, scopeOf } from './audit'
import { MAX_BODY } from './body'
import { putFromRequest, STATE_PUT } from '../routes/state'
import { keyParam, rawResponse } from './documents'
import { pathOf } from './url'
import { Lru } from '../lib/lru'

const PREFIX = '/api/state/'

type Handle = (request: Request) => Response | Promise<Response>
/** The API app's auth check and agent metric count: its 401, or null. */
type Gate = (request: Request, path: string) => Response | null
/** Times `handle` and records it (access line, Prometheus) as a request for `path` on this route. */
type Observe = (request: Request, path: string, handle: () => Response | Promise<Response>) => Response | Promise<Response>

/**
 * Answers with `handle`, observed, a request this path takes; the full app the rest: a query,
 * a NUL (which the full app refuses, after auth, with 400), and whatever `others` names.
 */
function plainOnly(observe: Observe, full: () => Handle, handle: (request: Request, path: string) => Response | Promise<Response>, others = (_: Request) => false): Handle {
  return (request) => {
    const url = request.url
    if (url.includes('?') || url.includes('%00') || others(request)) return full()(request)
    const path = pathOf(url)
    return observe(request, path, () => handle(request, path))
  }
}

/**
 * Answers of cached values up to KEEP_ANSWER_BYTES are kept whole (KEPT_ANSWERS_BYTES in
 * all), for a clone per read: a new Response with its headers costs three times more, and
 * copies the value each time (a kept one holds its own copy, hence the bound).
 */
const KEEP_ANSWER_BYTES = 16 * 1024
const KEPT_ANSWERS_BYTES = 8 * 1024 * 1024

/**
 * `gate` is the API app's auth check and agent metric count, `observe` its per-request
 * observer for this route, `full` the whole app for requests this path does not take
 * (HEAD and the other methods are the full app's too).
 */
export function stateReadRoute(ctx: Ctx, gate: Gate, observe: Observe, full: () => Handle): Handle {
  // Keyed by the cached document itself: a write caches a new object, so a kept answer is never stale.
  const answers = new Lru<Doc, { response: Response; bytes: number }>(KEPT_ANSWERS_BYTES, (a) => a.bytes + 300)
  const answer = (request: Request, doc: Doc | null, cached: boolean) => {
    if (!doc) return errorResponse(404, 'key not found')
    if (!cached || doc.value.byteLength > KEEP_ANSWER_BYTES || request.headers.has('if-none-match')) return rawResponse(request, doc)
    return answers.getOr(doc, () => ({ response: rawResponse(request, doc), bytes: doc.value.byteLength })).response.clone()
  }
  const read = (request: Request, path: string) => {
    const refused = gate(request, path)
    if (refused) return refused
    let key: string
    try {
      key = keyParam(path.slice(PREFIX.length))
    } catch (err) {
      return errorResponse(400, (err as Error).message)
    }
    // Returning a Response, not a Promise, is what lets Bun answer at once (measured: ~8% of GET throughput).
    const doc = ctx.store.state.cached(key)
    if (doc !== undefined) return answer(request, doc, true)
    return ctx.store.state.get(key).then((doc) => answer(request, doc, false))
  }
  return plainOnly(observe, full, read)
}

/**
 * The plain PUT: `gate`, `observe` and `full` as for the read. Requests the full app would
 * refuse before its handler runs (413 by Content-Length, or a body of unstated length, which
 * it bounds as it streams) go to it, so both ways answer and audit alike.
 */
export function stateWriteRoute(ctx: Ctx, gate: Gate, observe: Observe, full: () => Handle): Handle {
  const write = async (request: Request, path: string) => {
    const refused = gate(request, path)
    if (refused) return refused
    try {
      // Inside the try, as the full app's audit hook resolves it: a failed caller lookup is its {error, code} answer too.
      const scope = await scopeOf(ctx, request, STATE_PUT)
      return Response.json(await putFromRequest(ctx, request, keyParam(path.slice(PREFIX.length)), {}, scope))
    } catch (err) {
      const answer = thrownResponse(err, request)
      await auditFailure(ctx, request, STATE_PUT, answer.status)
      return answer
    }
  }
  return plainOnly(observe, full, write, (request) => {
    const length = request.headers.get('content-length')
    return length === null || Number(length) > MAX_BODY
  })
}

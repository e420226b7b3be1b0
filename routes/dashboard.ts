// The dashboard port: the web UI (files of public/, embedded in the compiled
// binary), GET /health, and /api/* forwarded to the API with the caller's headers
// (Authorization included), so the API's auth covers the dashboard too; the events
// WebSocket is served in process with the API's own handlers.
import { Elysia, type AnyElysia } from 'elysia'
import type { Ctx } from '../services/context'
import { credentialOf, prepareAccess } from '../http/access'
import { setCredential } from '../http/caller'
import { urlOf, withOrigin } from '../http/url'
import { holdable } from '../http/holds'
import { UNAUTHORIZED, errorAnswer, errorResponse, methodNotAllowed } from '../http/errors'
import { SERVER_OPTIONS } from '../http/body'
import { healthRoutes } from './health'
import { subscribeSocket } from './events'
import { assets } from '../public/assets'

const HOP_BY_HOP = ['host', 'connection', 'keep-alive', 'transfer-encoding', 'upgrade', 'content-length']

export async function forward(ctx: Ctx, request: Request): Promise<Response> {
  const url = urlOf(request)
  const headers = new Headers(request.headers)
  for (const h of HOP_BY_HOP) headers.delete(h)
  try {
    const upstream = await fetch(ctx.apiUrl + url.pathname + url.search, {
      method: request.method,
      headers,
      // Streamed, never buffered here: a restore upload may be up to 1 GB; the API applies each route's limit.
      body: request.method === 'GET' || request.method === 'HEAD' ? undefined : request.body,
      duplex: 'half',
      redirect: 'manual',
      decompress: false,
    } as RequestInit)
    const out = new Headers(upstream.headers)
    out.delete('content-length')
    out.delete('transfer-encoding')
    if (request.method === 'TRACE') return traceAnswer(upstream.status, out)
    return new Response(upstream.body, { status: upstream.status, headers: out })
  } catch (err) {
    return errorResponse(502, `API unreachable: ${(err as Error).message}`)
  }
}

/**
 * The API takes no TRACE, so its answer is an {error, code}, but Bun's fetch reads an
 * answer to TRACE as bodyless (as for HEAD) and drops it: rebuilt here with the
 * API's status and headers (a 405's Allow).
 */
function traceAnswer(status: number, headers: Headers): Response {
  const message =
    status === 405 ? methodNotAllowed('TRACE') : status === 401 ? UNAUTHORIZED : status === 404 ? 'not found' : `TRACE refused with status ${status}`
  const body = JSON.stringify({ error: message, code: status })
  headers.set('content-type', 'application/json')
  return new Response(body, { status, headers })
}

// The UI loads only its own files and talks only to this origin.
const UI_HEADERS = {
  'cache-control': 'no-cache',
  'x-content-type-options': 'nosniff',
  'referrer-policy': 'no-referrer',
  'content-security-policy':
    "default-src 'self'; img-src 'self' data: blob:; connect-src 'self'; frame-ancestors 'none'; base-uri 'none'; form-action 'self'",
}

function serveAsset(path: string): Response {
  const file = Bun.file(path)
  return new Response(file, { headers: { ...UI_HEADERS, 'content-type': file.type } })
}

/**
 * /api/events/subscribe on the dashboard port: the API's own subscription handlers
 * (routes/events.ts), in process, behind the same token check (?token= included).
 * A browser that stops reading gets the API's bounded, counted buffer; a relay
 * through a second socket would buffer without limit in between.
 */
function eventsStream(ctx: Ctx) {
  const socket = subscribeSocket(ctx, 'dashboard')
  return new Elysia().ws('/api/events/subscribe', {
    ...socket,
    async beforeHandle({ request, query }) {
      await prepareAccess(ctx, request)
      const credential = credentialOf(ctx, request, urlOf(request).pathname)
      if (!credential) return errorResponse(401, UNAUTHORIZED)
      // The socket closes when this token ends, as on the API port.
      setCredential(request, credential)
      return socket.beforeHandle({ query })
    },
  })
}

/** The dashboard app. Its event streams are bus subscriptions: they end with the others at shutdown. */
export function createDashboard(ctx: Ctx) {
  const app: AnyElysia = new Elysia(SERVER_OPTIONS).wrap((route) => holdable(() => app.server, withOrigin(route)))
    // The API's error answers (no 405s: /api/* takes every method). First: Elysia applies the hook only to the
    // routes mounted after it, and the event stream's bad after_id must be its 400, not a plain-text 500.
    .onError(({ code, error, set, request }) => errorAnswer(code, error, set, request))
    .use(healthRoutes(ctx.startedAt))
    .use(eventsStream(ctx))
    .all('/api/*', ({ request }) => forward(ctx, request), { parse: 'none' })
  for (const [path, file] of Object.entries(assets)) app.get(path, () => serveAsset(file))
  return app
}

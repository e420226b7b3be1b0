// The dashboard port: the web UI (files of public/, embedded in the compiled
// binary), GET /health, and /api/* forwarded to the API with the caller's headers
// (Authorization included) — plain HTTP and the events WebSocket alike — so the
// API's auth covers the dashboard too.
import { Elysia } from 'elysia'
import type { Ctx } from '../services/context'
import { authorized } from './caller'
import { urlOf, withOrigin } from './url'
import { errorResponse } from './errors'
import { SERVER_OPTIONS } from './body'
import { healthRoutes } from '../routes/health'
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
    return new Response(upstream.body, { status: upstream.status, headers: out })
  } catch (err) {
    return errorResponse(502, `API unreachable: ${(err as Error).message}`)
  }
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

/** Close code when the API drops the stream (the browser reconnects with after_id). */
const UPSTREAM_GONE = 1011
/** How long the API gets to accept the stream before the browser's upgrade is refused with 502. */
const CONNECT_TIMEOUT_MS = 5000

type Frame = string | ArrayBuffer

// Bun's client WebSocket takes request headers; the DOM typings in scope do not know that.
const UpstreamSocket = WebSocket as unknown as new (url: string, options: { headers: Record<string, string> }) => WebSocket

/** One browser socket's connection to the API; frames from the API wait in `early` until the browser side is open. */
interface Tunnel {
  upstream: WebSocket
  early: Frame[]
  /** The browser's side, once its upgrade completed. */
  client: { send(frame: Frame): void; close(code: number, reason: string): void } | null
}

/**
 * /api/events/subscribe: the browser's WebSocket is accepted only once the API
 * has accepted the same stream (same token check first, ?token= included), so no
 * event published after the browser sees "open" can be missed; then frames are
 * relayed both ways. Query string and Authorization go to the API unchanged, so
 * pattern and after_id arrive as sent. `closeAll` ends every stream at shutdown,
 * which would otherwise wait for the browsers to hang up.
 */
function eventsTunnel(ctx: Ctx) {
  const tunnels = new Set<Tunnel>()
  // Keyed by the upgrade request: the hook that connects and the socket's open handler see the same Request.
  const connecting = new WeakMap<Request, Promise<Tunnel | null>>()
  const byClient = new Map<string, Tunnel>()

  /** Opens the API's stream; resolves once it is open (null when the API refuses, fails or is too slow). */
  const openUpstream = (url: string, headers: Record<string, string>) =>
    new Promise<Tunnel | null>((resolve) => {
      const upstream = new UpstreamSocket(url, { headers })
      upstream.binaryType = 'arraybuffer'
      const timer = setTimeout(() => upstream.close(), CONNECT_TIMEOUT_MS)
      upstream.onclose = () => {
        clearTimeout(timer)
        resolve(null)
      }
      upstream.onopen = () => {
        clearTimeout(timer)
        const tunnel: Tunnel = { upstream, early: [], client: null }
        tunnels.add(tunnel)
        upstream.onmessage = (e) => (tunnel.client ? tunnel.client.send(e.data) : tunnel.early.push(e.data))
        upstream.onclose = (e) => {
          tunnels.delete(tunnel)
          // 1005/1006 are reserved (never sent on the wire); report them as the API dropping the stream.
          const known = e.code >= 1000 && e.code < 5000 && e.code !== 1005 && e.code !== 1006
          tunnel.client?.close(known ? e.code : UPSTREAM_GONE, known ? e.reason : 'event stream closed by the API')
        }
        resolve(tunnel)
      }
    })

  const plugin = new Elysia().ws('/api/events/subscribe', {
    async beforeHandle({ request }) {
      const url = urlOf(request)
      if (!authorized(ctx, request, url)) return errorResponse(401, 'invalid or missing bearer token')
      let pending = connecting.get(request)
      if (!pending) {
        const auth = request.headers.get('authorization')
        pending = openUpstream(ctx.apiUrl.replace(/^http/, 'ws') + url.pathname + url.search, auth ? { authorization: auth } : {})
        connecting.set(request, pending)
      }
      const tunnel = await pending
      if (!tunnel) return errorResponse(502, 'the API did not accept the event stream')
      // Should the browser never complete the upgrade, do not keep the API's socket open.
      setTimeout(() => tunnel.client ?? tunnel.upstream.close(), CONNECT_TIMEOUT_MS)
    },
    async open(ws) {
      const tunnel = await connecting.get(ws.data.request)
      if (!tunnel || tunnel.upstream.readyState !== WebSocket.OPEN) return ws.close(UPSTREAM_GONE, 'event stream closed by the API')
      byClient.set(ws.id, tunnel)
      tunnel.client = {
        send: (frame) => ws.raw.send(frame),
        close: (code, reason) => {
          byClient.delete(ws.id)
          if (ws.raw.readyState === 1) ws.close(code, reason)
        },
      }
      for (const frame of tunnel.early.splice(0)) ws.raw.send(frame)
    },
    message(ws, message) {
      // Elysia hands over parsed JSON for JSON text; relay it as text again.
      const frame: Frame =
        typeof message === 'string' ? message
        : message instanceof ArrayBuffer ? message
        : message instanceof Uint8Array ? (message.slice().buffer as ArrayBuffer)
        : JSON.stringify(message)
      byClient.get(ws.id)?.upstream.send(frame)
    },
    close(ws) {
      const tunnel = byClient.get(ws.id)
      byClient.delete(ws.id)
      if (tunnel) {
        tunnel.client = null
        tunnel.upstream.close()
      }
    },
  })

  const closeAll = () => {
    for (const tunnel of tunnels) {
      tunnel.client?.close(1001, 'server shutting down')
      tunnel.client = null
      tunnel.upstream.close(1001, 'server shutting down')
    }
    tunnels.clear()
  }
  return { plugin, closeAll }
}

/**
 * The dashboard app. `onShutdown` receives what must run before the server
 * stops: ending the open event streams, or stopping would wait on them forever.
 */
export function createDashboard(ctx: Ctx, onShutdown: (stop: () => void) => void = () => {}) {
  const events = eventsTunnel(ctx)
  onShutdown(events.closeAll)
  // The API's own largest limit (restore) plus slack; each route's limit is enforced by the API as the body streams through.
  const app = new Elysia(SERVER_OPTIONS).wrap(withOrigin)
    .use(healthRoutes(ctx.startedAt))
    .use(events.plugin)
    .all('/api/*', ({ request }) => forward(ctx, request), { parse: 'none' })
  for (const [path, file] of Object.entries(assets)) app.get(path, () => serveAsset(file))
  return app.onError(({ code, set }) => {
    const status = code === 'NOT_FOUND' ? 404 : 500
    set.status = status
    return { error: status === 404 ? 'not found' : 'internal server error', code: status }
  })
}

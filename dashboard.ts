// The dashboard port: the web UI (files of public/, embedded in the compiled
// binary), GET /health, and /api/* forwarded to the API with the caller's headers
// (Authorization included) — plain HTTP and the events WebSocket alike — so the
// API's auth covers the dashboard too.
import { Elysia } from 'elysia'
import type { Ctx } from './lib/context'
import { authorized } from './api'
import { errorResponse } from './routes/http'
import { healthRoutes } from './routes/health'
import { assets } from './dashboard-assets'

const HOP_BY_HOP = ['host', 'connection', 'keep-alive', 'transfer-encoding', 'upgrade', 'content-length']

export async function forward(ctx: Ctx, request: Request): Promise<Response> {
  const url = new URL(request.url)
  const headers = new Headers(request.headers)
  for (const h of HOP_BY_HOP) headers.delete(h)
  try {
    const upstream = await fetch(ctx.apiUrl + url.pathname + url.search, {
      method: request.method,
      headers,
      body: request.method === 'GET' || request.method === 'HEAD' ? undefined : await request.arrayBuffer(),
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
  deliver: ((frame: Frame) => void) | null
  closed: ((code: number, reason: string) => void) | null
}

/** Opens the API's stream; resolves once it is open (null when the API refuses, fails or is too slow). */
function openUpstream(url: string, headers: Record<string, string>): Promise<Tunnel | null> {
  return new Promise((resolve) => {
    const upstream = new UpstreamSocket(url, { headers })
    upstream.binaryType = 'arraybuffer'
    const timer = setTimeout(() => upstream.close(), CONNECT_TIMEOUT_MS)
    upstream.onclose = () => {
      clearTimeout(timer)
      resolve(null)
    }
    upstream.onopen = () => {
      clearTimeout(timer)
      const tunnel: Tunnel = { upstream, early: [], deliver: null, closed: null }
      upstream.onmessage = (e) => (tunnel.deliver ? tunnel.deliver(e.data) : tunnel.early.push(e.data))
      upstream.onclose = (e) => tunnel.closed?.(e.code, e.reason)
      resolve(tunnel)
    }
  })
}

/**
 * /api/events/subscribe: the browser's WebSocket is accepted only once the API
 * has accepted the same stream (same token check first, ?token= included), so no
 * event published after the browser sees "open" can be missed; then frames are
 * relayed both ways. Query string and Authorization go to the API unchanged, so
 * pattern and after_id arrive as sent.
 */
function eventsTunnel(ctx: Ctx) {
  // Keyed by the upgrade request: the hook that connects and the socket's open handler see the same Request.
  const connecting = new WeakMap<Request, Promise<Tunnel | null>>()
  const live = new Map<string, Tunnel>()
  return new Elysia().ws('/api/events/subscribe', {
    async beforeHandle({ request }) {
      const url = new URL(request.url)
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
      setTimeout(() => tunnel.deliver ?? tunnel.upstream.close(), CONNECT_TIMEOUT_MS)
    },
    async open(ws) {
      const tunnel = await connecting.get(ws.data.request)
      if (!tunnel || tunnel.upstream.readyState !== WebSocket.OPEN) return ws.close(UPSTREAM_GONE, 'event stream closed by the API')
      live.set(ws.id, tunnel)
      tunnel.deliver = (frame) => ws.raw.send(frame)
      for (const frame of tunnel.early.splice(0)) ws.raw.send(frame)
      tunnel.closed = (code, reason) => {
        live.delete(ws.id)
        // 1005/1006 are reserved (never sent on the wire); report them as the API dropping the stream.
        const known = code >= 1000 && code < 5000 && code !== 1005 && code !== 1006
        if (ws.raw.readyState === 1) ws.close(known ? code : UPSTREAM_GONE, known ? reason : 'event stream closed by the API')
      }
    },
    message(ws, message) {
      // Elysia hands over parsed JSON for JSON text; relay it as text again.
      const frame: Frame =
        typeof message === 'string' ? message
        : message instanceof ArrayBuffer ? message
        : message instanceof Uint8Array ? (message.slice().buffer as ArrayBuffer)
        : JSON.stringify(message)
      live.get(ws.id)?.upstream.send(frame)
    },
    close(ws) {
      const tunnel = live.get(ws.id)
      live.delete(ws.id)
      if (tunnel) {
        tunnel.closed = null
        tunnel.upstream.close()
      }
    },
  })
}

export function createDashboard(ctx: Ctx) {
  const app = new Elysia({ serve: { maxRequestBodySize: 11 * 1024 * 1024 } })
    .use(healthRoutes(ctx.startedAt))
    .use(eventsTunnel(ctx))
    .all('/api/*', ({ request }) => forward(ctx, request), { parse: 'none' })
  for (const [path, file] of Object.entries(assets)) app.get(path, () => serveAsset(file))
  return app.onError(({ code, set }) => {
    const status = code === 'NOT_FOUND' ? 404 : 500
    set.status = status
    return { error: status === 404 ? 'not found' : 'internal server error', code: status }
  })
}

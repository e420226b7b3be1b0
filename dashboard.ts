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

/** Frames from the browser that arrive before the upstream socket is open wait here (bounded). */
const MAX_PENDING = 64
/** Close code when the API refuses or drops the stream (the browser then falls back to polling). */
const UPSTREAM_GONE = 1011

type Frame = string | ArrayBuffer

interface Tunnel {
  upstream: WebSocket
  pending: Frame[]
}

// Bun's client WebSocket takes request headers; the DOM typings in scope do not know that.
const UpstreamSocket = WebSocket as unknown as new (url: string, options: { headers: Record<string, string> }) => WebSocket

/**
 * /api/events/subscribe: the browser's WebSocket is accepted here only when the
 * API would accept it (same token check, ?token= included), then every frame is
 * relayed both ways. Query string and Authorization are passed through unchanged,
 * so pattern and after_id reach the API as sent.
 */
function eventsTunnel(ctx: Ctx) {
  const tunnels = new Map<string, Tunnel>()
  return new Elysia().ws('/api/events/subscribe', {
    beforeHandle({ request }) {
      if (!authorized(ctx, request, new URL(request.url))) return errorResponse(401, 'invalid or missing bearer token')
    },
    open(ws) {
      const request = ws.data.request
      const url = new URL(request.url)
      const headers: Record<string, string> = {}
      const auth = request.headers.get('authorization')
      if (auth) headers.authorization = auth
      const upstream = new UpstreamSocket(ctx.apiUrl.replace(/^http/, 'ws') + url.pathname + url.search, { headers })
      upstream.binaryType = 'arraybuffer'
      const tunnel: Tunnel = { upstream, pending: [] }
      tunnels.set(ws.id, tunnel)
      let opened = false
      upstream.onopen = () => {
        opened = true
        for (const frame of tunnel.pending) upstream.send(frame)
        tunnel.pending = []
      }
      upstream.onmessage = (e) => ws.raw.send(e.data as string | ArrayBuffer)
      upstream.onclose = (e) => {
        tunnels.delete(ws.id)
        if (ws.raw.readyState !== 1) return
        // 1005/1006 are reserved (never sent on the wire); report them as an upstream failure.
        const code = opened && e.code >= 1000 && e.code < 5000 && e.code !== 1005 && e.code !== 1006 ? e.code : UPSTREAM_GONE
        ws.close(code, opened ? e.reason : 'event stream unavailable from the API')
      }
    },
    message(ws, message) {
      const tunnel = tunnels.get(ws.id)
      if (!tunnel) return
      // Elysia hands over parsed JSON for JSON text; relay it as text again.
      const frame: Frame =
        typeof message === 'string' ? message
        : message instanceof ArrayBuffer ? message
        : message instanceof Uint8Array ? (message.slice().buffer as ArrayBuffer)
        : JSON.stringify(message)
      if (tunnel.upstream.readyState === WebSocket.OPEN) tunnel.upstream.send(frame)
      else if (tunnel.pending.length < MAX_PENDING) tunnel.pending.push(frame)
    },
    close(ws) {
      const tunnel = tunnels.get(ws.id)
      tunnels.delete(ws.id)
      tunnel?.upstream.close()
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

// The dashboard port: the web UI from public/, GET /health, and /api/* forwarded
// to the API with the caller's headers (Authorization included), so the API's
// auth covers the dashboard too.
import { Elysia } from 'elysia'
import { existsSync } from 'node:fs'
import { join } from 'node:path'
import type { Ctx } from './lib/context'
import { errorResponse } from './routes/http'
import { healthRoutes } from './routes/health'

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

const publicDir = join(import.meta.dir, 'public')

export function createDashboard(ctx: Ctx) {
  return new Elysia({ serve: { maxRequestBodySize: 11 * 1024 * 1024 } })
    .use(healthRoutes(ctx.startedAt))
    .all('/api/*', ({ request }) => forward(ctx, request), { parse: 'none' })
    .get('/', () => {
      const index = join(publicDir, 'index.html')
      if (existsSync(index)) return new Response(Bun.file(index))
      return new Response(
        '<!doctype html><title>Muster</title><h1>Muster</h1><p>The dashboard is not built yet. API health: <a href="/health">/health</a></p>',
        { headers: { 'content-type': 'text/html; charset=utf-8' } },
      )
    })
    .onError(({ code, set }) => {
      const status = code === 'NOT_FOUND' ? 404 : 500
      set.status = status
      return { error: status === 404 ? 'not found' : 'internal server error', code: status }
    })
}

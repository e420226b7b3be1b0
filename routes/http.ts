// HTTP plumbing shared by every route module: error bodies, the audit macro,
// caller identity, bounded body reading and query-parameter parsing.
import { Elysia } from 'elysia'
import { AppError, invalid, type ErrorKind } from '../lib/errors'
import type { Ctx } from '../lib/context'
import { track } from '../lib/background'
import { seen } from '../lib/implicit-heartbeat'
import type { MetricName } from '../lib/metrics'

export const MAX_BODY = 10 * 1024 * 1024

/** Routes that take larger raw bodies than MAX_BODY (they stream them to disk, never into memory). */
const LARGE_BODY_ROUTES: Record<string, number> = { '/api/restore': 1024 * 1024 * 1024 }

/** The body limit of a request path. */
export const bodyLimit = (path: string): number => LARGE_BODY_ROUTES[path] ?? MAX_BODY

/** The largest body any route accepts: the server-level cap. */
export const MAX_ANY_BODY = Math.max(MAX_BODY, ...Object.values(LARGE_BODY_ROUTES))

/** The same request whose body stream fails with 413 once it passes `limit` bytes (for bodies without Content-Length). */
export function boundedRequest(request: Request, limit: number): Request {
  if (!request.body) return request
  let size = 0
  const body = request.body.pipeThrough(
    new TransformStream<Uint8Array, Uint8Array>({
      transform(chunk, out) {
        size += chunk.byteLength
        if (size > limit) out.error(tooLarge(limit))
        else out.enqueue(chunk)
      },
    }),
  )
  return new Request(request, { body, duplex: 'half' } as RequestInit)
}

export const STATUS: Record<ErrorKind, number> = {
  invalid: 400,
  unauthorized: 401,
  not_found: 404,
  method: 405,
  conflict: 409,
  precondition: 412,
  too_large: 413,
}

/** The error kind an HTTP status stands for (STATUS read backwards), e.g. to re-raise an in-process call's error. */
export const kindOfStatus = (status: number): ErrorKind | undefined =>
  (Object.keys(STATUS) as ErrorKind[]).find((kind) => STATUS[kind] === status)

export function errorResponse(status: number, message: string, extra: Record<string, unknown> = {}): Response {
  return Response.json({ error: message, code: status, ...extra }, { status })
}

// ---- caller identity ------------------------------------------------------

export interface Caller {
  /** Audit actor: the instance id, else "admin" (server token used), else "anonymous". */
  actor: string
  instanceId: string | null
}

const callers = new WeakMap<Request, Caller>()

export async function callerOf(ctx: Ctx, request: Request): Promise<Caller> {
  const known = callers.get(request)
  if (known) return known
  const token = request.headers.get('x-instance-token')
  const instanceId = token ? await ctx.store.instances.idByTokenHash(hashToken(token)) : null
  if (instanceId) seen(ctx, instanceId)
  const caller = { actor: instanceId ?? (ctx.config.authToken ? 'admin' : 'anonymous'), instanceId }
  callers.set(request, caller)
  return caller
}

const internal = new WeakSet<Request>()

/** Marks a request the server makes to itself on a caller's behalf (an MCP tool), so it is not counted again as a REST call. */
export function internalRequest(request: Request): Request {
  internal.add(request)
  return request
}

export const isInternal = (request: Request): boolean => internal.has(request)

/**
 * Runs a JSON request through the API in-process as `caller` (its Authorization and
 * X-Instance-Token), so auth, validation, audit and events apply exactly as over HTTP.
 */
export function callAs(ctx: Ctx, caller: Request, method: string, path: string, body?: unknown): Promise<Response> {
  const headers = new Headers()
  for (const name of ['authorization', 'x-instance-token']) {
    const value = caller.headers.get(name)
    if (value) headers.set(name, value)
  }
  if (body !== undefined) headers.set('content-type', 'application/json')
  const init = { method, headers, body: body === undefined ? undefined : JSON.stringify(body) }
  return ctx.handle(internalRequest(new Request(ctx.apiUrl + path, init)))
}

/** Counts `n` of an agent metric for the calling instance; a no-op for callers without a valid instance token. */
export async function countForCaller(ctx: Ctx, request: Request, name: MetricName, n = 1): Promise<void> {
  if (!request.headers.has('x-instance-token')) return
  const { instanceId } = await callerOf(ctx, request)
  if (instanceId) ctx.metrics.count(instanceId, name, n)
}

export function hashToken(token: string): string {
  return new Bun.CryptoHasher('sha256').update(token).digest('hex')
}

// ---- audit ------------------------------------------------------------------

const auditDetail = new WeakMap<Request, string>()

/** Adds a detail line to this request's audit entry (e.g. "version 3"). */
export function noteAudit(request: Request, detail: string): void {
  auditDetail.set(request, detail)
}

/** The resource an entry names: the request path below /api/, decoded. */
export function resourceOf(url: string): string {
  const path = new URL(url).pathname.replace(/^\/api\//, '').replace(/^\//, '')
  try {
    return decodeURIComponent(path)
  } catch {
    return path
  }
}

async function writeAudit(ctx: Ctx, request: Request, action: string, status: number): Promise<void> {
  try {
    const caller = await callerOf(ctx, request)
    await ctx.store.audit.append({
      actor: caller.actor,
      action,
      resource: resourceOf(request.url),
      detail: auditDetail.get(request) ?? (status >= 400 ? `status ${status}` : ''),
      outcome: status < 400 ? 'success' : 'error',
    })
  } catch (err) {
    console.error('audit append failed:', err)
  }
}

/**
 * Route modules start from this plugin. It gives them the `audit: 'action.name'`
 * route option: one hook writes the audit entry after the response, for
 * success and error outcomes alike.
 */
export function routes(ctx: Ctx) {
  return new Elysia().macro({
    audit(action: string) {
      return {
        // Not async: Elysia would wait on the returned promise; the entry is written in the background.
        afterResponse({ request, set }: { request: Request; set: { status?: number | string } }) {
          const status = typeof set.status === 'number' ? set.status : 200
          track(writeAudit(ctx, request, action, status))
        },
      }
    },
  })
}

// ---- bodies -----------------------------------------------------------------

/** Reads a raw body, refusing (413) as soon as it passes `limit` bytes; never buffers past it. */
export async function readBody(request: Request, limit = MAX_BODY): Promise<Uint8Array> {
  const declared = Number(request.headers.get('content-length') ?? NaN)
  if (declared > limit) throw tooLarge(limit)
  if (!request.body) return new Uint8Array(0)
  // A declared length within the limit cannot grow past it (Bun enforces it), so read it whole.
  if (declared >= 0) return new Uint8Array(await request.arrayBuffer())
  const chunks: Uint8Array[] = []
  let size = 0
  for await (const chunk of request.body as unknown as AsyncIterable<Uint8Array>) {
    size += chunk.byteLength
    if (size > limit) throw tooLarge(limit)
    chunks.push(chunk)
  }
  if (chunks.length === 1) return chunks[0]
  const out = new Uint8Array(size)
  let at = 0
  for (const c of chunks) out.set(c, at), (at += c.byteLength)
  return out
}

export const tooLarge = (limit = MAX_BODY) =>
  new AppError('too_large', `request body exceeds the ${limitText(limit)} limit`)

const limitText = (bytes: number) => (bytes >= 1024 ** 3 ? `${bytes / 1024 ** 3} GB` : `${bytes / 1024 ** 2} MB`)

// ---- query parameters --------------------------------------------------------

/** A non-negative (or >= min) integer parameter; absent gives the default, garbage gives 400. */
export function intParam(value: string | undefined, name: string, def: number, min = 0): number {
  if (value === undefined || value === '') return def
  if (!/^\d+$/.test(value) || Number(value) < min) throw invalid(`invalid ${name}: expected an integer >= ${min}`)
  return Number(value)
}

/** An RFC 3339 / ISO 8601 instant, normalised to the stored format; garbage gives 400. */
/** One of `allowed`, or `def` when absent or empty; anything else is 400 "invalid <name>: expected a, b". */
export function enumParam<T extends string, D extends T | undefined>(value: string | undefined, name: string, allowed: readonly T[], def: D): T | D {
  if (value === undefined || value === '') return def
  if (!allowed.includes(value as T)) throw invalid(`invalid ${name}: expected ${allowed.join(', ')}`)
  return value as T
}

export function timeParam(value: string | undefined, name: string): string | undefined {
  if (value === undefined || value === '') return undefined
  const ms = Date.parse(value)
  if (Number.isNaN(ms)) throw invalid(`invalid ${name}: expected an RFC 3339 timestamp`)
  return new Date(ms).toISOString()
}

/** The quoted ETag for a SHA-256 hash. */
export const etag = (hash: string) => `"${hash}"`

/** True when an If-None-Match header matches the current hash. */
export function notModified(request: Request, hash: string): boolean {
  const header = request.headers.get('if-none-match')
  if (!header) return false
  return header.split(',').some((t) => {
    const tag = t.trim().replace(/^W\//, '')
    return tag === '*' || tag === etag(hash)
  })
}

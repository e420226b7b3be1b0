// Request bodies: size limits enforced while streaming, bodies cut off by their
// connection told from server errors, raw and JSON readers.
import { Elysia } from 'elysia'
import { AppError, invalid } from '../lib/errors'
import { MAX_DEPTH, nestedDeeperThan, parsedValueProblem } from '../lib/json'
import { StreamTooLarge, readUpTo } from '../lib/stream'
import { jsonProblemOf } from '../lib/json-thread'
import { IDLE_TIMEOUT_S, bodyRead } from './holds'

export const MAX_BODY = 10 * 1024 * 1024

/** The most a route may declare with `maxBody` (the server-level cap). */
export const MAX_ANY_BODY = 1024 * 1024 * 1024

/**
 * The `maxBody: bytes` route option, for routes that take more than MAX_BODY (and
 * stream it to disk, never into memory). http/route-table.ts reads the declared
 * limits, and admission holds each request to its route's limit before any parsing.
 */
export const bodyLimits = new Elysia({ name: 'body-limits' }).macro({
  maxBody(limit: number) {
    if (limit > MAX_ANY_BODY) throw new Error(`maxBody ${limit} exceeds the server cap ${MAX_ANY_BODY}`)
    return {}
  },
})

/**
 * A body that did not arrive whole: the client closed the connection mid-upload, or
 * Bun's parser refused the rest of it (a malformed chunk size, a trailer) and closed
 * it. The client is gone, so the answer (400) reaches no one; it is counted and
 * logged as the client's doing (a warning), not as a server error.
 */
export class ClientAbort extends AppError {
  constructor() {
    super('invalid', 'request body incomplete: the connection closed before it ended')
  }
}

/**
 * The ClientAbort an error stands for, if any: ours, or Bun's AbortError from reading
 * the body of a request whose connection closed (an AbortError with the request still
 * open is some other abort, e.g. of a call the handler made, and stays what it is).
 */
export function clientAbortOf(error: unknown, request: Request): ClientAbort | null {
  if (error instanceof ClientAbort) return error
  const cause = (error as any)?.cause
  if (cause instanceof ClientAbort) return cause
  const aborted = (error as any)?.name === 'AbortError' || cause?.name === 'AbortError'
  return aborted && request.signal.aborted ? new ClientAbort() : null
}

/**
 * The same request whose body stream fails with 413 once it passes `limit` bytes (for
 * bodies without Content-Length, i.e. chunked), and ends only once the body is known
 * to be complete: Bun's parser ends a chunked body at the last chunk's `0\r\n` and reads
 * whatever follows as the next request, so a trailer (or any garbage after the body)
 * is refused there with 400 and the connection closed, while the handler has the body.
 * What arrived with the last chunk is parsed in the same turn of the event loop; one
 * turn later a refused connection has aborted the request, and the body fails instead
 * of ending, so no reader commits a write the client was told was refused.
 */
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
      async flush(out) {
        await new Promise((resolve) => setImmediate(resolve))
        if (request.signal.aborted) out.error(new ClientAbort())
      },
    }),
  )
  return new Request(request, { body, duplex: 'half' } as RequestInit)
}

/**
 * Options of both apps. The server-level body cap admits the largest route limit;
 * each request is held to its own route's limit. standardHostname off: Elysia then
 * finds the path after "http://" instead of assuming a host of at least 4
 * characters (with `Host: ab` every /api/state/* request was routed as /state/...).
 * strictPath: a route is served under its one spelling, as Bun's own router serves it (no
 * trailing slash added or dropped), so the access policy, which decides on that spelling,
 * and the router always name the same route.
 */
export const SERVER_OPTIONS = { strictPath: true, serve: { maxRequestBodySize: MAX_ANY_BODY + 1024 * 1024, idleTimeout: IDLE_TIMEOUT_S }, handler: { standardHostname: false } }

/** Reads a raw body, refusing (413) as soon as it passes `limit` bytes; never buffers past it. */
export async function readBody(request: Request, limit = MAX_BODY): Promise<Uint8Array> {
  const declared = Number(request.headers.get('content-length') ?? NaN)
  if (declared > limit) throw tooLarge(limit)
  if (!request.body) return new Uint8Array(0)
  try {
    // A declared length within the limit cannot grow past it (Bun enforces it), so read it whole.
    const bytes = declared >= 0 ? new Uint8Array(await request.arrayBuffer()) : await readUpTo(request.body, limit)
    bodyRead(request)
    return bytes
  } catch (err) {
    throw err instanceof StreamTooLarge ? tooLarge(limit) : (clientAbortOf(err, request) ?? err)
  }
}

export const tooLarge = (limit = MAX_BODY) =>
  new AppError('too_large', `request body exceeds the ${limitText(limit)} limit`)

const limitText = (bytes: number) => (bytes >= 1024 ** 3 ? `${bytes / 1024 ** 3} GB` : bytes >= 1024 ** 2 ? `${bytes / 1024 ** 2} MB` : `${bytes / 1024} KiB`)



/** A body that nests deeper than MAX_DEPTH is 400 before anything parses or walks it (lib/json.ts). */
export function checkDepth(body: string | Uint8Array): void {
  if (nestedDeeperThan(body)) throw invalid(`request body nests deeper than ${MAX_DEPTH} levels`)
}

/**
 * The same for a body the framework has parsed, and no NUL character in its text, its
 * path or its query: PostgreSQL cannot store one in text, so both backends refuse it
 * alike (400). Raw bodies (state values, specs) are bytes and may hold anything.
 */
export function checkParsedRequest(url: string, body: unknown): void {
  if (url.includes('%00')) throw invalid(NUL_TEXT)
  if (typeof body !== 'object' || body === null) return
  const problem = parsedValueProblem(body)
  if (problem === 'deep') throw invalid(`request body nests deeper than ${MAX_DEPTH} levels`)
  if (problem === 'nul') throw invalid(NUL_TEXT)
}

export const NUL_TEXT = 'text must not contain NUL bytes'

/** Reads a JSON body (state, specs, contracts): the raw bytes and the parsed value; empty or not JSON is 400. */
export async function readJsonBody(request: Request): Promise<{ bytes: Uint8Array; json: unknown }> {
  const bytes = await readBody(request)
  if (bytes.byteLength === 0) throw invalid('request body is empty')
  checkDepth(bytes)
  return { bytes, json: parseJsonBody(bytes) }
}

export const NOT_JSON = 'request body must be JSON'

/**
 * The body of a route whose JSON object is optional, read by its handler (a fast route's
 * and its full twin's alike): none is `{}`; anything else must be a JSON object, held to
 * the checks the framework's parse gets (depth, NUL), else 400.
 */
export async function readOptionalObject(request: Request): Promise<Record<string, unknown>> {
  const bytes = await readBody(request)
  if (bytes.byteLength === 0) return {}
  checkDepth(bytes)
  const value = parseJsonBody(bytes)
  if (typeof value !== 'object' || value === null || Array.isArray(value)) throw invalid(`${NOT_JSON}: an object`)
  checkParsedRequest('', value)
  return value as Record<string, unknown>
}

/**
 * checkDepth, and with `parse` parseJsonBody's check, of a body kept as bytes (a state
 * value): a large one is checked on the JSON worker, so its parse does not hold up
 * every other request (lib/json-thread.ts).
 */
export async function checkJsonBytes(bytes: Uint8Array, parse: boolean): Promise<void> {
  const problem = await jsonProblemOf(bytes, parse)
  if (problem === 'deep') throw invalid(`request body nests deeper than ${MAX_DEPTH} levels`)
  if (problem === 'not_json') throw invalid(`${NOT_JSON}: not valid JSON`)
}

/** The parsed value of a JSON body; anything else is 400. */
export function parseJsonBody(bytes: Uint8Array): unknown {
  try {
    return JSON.parse(new TextDecoder().decode(bytes))
  } catch {
    throw invalid(`${NOT_JSON}: not valid JSON`)
  }
}

/** `application/json` or any `+json` type (`application/merge-patch+json`), parameters aside. */
export const isJsonType = (contentType: string) => /^application\/(?:[\w.-]+\+)?json\s*(?:;|$)/i.test(contentType)

/**
 * The same request labelled `application/json`, so the route's parser reads it as
 * JSON whatever the client sent (curl -d says form-urlencoded): JSON endpoints never
 * take form or multipart fields, and a body that is not JSON is a parse error (400).
 */
export function asJson(request: Request): Request {
  // The label first: touching `body` turns a body Bun has buffered into a stream.
  if (/^application\/json\s*(?:;|$)/i.test(request.headers.get('content-type') ?? '') || !request.body) return request
  const headers = new Headers(request.headers)
  headers.set('content-type', 'application/json')
  return new Request(request, { headers, body: request.body, duplex: 'half' } as RequestInit)
}

/** OpenAPI `requestBody` for a route that reads its body itself (`parse: 'none'`), so the document still shows it. */
export const rawBodyDoc = (type: string, description: string) => ({
  required: true,
  description,
  content: { [type]: { schema: type === 'application/json' ? {} : { type: 'string' as const, format: 'binary' } } },
})

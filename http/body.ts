// Request bodies: size limits enforced while streaming, raw and JSON readers.
import { AppError, invalid } from '../lib/errors'

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


/** Reads a JSON body (state, specs, contracts): the raw bytes and the parsed value; empty or not JSON is 400. */
export async function readJsonBody(request: Request): Promise<{ bytes: Uint8Array; json: unknown }> {
  const bytes = await readBody(request)
  if (bytes.byteLength === 0) throw invalid('request body is empty')
  try {
    return { bytes, json: JSON.parse(new TextDecoder().decode(bytes)) }
  } catch {
    throw invalid('request body is not valid JSON')
  }
}

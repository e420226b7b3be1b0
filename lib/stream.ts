// The one size-limited stream reader: request bodies, uploads, and the answers of
// the servers we call (webhook receivers, live contract endpoints) are all read
// through it, so none is ever buffered past its limit.

/** Thrown by the readers below when a stream passes its limit (the stream is cancelled). */
export class StreamTooLarge extends Error {
  constructor(readonly limit: number) {
    super(`stream exceeds ${limit} bytes`)
  }
}

/** The chunks of `body`; StreamTooLarge (after cancelling it) once more than `limit` bytes have passed. */
export async function* chunksUpTo(body: ReadableStream<Uint8Array>, limit: number): AsyncGenerator<Uint8Array> {
  let size = 0
  const reader = body.getReader()
  try {
    for (;;) {
      const { done, value } = await reader.read()
      if (done) return
      size += value.byteLength
      if (size > limit) {
        await reader.cancel().catch(() => {})
        throw new StreamTooLarge(limit)
      }
      yield value
    }
  } finally {
    reader.releaseLock()
  }
}

/** The whole of `body` (empty for none), at most `limit` bytes, else StreamTooLarge. */
export async function readUpTo(body: ReadableStream<Uint8Array> | null, limit: number): Promise<Uint8Array> {
  if (!body) return new Uint8Array(0)
  const chunks: Uint8Array[] = []
  let size = 0
  for await (const chunk of chunksUpTo(body, limit)) chunks.push(chunk), (size += chunk.byteLength)
  if (chunks.length === 1) return chunks[0]
  const out = new Uint8Array(size)
  let at = 0
  for (const c of chunks) out.set(c, at), (at += c.byteLength)
  return out
}

// Held requests and Bun's idle timeout. Bun closes a connection that sent and received
// nothing for the server's idleTimeout, and a request the server is still answering
// counts as idle: a held read (`wait` up to 60 s) or a PermissionRequest waiting for a
// person (up to 10 min) had its connection closed after 30 s, with no answer. A request
// lifts its connection's timeout once nothing more is to come from the client (no body,
// or its body read) and sets it back as its answer goes out, so a stalled upload and an
// idle keep-alive connection are still closed.

/** Seconds a connection may stay idle (the servers' idleTimeout, SERVER_OPTIONS). */
export const IDLE_TIMEOUT_S = 30

/** What of Bun's server a hold needs. */
export interface TimeoutServer {
  timeout(request: Request, seconds: number): void
}

interface Hold {
  server: TimeoutServer
  /** The request as Bun gave it: the one its connection is known by. */
  received: Request
  lifted: boolean
}

const holds = new WeakMap<Request, Hold>()

const idleTimeout = (hold: Hold, seconds: number) => {
  try {
    hold.server.timeout(hold.received, seconds)
  } catch {
    // A request the server no longer knows (answered, or closed by the client): nothing to keep open.
  }
}

/** `replacement` (a relabelled or size-bounded copy) stands for `received` on the same connection (as http/caller.ts sameCaller). */
export function sameConnection(received: Request, replacement: Request): void {
  const hold = holds.get(received)
  if (hold && replacement !== received) holds.set(replacement, hold)
}

/** The request's body is read: whatever its handler now waits for, its connection stays open. */
export function bodyRead(request: Request): void {
  const hold = holds.get(request)
  if (hold && !hold.lifted) {
    hold.lifted = true
    idleTimeout(hold, 0)
  }
}

/**
 * No body is to come, read from the headers: touching `request.body` would turn a body Bun
 * has buffered into a stream for every request. A WebSocket upgrade keeps its own timeout.
 */
const bodiless = (h: Headers) => {
  const length = h.get('content-length')
  return (length === null || length === '0') && !h.has('transfer-encoding') && !h.has('upgrade')
}

/**
 * Wraps a server's handler: each request may be held as long as its own wait says once
 * its body is read (at once without one), and its connection's idle timeout is back
 * when the answer is handed to Bun. `server` is read per request (set once listening).
 */
export function holdable<H extends (request: Request) => unknown>(server: () => TimeoutServer | undefined | null, handle: H): H {
  return ((request: Request) => {
    const s = server()
    if (!s) return handle(request)
    const hold: Hold = { server: s, received: request, lifted: false }
    holds.set(request, hold)
    if (bodiless(request.headers)) bodyRead(request)
    const restore = () => {
      if (hold.lifted) idleTimeout(hold, IDLE_TIMEOUT_S)
    }
    const out = handle(request)
    if (!(out instanceof Promise)) return restore(), out
    return out.then(
      (res) => (restore(), res),
      (err) => {
        restore()
        throw err
      },
    )
  }) as H
}

// `events subscribe`: follow the event bus. WebSocket first, resuming with
// after_id on every reconnect; when the WebSocket cannot connect at all, poll
// GET /api/events/history every 2 s. Either way each event is printed once,
// in id order, and only events newer than the start (or --after-id) appear.
import { api, authHeaders, resolveConfig } from './client'
import { ClientError, note, printJson, ServerError } from './output'
import { TOKEN_CLOSE_CODE } from '../lib/token'

export interface SubscribeOptions {
  afterId?: number
  count?: number
  poll?: boolean
}

interface Event {
  id: number
  [field: string]: unknown
}

const POLL_MS = 2000
const PAGE = 100
const CONNECT_TIMEOUT_MS = 10_000
const MAX_BACKOFF_MS = 5000

/** Runs until --count events were printed or SIGINT/SIGTERM; resolves normally (exit 0). */
export async function subscribe(pattern: string, o: SubscribeOptions): Promise<void> {
  const stop = new AbortController()
  const onSignal = () => stop.abort()
  process.once('SIGINT', onSignal)
  process.once('SIGTERM', onSignal)
  try {
    // Start from the newest stored id, so that nothing published after the command started is lost
    // between that moment and the subscription going live: the server replays ids after it.
    let last: number | null = o.afterId ?? (await newestEventId())
    let printed = 0
    const emit = (event: Event) => {
      if (stop.signal.aborted) return
      if (typeof event?.id === 'number') {
        if (last !== null && event.id <= last) return
        last = event.id
      }
      printJson(event)
      if (o.count && ++printed >= o.count) stop.abort()
    }
    const cursor = () => last
    if (o.poll || !(await followWebSocket(pattern, cursor, emit, stop.signal))) await poll(pattern, cursor, emit, stop.signal)
  } finally {
    process.off('SIGINT', onSignal)
    process.off('SIGTERM', onSignal)
  }
}

/** The id of the newest stored event (0 when none); null when the server has no history endpoint. */
async function newestEventId(): Promise<number | null> {
  try {
    const events = (await api.get('/api/events/history', { last: 1 })) as Event[]
    return events[0]?.id ?? 0
  } catch (err) {
    if (err instanceof ServerError && err.status === 404) return null
    throw err
  }
}

function subscribeUrl(pattern: string, afterId: number | null): string {
  const cfg = resolveConfig()
  const url = new URL(cfg.server.replace(/^http/, 'ws') + '/api/events/subscribe')
  url.searchParams.set('pattern', pattern)
  if (afterId !== null) url.searchParams.set('after_id', String(afterId))
  // Headers carry the token; ?token= is for servers and proxies that only look at the URL on upgrade.
  if (cfg.token) url.searchParams.set('token', cfg.token)
  return url.toString()
}

/** Follows the WebSocket, reconnecting with backoff. False when the very first connection fails (caller polls instead). */
async function followWebSocket(pattern: string, cursor: () => number | null, emit: (e: Event) => void, signal: AbortSignal): Promise<boolean> {
  let everOpened = false
  let backoff = 500
  let warned = false
  while (!signal.aborted) {
    const { opened, reason, code } = await connectOnce(subscribeUrl(pattern, cursor()), pattern, emit, signal)
    if (signal.aborted) break
    // The token was revoked or expired: reconnecting with it can only be refused.
    if (code === TOKEN_CLOSE_CODE) throw new ServerError(401, { error: `${reason}: the subscription ended; ask the admin for a new token`, code: 401 })
    if (opened) {
      everOpened = true
      backoff = 500
      warned = false
    } else if (!everOpened) {
      note(`websocket unavailable (${reason})`)
      return false
    }
    if (!warned) note(`websocket ${opened ? 'closed' : 'reconnect failed'} (${reason}); reconnecting`)
    warned = true
    await sleep(backoff, signal)
    backoff = Math.min(backoff * 2, MAX_BACKOFF_MS)
  }
  return true
}

function connectOnce(
  url: string,
  pattern: string,
  emit: (e: Event) => void,
  signal: AbortSignal,
): Promise<{ opened: boolean; reason: string; code?: number }> {
  return new Promise((resolve) => {
    let opened = false
    let done = false
    let ws: WebSocket
    try {
      // Bun's client takes headers (the DOM typings only know protocols).
      ws = new WebSocket(url, { headers: authHeaders() } as unknown as string[])
    } catch (err) {
      resolve({ opened: false, reason: (err as Error).message })
      return
    }
    const close = () => ws.close()
    const timer = setTimeout(close, CONNECT_TIMEOUT_MS)
    const finish = (reason: string, code?: number) => {
      if (done) return
      done = true
      clearTimeout(timer)
      signal.removeEventListener('abort', close)
      resolve({ opened, reason, code })
    }
    signal.addEventListener('abort', close)
    ws.onopen = () => {
      opened = true
      clearTimeout(timer)
      note(`subscribed to '${pattern}' (websocket)`)
    }
    ws.onmessage = (m) => {
      try {
        emit(JSON.parse(String(m.data)))
      } catch {
        note(`ignored a frame that is not JSON: ${String(m.data).slice(0, 100)}`)
      }
    }
    ws.onerror = () => {
      if (!opened) close()
    }
    ws.onclose = (e) => finish(e.reason || (opened ? `code ${e.code}` : 'connection refused or upgrade rejected'), e.code)
  })
}

/** The fallback: history every 2 s, oldest first, skipping ids already printed. */
async function poll(pattern: string, cursor: () => number | null, emit: (e: Event) => void, signal: AbortSignal): Promise<void> {
  note(`polling history every ${POLL_MS / 1000}s for '${pattern}'`)
  let warned = false
  while (!signal.aborted) {
    let more = false
    try {
      const start = cursor()
      const events = (await api.get('/api/events/history', { topic: pattern, after_id: start, last: PAGE })) as Event[]
      // Servers without after_id answer newest first; sort and filter either way.
      const fresh = events.filter((e) => start === null || e.id > start).sort((a, b) => a.id - b.id)
      for (const e of fresh) emit(e)
      more = fresh.length >= PAGE
      warned = false
    } catch (err) {
      if (!(err instanceof ClientError)) throw err
      if (!warned) note(`${err.message}; retrying`)
      warned = true
    }
    if (!more) await sleep(POLL_MS, signal)
  }
}

function sleep(ms: number, signal: AbortSignal): Promise<void> {
  return new Promise((resolve) => {
    if (signal.aborted) return resolve()
    const timer = setTimeout(done, ms)
    function done() {
      clearTimeout(timer)
      signal.removeEventListener('abort', done)
      resolve()
    }
    signal.addEventListener('abort', done)
  })
}

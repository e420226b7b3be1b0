// The event stream a page follows: /api/events/subscribe over a WebSocket, the
// #stream-status pill kept current, reopened when the token changes. A dropped socket
// reconnects with after_id, so the server replays what happened meanwhile; `onOpen`
// runs on every (re)connect for the page to re-read what it shows.

import { onTokenChange, socketUrl } from './api.js'

const MAX_BACKOFF_MS = 15_000

/**
 * follow({pattern, onEvent, onOpen, live, fallback}): `live` is the pill's title while
 * connected, `fallback` says what keeps the page current while it is not.
 */
export function follow({ pattern = '*', onEvent, onOpen = () => {}, live = 'Following the event stream', fallback = 'the page still polls' }) {
  const status = document.getElementById('stream-status')
  const set = (cls, text, title) => Object.assign(status, { className: `pill ${cls}`, textContent: text, title })
  let socket = null
  let retry = null
  let lastId = 0
  let failures = 0
  const connect = () => {
    clearTimeout(retry)
    if (socket) (socket.onclose = null), socket.close()
    const ws = new WebSocket(socketUrl('/api/events/subscribe', { pattern, after_id: lastId || undefined }))
    socket = ws
    let opened = false
    ws.onopen = () => {
      opened = true
      failures = 0
      set('ok live', 'Live', live)
      onOpen()
    }
    ws.onmessage = (msg) => {
      let event
      try {
        event = JSON.parse(msg.data)
      } catch {
        return
      }
      if (typeof event?.id !== 'number' || typeof event.topic !== 'string') return
      lastId = Math.max(lastId, event.id)
      onEvent(event)
    }
    ws.onclose = (e) => {
      if (!opened) failures++
      const wait = Math.min(MAX_BACKOFF_MS, 1000 * 2 ** failures)
      set('warn', 'Reconnecting…', `The event stream closed${e.reason ? `: ${e.reason}` : ''}; ${fallback}. Retrying in ${Math.round(wait / 1000)} s`)
      retry = setTimeout(connect, wait)
    }
  }
  onTokenChange(connect)
  connect()
}

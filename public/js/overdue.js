// Acks asked within a time that passed without one: the messages page marks them, the
// overview counts them. The server publishes message.overdue once per receipt; a page
// that opens later works it out from the messages and their receipts.

import { api } from './api.js'

/** When the ack of message `m` is due (ms since the epoch), or null when none is asked within a time. */
export const deadline = (m) => (m.ack_required && m.ack_within_ms ? Date.parse(m.created_at) + m.ack_within_ms : null)

/** Receipt `r` of message `m` is overdue: an ack was asked within a time that has passed, and none came. */
export const overdue = (m, r) => !r.acked_at && deadline(m) !== null && Date.now() >= deadline(m)

/** Messages read to count from (the newest), and receipt lists read at most per count. */
const SCAN = 500
const MAX_LOOKUPS = 50
/** Messages whose every receipt is acked stay so: their receipts are not read again. */
const settled = new Set()

/** Overdue messages among the newest SCAN: [{id, subject, to: [names]}]; `more` when the lookups ran out. */
export async function overdueMessages() {
  const list = await api(`/api/messages?limit=${SCAN}`)
  const now = Date.now()
  const due = list.filter((m) => deadline(m) !== null && deadline(m) <= now && !settled.has(m.id))
  const looked = due.slice(0, MAX_LOOKUPS)
  const full = await Promise.all(looked.map((m) => api(`/api/messages/${m.id}`).catch(() => null)))
  const out = []
  for (const m of full) {
    if (!m) continue
    const late = (m.receipts ?? []).filter((r) => overdue(m, r)).map((r) => r.to)
    if (late.length) out.push({ id: m.id, subject: m.subject, to: late })
    else if ((m.receipts ?? []).every((r) => r.acked_at)) settled.add(m.id)
  }
  return { messages: out, more: due.length > looked.length }
}

// The webhook delivery queue: a row per (webhook, event), written by the dispatcher
// (jobs/webhooks.ts) right after the event commits, and a row per test delivery. A row
// stays `pending` until an attempt succeeds (`delivered`) or its attempts run out
// (`failed`); it carries the event as sent, so retries and redeliveries outlive
// event pruning. Done rows are kept (the newest KEEP per webhook) for the list and redelivery.
import type { Event } from './events'
import { int, intOrNull, stmt, type Runner } from './runner'
import { nowIso } from '../lib/time'

export type DeliveryState = 'pending' | 'delivered' | 'failed'

/** One delivery as GET /api/webhooks/{id}/deliveries lists it. */
export interface WebhookDelivery {
  id: number
  /** X-Service-Delivery and webhook-id: the same on every attempt and redelivery. */
  delivery: string
  /** 0 for a test delivery. */
  event_id: number
  topic: string
  test: boolean
  state: DeliveryState
  /** Attempts since it was queued (or redelivered). */
  attempts: number
  created_at: string
  /** When the next attempt is due; null once delivered or failed. */
  next_attempt_at: string | null
  /** When the last attempt started; null before the first. */
  at: string | null
  /** The last attempt succeeded. */
  ok: boolean
  /** The receiver's HTTP status at the last attempt; null when no answer came (or no attempt yet). */
  status: number | null
  /** Why the last attempt failed ("" on success or before the first). */
  error: string
  duration_ms: number | null
}

/** What the dispatcher needs to send one pending delivery. */
export interface DeliveryJob {
  id: number
  webhook_id: string
  uuid: string
  payload: string
  event_id: number
  topic: string
  attempts: number
  state: DeliveryState
}

/** The outcome of one attempt. */
export interface Attempt {
  at: string
  ok: boolean
  status: number | null
  error: string
  duration_ms: number
}

export interface DeliveryQuery {
  state?: DeliveryState
  /** Only deliveries with a smaller id (paging back). */
  before?: number
  limit: number
}

/** Done deliveries kept per webhook (pending ones are always kept). */
export const KEEP_DONE = 1000

type Row = {
  id: number | string
  webhook_id: string
  event_id: number | string
  topic: string
  payload: string
  uuid: string
  test: number
  state: DeliveryState
  attempts: number
  created_at: string
  next_attempt_at: string | null
  last_attempt_at: string | null
  last_status: number | null
  last_error: string
  last_duration_ms: number | null
}

function toDelivery(r: Row): WebhookDelivery {
  return {
    id: int(r.id),
    delivery: r.uuid,
    event_id: int(r.event_id),
    topic: r.topic,
    test: r.test === 1,
    state: r.state,
    attempts: r.attempts,
    created_at: r.created_at,
    next_attempt_at: r.next_attempt_at,
    at: r.last_attempt_at,
    ok: r.last_attempt_at !== null && r.last_error === '' && r.state !== 'failed',
    status: intOrNull(r.last_status),
    error: r.last_error,
    duration_ms: intOrNull(r.last_duration_ms),
  }
}

const toJob = (r: Row): DeliveryJob => ({
  id: int(r.id),
  webhook_id: r.webhook_id,
  uuid: r.uuid,
  payload: r.payload,
  event_id: int(r.event_id),
  topic: r.topic,
  attempts: r.attempts,
  state: r.state,
})

const COLUMNS = 'webhook_id, event_id, topic, payload, uuid, test, state, attempts, created_at, next_attempt_at'
// A second row for the same (webhook, event) is the catch-up meeting a live event: nothing to do.
const QUEUE = stmt<{ id: number | string; webhook_id: string }>(
  `INSERT INTO webhook_deliveries (${COLUMNS}) VALUES (?, ?, ?, ?, ?, 0, 'pending', 0, ?, ?) ON CONFLICT DO NOTHING RETURNING id, webhook_id`,
)
const TEST = stmt<Row>(
  `INSERT INTO webhook_deliveries (${COLUMNS}, last_attempt_at, last_status, last_error, last_duration_ms)
   VALUES (?, 0, ?, ?, ?, 1, ?, 1, ?, NULL, ?, ?, ?, ?) RETURNING *`,
)
const SET_CURSOR = stmt('UPDATE webhook_cursor SET event_id = ? WHERE id = 1')
// Never past the newest stored event: after a restore the ids start lower again.
const ADVANCE_CURSOR = stmt('UPDATE webhook_cursor SET event_id = ?1 WHERE id = 1 AND event_id < ?1 AND ?1 <= (SELECT COALESCE(MAX(id), 0) FROM events)')
const CURSOR = stmt<{ event_id: number | string }>('SELECT event_id FROM webhook_cursor WHERE id = 1')
const ATTEMPTED = stmt(
  `UPDATE webhook_deliveries SET attempts = attempts + 1, last_attempt_at = ?, last_status = ?, last_error = ?, last_duration_ms = ?,
     state = ?, next_attempt_at = ? WHERE id = ? AND state = 'pending'`,
)
const REDELIVER_ONE = stmt<Row>(
  `UPDATE webhook_deliveries SET state = 'pending', attempts = 0, next_attempt_at = ? WHERE webhook_id = ? AND id = ? AND test = 0 RETURNING *`,
)
const REDELIVER_SINCE = stmt(
  `UPDATE webhook_deliveries SET state = 'pending', next_attempt_at = ?1,
     attempts = CASE WHEN state = 'pending' THEN attempts ELSE 0 END
   WHERE webhook_id = ?2 AND test = 0 AND created_at >= ?3`,
)
const WAKE = stmt(`UPDATE webhook_deliveries SET next_attempt_at = ? WHERE webhook_id = ? AND state = 'pending'`)
const FORGET = stmt('DELETE FROM webhook_deliveries WHERE webhook_id = ?')
const PRUNE = stmt(
  `DELETE FROM webhook_deliveries WHERE webhook_id = ?1 AND state <> 'pending' AND id <= (
     SELECT id FROM webhook_deliveries WHERE webhook_id = ?1 AND state <> 'pending' ORDER BY id DESC LIMIT 1 OFFSET ?2)`,
)
const ONE = stmt<Row>('SELECT * FROM webhook_deliveries WHERE webhook_id = ? AND id = ?')
const JOB = stmt<Row>('SELECT * FROM webhook_deliveries WHERE id = ?')
const DUE = stmt<{ id: number | string; webhook_id: string }>(
  `SELECT d.id, d.webhook_id FROM webhook_deliveries d JOIN webhooks w ON w.id = d.webhook_id
   WHERE d.state = 'pending' AND d.next_attempt_at <= ? AND w.active = 1 ORDER BY d.id LIMIT ?`,
)

/** The list's statement for the filters present (one prepared statement per shape). */
function listStmt(q: DeliveryQuery) {
  const where = ['webhook_id = ?']
  if (q.state) where.push('state = ?')
  if (q.before !== undefined) where.push('id < ?')
  return stmt<Row>(`SELECT * FROM webhook_deliveries WHERE ${where.join(' AND ')} ORDER BY id DESC LIMIT ?`)
}

export function deliveriesReads(r: Runner) {
  return {
    /** A webhook's deliveries, newest first. */
    async deliveries(webhookId: string, q: DeliveryQuery): Promise<WebhookDelivery[]> {
      const args: (string | number)[] = [webhookId]
      if (q.state) args.push(q.state)
      if (q.before !== undefined) args.push(q.before)
      return (await r.all(listStmt(q), ...args, q.limit)).map(toDelivery)
    },
    delivery: async (webhookId: string, id: number): Promise<WebhookDelivery | null> => {
      const row = await r.get(ONE, webhookId, id)
      return row ? toDelivery(row) : null
    },
    /** One delivery with its payload, for an attempt. */
    job: async (id: number): Promise<DeliveryJob | null> => {
      const row = await r.get(JOB, id)
      return row ? toJob(row) : null
    },
    /** Pending deliveries of active webhooks due by `now`, oldest first. */
    due: async (now: string, limit: number): Promise<{ id: number; webhook_id: string }[]> =>
      (await r.all(DUE, now, limit)).map((d) => ({ id: int(d.id), webhook_id: d.webhook_id })),
    /** The last event turned into deliveries. */
    cursor: async (): Promise<number> => int((await r.get(CURSOR))?.event_id ?? 0),
  }
}

export function deliveriesWrites(w: Runner) {
  return {
    /**
     * Queues each (webhook, event) as a pending delivery due now, skipping pairs already
     * queued, and moves the cursor to `through`. Returns the new rows in the order given.
     */
    async queue(items: { webhook_id: string; event: Event }[], through: number): Promise<{ id: number; webhook_id: string }[]> {
      const now = nowIso()
      const rows: { id: number; webhook_id: string }[] = []
      for (const { webhook_id, event } of items) {
        const row = await w.get(QUEUE, webhook_id, event.id, event.topic, JSON.stringify(event), crypto.randomUUID(), now, now)
        if (row) rows.push({ id: int(row.id), webhook_id: row.webhook_id })
      }
      await w.run(SET_CURSOR, through)
      return rows
    },
    /** Moves the cursor forward to `through` (events that matched no webhook). */
    advanceCursor: (through: number) => w.run(ADVANCE_CURSOR, through),
    /** Records a test delivery, done at once (never retried). */
    async recordTest(webhookId: string, event: Event, uuid: string, a: Attempt): Promise<WebhookDelivery> {
      const row = await w.get(TEST, webhookId, event.topic, JSON.stringify(event), uuid, a.ok ? 'delivered' : 'failed', a.at, a.at, a.status, a.error, a.duration_ms)
      return toDelivery(row!)
    },
    /**
     * Records an attempt of a pending delivery: delivered on success; on failure pending
     * again until `retryAt`, or failed for good when there is none. 0 when it was not pending.
     */
    attempted: (id: number, a: Attempt, retryAt: string | null) =>
      w.run(ATTEMPTED, a.at, a.status, a.ok ? '' : a.error, a.duration_ms, a.ok ? 'delivered' : retryAt ? 'pending' : 'failed', a.ok ? null : retryAt, id),
    /** Queues one delivery again, due now with fresh attempts; null when the webhook has no such (non-test) delivery. */
    redeliver: async (webhookId: string, id: number): Promise<WebhookDelivery | null> => {
      const row = await w.get(REDELIVER_ONE, nowIso(), webhookId, id)
      return row ? toDelivery(row) : null
    },
    /** Queues every delivery of the webhook since `since` again, due now; how many. */
    redeliverSince: (webhookId: string, since: string) => w.run(REDELIVER_SINCE, nowIso(), webhookId, since),
    /** Makes every pending delivery of the webhook due now (its backlog, on enable); how many. */
    wake: (webhookId: string) => w.run(WAKE, nowIso(), webhookId),
    forget: (webhookId: string) => w.run(FORGET, webhookId),
    /** Deletes the webhook's done deliveries beyond the newest `keep`; how many went. */
    prune: (webhookId: string, keep = KEEP_DONE) => w.run(PRUNE, webhookId, keep),
  }
}

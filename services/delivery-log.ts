// The latest delivery attempts of each webhook (events and test deliveries), kept
// in memory since the server started: what GET /api/webhooks/{id}/deliveries and
// the dashboard show. In memory on purpose: it is a window for a person checking a
// receiver, not history (the audit log and fail_count / last_fired persist).
import type { Ctx } from './context'

export interface DeliveryRecord {
  /** 0 for a test delivery. */
  event_id: number
  topic: string
  /** When the attempt started (RFC 3339). */
  at: string
  ok: boolean
  /** The receiver's HTTP status; null when no answer came. */
  status: number | null
  /** Why it failed ("" on success). */
  error: string
  duration_ms: number
  test: boolean
}

/** Attempts kept per webhook, newest first. */
export const KEEP_DELIVERIES = 20

// Per server context, so test servers in one process never share logs.
const logs = new WeakMap<Ctx, Map<string, DeliveryRecord[]>>()

function logOf(ctx: Ctx): Map<string, DeliveryRecord[]> {
  let log = logs.get(ctx)
  if (!log) logs.set(ctx, (log = new Map()))
  return log
}

export function logDelivery(ctx: Ctx, webhookId: string, record: DeliveryRecord): void {
  const log = logOf(ctx)
  const list = log.get(webhookId) ?? []
  list.unshift(record)
  list.length = Math.min(list.length, KEEP_DELIVERIES)
  log.set(webhookId, list)
}

export const deliveriesOf = (ctx: Ctx, webhookId: string): DeliveryRecord[] => logOf(ctx).get(webhookId) ?? []

/** A deleted webhook's attempts go with it (a new webhook of that id starts empty). */
export const forgetDeliveries = (ctx: Ctx, webhookId: string): void => void logOf(ctx).delete(webhookId)

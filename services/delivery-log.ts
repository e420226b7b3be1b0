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

/** One server's log (ctx.deliveries): attempts by webhook id. */
export type DeliveryLog = Map<string, DeliveryRecord[]>

export function logDelivery(ctx: Ctx, webhookId: string, record: DeliveryRecord): void {
  const log = ctx.deliveries
  const list = log.get(webhookId) ?? []
  list.unshift(record)
  list.length = Math.min(list.length, KEEP_DELIVERIES)
  log.set(webhookId, list)
}

export const deliveriesOf = (ctx: Ctx, webhookId: string): DeliveryRecord[] => ctx.deliveries.get(webhookId) ?? []

/** A deleted webhook's attempts go with it (a new webhook of that id starts empty). */
export const forgetDeliveries = (ctx: Ctx, webhookId: string): void => void ctx.deliveries.delete(webhookId)

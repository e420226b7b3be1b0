// Webhook use cases: create, update, delete, enable/disable, redeliver, and the outcome
// of a delivery attempt. Changes commit with their webhook.* event and audit entry.
// Recording an attempt raises no event (an event per attempt would feed the webhooks
// it is about), except webhook.disabled when failures switch a webhook off.
import type { Ctx } from './context'
import type { NewWebhook, Webhook, WebhookChange } from '../store/webhooks'
import type { Attempt, WebhookDelivery } from '../store/webhook-deliveries'
import type { Event } from '../store'
import { conflict, notFound } from '../lib/errors'
import { recordAudit, type AuditScope } from './audit'

const SOURCE = 'webhooks'

/** The webhook, or 404 webhook not found. */
export const found = <T>(hook: T | null): T => {
  if (!hook) throw notFound('webhook not found')
  return hook
}

export function createWebhook(ctx: Ctx, scope: AuditScope | undefined, input: NewWebhook): Promise<Webhook> {
  return ctx.store.write(async (tx) => {
    const hook = await tx.webhooks.create(input)
    await tx.emit('webhook.created', { id: hook.id, url: hook.url, patterns: hook.patterns }, SOURCE)
    await recordAudit(tx, scope, hook.url)
    return hook
  })
}

/**
 * Changes url, patterns or secret; pending deliveries go to the new url, signed with the new
 * secret. A new url makes them due now: whoever fixed a receiver's address need not wait for the next retry.
 */
export function updateWebhook(ctx: Ctx, scope: AuditScope | undefined, id: string, change: WebhookChange): Promise<Webhook> {
  return ctx.store.write(async (tx) => {
    const hook = found(await tx.webhooks.update(id, change))
    const changed = Object.keys(change).filter((k) => change[k as keyof WebhookChange] !== undefined)
    if (change.url !== undefined) await tx.webhooks.wake(id)
    await tx.emit('webhook.updated', { id, url: hook.url, patterns: hook.patterns, changed }, SOURCE)
    await recordAudit(tx, scope, changed.join(', '))
    return hook
  })
}

export function deleteWebhook(ctx: Ctx, scope: AuditScope | undefined, id: string): Promise<void> {
  return ctx.store.write(async (tx) => {
    if (!await tx.webhooks.delete(id)) throw notFound('webhook not found')
    await tx.emit('webhook.deleted', { id }, SOURCE)
    await recordAudit(tx, scope)
  })
}

/**
 * Enables (resetting fail_count) or disables a webhook. Enabling makes its backlog (the
 * deliveries still pending) due now: the dispatcher sends it oldest first.
 */
export function setWebhookActive(ctx: Ctx, scope: AuditScope | undefined, id: string, active: boolean): Promise<Webhook> {
  return ctx.store.write(async (tx) => {
    const hook = found(await tx.webhooks.setActive(id, active))
    const backlog = active ? { backlog: await tx.webhooks.wake(id) } : {}
    await tx.emit(active ? 'webhook.enabled' : 'webhook.disabled', { id, reason: 'api', ...backlog }, SOURCE)
    await recordAudit(tx, scope)
    return hook
  })
}

/**
 * Queues one delivery again: due now, attempts from zero, the same delivery id (receivers
 * that dedupe on it see a redelivery). 404 for an unknown webhook or delivery; a test
 * delivery is sent again with POST /api/webhooks/{id}/test instead (409).
 */
export async function redeliverOne(ctx: Ctx, scope: AuditScope | undefined, id: string, deliveryId: number): Promise<WebhookDelivery> {
  found(await ctx.store.webhooks.get(id))
  const known = await ctx.store.webhooks.delivery(id, deliveryId)
  if (!known) throw notFound(`webhook ${id} has no delivery ${deliveryId}: GET /api/webhooks/${id}/deliveries lists them`)
  if (known.test) throw conflict(`delivery ${deliveryId} is a test delivery: send another with POST /api/webhooks/${id}/test`)
  return ctx.store.write(async (tx) => {
    const delivery = await tx.webhooks.redeliver(id, deliveryId)
    if (!delivery) throw notFound(`webhook ${id} has no delivery ${deliveryId}: GET /api/webhooks/${id}/deliveries lists them`)
    await tx.emit('webhook.redelivered', { id, deliveries: [deliveryId] }, SOURCE)
    await recordAudit(tx, scope, `delivery ${deliveryId}`)
    return delivery
  })
}

/** Queues every delivery of the webhook made at or after `since` again (test deliveries aside); how many. */
export async function redeliverSince(ctx: Ctx, scope: AuditScope | undefined, id: string, since: string): Promise<number> {
  found(await ctx.store.webhooks.get(id))
  return ctx.store.write(async (tx) => {
    const count = await tx.webhooks.redeliverSince(id, since)
    if (count) await tx.emit('webhook.redelivered', { id, since, count }, SOURCE)
    await recordAudit(tx, scope, `${count} since ${since}`)
    return count
  })
}

/**
 * Records an attempt of a queued delivery with its webhook's counters, in one unit:
 * `maxFailures` consecutive failures disable the webhook (webhook.disabled).
 * `retryAt`: when a failed delivery is tried again (null: failed for good).
 */
export function recordAttempt(ctx: Ctx, id: string, deliveryId: number, attempt: Attempt, retryAt: string | null, maxFailures: number): Promise<Webhook | null> {
  return ctx.store.write(async (tx) => {
    await tx.webhooks.attempted(deliveryId, attempt, retryAt)
    const hook = await tx.webhooks.recordDelivery(id, attempt.ok, maxFailures)
    if (hook && !attempt.ok && !hook.active && hook.fail_count === maxFailures)
      await tx.emit('webhook.disabled', { id, reason: 'failures', fail_count: hook.fail_count }, SOURCE)
    return hook
  })
}

/** Lists a test delivery with the others; the webhook's counters stay as they are. */
export const recordTest = (ctx: Ctx, id: string, event: Event, uuid: string, attempt: Attempt) =>
  ctx.store.write((tx) => tx.webhooks.recordTest(id, event, uuid, attempt))

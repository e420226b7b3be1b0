// Webhook use cases: create, delete, enable/disable, and the outcome of a delivery.
// Changes commit with their webhook.* event and audit entry. Recording a delivery
// raises no event (an event per delivery would feed the webhooks it is about), except
// webhook.disabled when failures switch a webhook off.
import type { Ctx } from './context'
import type { NewWebhook, Webhook } from '../store/webhooks'
import { notFound } from '../lib/errors'
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

export function deleteWebhook(ctx: Ctx, scope: AuditScope | undefined, id: string): Promise<void> {
  return ctx.store.write(async (tx) => {
    if (!await tx.webhooks.delete(id)) throw notFound('webhook not found')
    await tx.emit('webhook.deleted', { id }, SOURCE)
    await recordAudit(tx, scope)
  })
}

/** Enables (resetting fail_count) or disables a webhook. */
export function setWebhookActive(ctx: Ctx, scope: AuditScope | undefined, id: string, active: boolean): Promise<Webhook> {
  return ctx.store.write(async (tx) => {
    const hook = found(await tx.webhooks.setActive(id, active))
    await tx.emit(active ? 'webhook.enabled' : 'webhook.disabled', { id, reason: 'api' }, SOURCE)
    await recordAudit(tx, scope)
    return hook
  })
}

/** Records one delivery attempt; `maxFailures` consecutive failures disable the webhook (webhook.disabled). */
export function recordDelivery(ctx: Ctx, id: string, ok: boolean, maxFailures: number): Promise<Webhook | null> {
  return ctx.store.write(async (tx) => {
    const hook = await tx.webhooks.recordDelivery(id, ok, maxFailures)
    if (hook && !ok && !hook.active && hook.fail_count === maxFailures)
      await tx.emit('webhook.disabled', { id, reason: 'failures', fail_count: hook.fail_count }, SOURCE)
    return hook
  })
}

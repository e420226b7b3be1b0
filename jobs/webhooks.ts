// The webhook dispatcher (README "Webhooks"): every published event
// that matches an active webhook's patterns is POSTed to its url. Each webhook has
// its own queue worked one delivery at a time, so a slow receiver delays only
// itself; 10 consecutive failures disable the webhook.
import type { Ctx } from '../services/context'
import { log } from '../obs/log'
import { webhookDeliveries } from '../obs/prometheus'
import { signatureHeaders } from '../lib/webhook-signature'
import { matchesAny } from '../lib/glob'
import type { Event } from '../store'
import { recordDelivery } from '../services/webhooks'
import { logDelivery } from '../services/delivery-log'
import { resolvedRefusal } from '../services/targets'
import { isEcho } from '../services/events'
import { nowIso } from '../lib/time'
import { StreamTooLarge, readUpTo } from '../lib/stream'

export const DELIVERY_TIMEOUT_MS = 5000
export const MAX_FAILURES = 10
/** The receiver's answer is read (and discarded) up to this size; a longer one fails the delivery. */
export const MAX_ANSWER = 1024 * 1024
/** Events waiting per webhook; beyond this the oldest waiting one is dropped (logged). */
const QUEUE_MAX = 1000

export type Delivery = { ok: true; status: number } | { ok: false; error: string; status?: number }

/** The header every delivery carries; an event published by a request carrying it is an echo (services/events.ts). */
export const DELIVERY_HEADER = 'x-service-delivery'

/** One POST of the event, signed (both styles, lib/webhook-signature.ts) when there is a secret. Never throws. */
export async function deliver(target: { url: string; secret: string }, event: Event, stop?: AbortSignal): Promise<Delivery> {
  const body = JSON.stringify(event)
  const delivery = crypto.randomUUID()
  const headers: Record<string, string> = {
    'content-type': 'application/json',
    'user-agent': 'muster-webhooks',
    'x-service-event': event.topic,
    [DELIVERY_HEADER]: delivery,
    ...(target.secret ? signatureHeaders(target.secret, delivery, body) : {}),
  }
  const timeout = AbortSignal.timeout(DELIVERY_TIMEOUT_MS)
  try {
    const res = await fetch(target.url, {
      method: 'POST',
      headers,
      body,
      redirect: 'manual',
      signal: stop ? AbortSignal.any([timeout, stop]) : timeout,
    })
    // The receiver's answer counts only once fully read, within the timeout and the size limit.
    await readUpTo(res.body, MAX_ANSWER)
    return res.ok ? { ok: true, status: res.status } : { ok: false, error: `HTTP ${res.status}`, status: res.status }
  } catch (err) {
    if (timeout.aborted) return { ok: false, error: `no answer within ${DELIVERY_TIMEOUT_MS / 1000} s` }
    if (err instanceof StreamTooLarge) return { ok: false, error: `answer too large (over ${MAX_ANSWER} bytes)` }
    return { ok: false, error: (err as Error).message || String(err) }
  }
}

/** deliver(), with the attempt added to the webhook's recent deliveries (lib/delivery-log.ts). */
export async function deliverAndLog(
  ctx: Ctx,
  target: { id: string; url: string; secret: string },
  event: Event,
  opts: { test?: boolean; stop?: AbortSignal } = {},
): Promise<Delivery> {
  const at = nowIso()
  const started = performance.now()
  // Checked per delivery too: for webhooks stored before the policy (or under --allow-link-local-targets).
  const refused = await resolvedRefusal(ctx, target.url)
  const result: Delivery = refused ? { ok: false, error: refused } : await deliver(target, event, opts.stop)
  webhookDeliveries.inc({ outcome: result.ok ? 'success' : 'failure' })
  logDelivery(ctx, target.id, {
    event_id: event.id,
    topic: event.topic,
    at,
    ok: result.ok,
    status: result.status ?? null,
    error: result.ok ? '' : result.error,
    duration_ms: Math.round(performance.now() - started),
    test: opts.test ?? false,
  })
  return result
}

export function startWebhookDispatcher(ctx: Ctx): () => Promise<void> {
  const queues = new Map<string, Event[]>()
  const workers = new Map<string, Promise<void>>()
  const stopping = new AbortController()

  async function work(id: string, queue: Event[]): Promise<void> {
    while (queue.length && !stopping.signal.aborted) {
      const event = queue.shift()!
      // Read per delivery: the webhook may have been deleted, disabled or changed meanwhile.
      const target = await ctx.store.webhooks.target(id)
      if (!target?.active) break
      const result = await deliverAndLog(ctx, target, event, { stop: stopping.signal })
      if (stopping.signal.aborted) break
      const after = await recordDelivery(ctx, id, result.ok, MAX_FAILURES)
      if (!result.ok) {
        log.warn({ webhook: id, event_id: event.id, url: target.url, status: result.status ?? null, error: result.error }, 'webhook delivery failed')
        if (after && !after.active) log.error({ webhook: id }, `webhook disabled after ${MAX_FAILURES} consecutive failures`)
      }
    }
    queues.delete(id)
    workers.delete(id)
  }

  function enqueue(id: string, event: Event): void {
    if (stopping.signal.aborted) return
    let queue = queues.get(id)
    if (!queue) queues.set(id, (queue = []))
    if (queue.length >= QUEUE_MAX) log.warn({ webhook: id, event_id: queue.shift()!.id }, 'webhook queue full, event not delivered')
    queue.push(event)
    if (!workers.has(id)) workers.set(id, work(id, queue))
  }

  // One lookup at a time, so events reach each webhook's queue in id order. Only the leader
  // dispatches, so each event is delivered once however many replicas heard it.
  let dispatched: Promise<void> = Promise.resolve()
  const unlisten = ctx.bus.listen((event) => {
    if (isEcho(event) || !ctx.store.isLeader()) return
    dispatched = dispatched
      .then(() => ctx.store.webhooks.active())
      .then((hooks) => {
        for (const hook of hooks) if (matchesAny(hook.patterns, event.topic)) enqueue(hook.id, event)
      })
      .catch((err) => log.error({ err }, 'webhook dispatch failed'))
  })

  return async () => {
    unlisten()
    stopping.abort()
    await Promise.all(workers.values())
  }
}

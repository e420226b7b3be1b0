// Event use cases: publishing over REST, and pruning the history. (Change events
// are written by each service inside the unit of its change; see Tx.emit.)
import type { Ctx } from './context'
import { ECHO, type Event } from '../store/events'
import { recordAudit, type AuditScope } from './audit'

// Events published by a webhook delivery (a receiver that forwards to this server, or
// this server itself): they reach subscribers but never webhooks, or the two would loop.
export const isEcho = (event: Event) => event[ECHO] === true

/**
 * Publishes an event of a client (source ""); it commits, then reaches subscribers.
 * `echo`: the request came from a webhook delivery (it carries the delivery header).
 */
export function publishEvent(ctx: Ctx, scope: AuditScope | undefined, topic: string, data: unknown, echo = false): Promise<Event> {
  return ctx.store.write(async (tx) => {
    const event = await tx.emit(topic, data, '', echo)
    await recordAudit(tx, scope, `event ${event.id}`)
    return event
  })
}

/** Keeps the newest `keep` events. */
export const pruneEvents = (ctx: Ctx, keep: number) => ctx.store.write(async (tx) => await tx.events.prune(keep))

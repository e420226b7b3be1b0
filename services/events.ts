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

/**
 * Events one unit of pruning deletes at most. A fleet writes tens of thousands of events a
 * minute; deleting them in one statement held the writer, and on SQLite every request, for
 * a fifth of a second. Between two units the writes queued meanwhile go in.
 */
export const EVENTS_PRUNE_STEP = 2000

/**
 * Keeps the newest `keep` events, deleting the others `step` at a time; how many went. The
 * cutoff is read once: finding it costs a walk over the `keep` newest ids, too much per step.
 */
export async function pruneEvents(ctx: Ctx, keep: number, step = EVENTS_PRUNE_STEP): Promise<number> {
  const through = await ctx.store.events.pruneCutoff(keep)
  let deleted = 0
  while (through > 0) {
    const n = await ctx.store.write(async (tx) => await tx.events.prune(through, step))
    deleted += n
    if (n < step || ctx.shutdown.aborted) break
  }
  return deleted
}

// Event use cases: publishing over REST, and pruning the history. (Change events
// are written by each service inside the unit of its change; see Tx.emit.)
import type { Ctx } from './context'
import type { Event } from '../store'
import { recordAudit, type AuditScope } from './audit'

/** Publishes an event of a client (source ""); it commits, then reaches subscribers. */
export function publishEvent(ctx: Ctx, scope: AuditScope | undefined, topic: string, data: unknown): Promise<Event> {
  return ctx.store.write(async (tx) => {
    const event = await tx.emit(topic, data, '')
    await recordAudit(tx, scope, `event ${event.id}`)
    return event
  })
}

/** Keeps the newest `keep` events. */
export const pruneEvents = (ctx: Ctx, keep: number) => ctx.store.write(async (tx) => await tx.events.prune(keep))

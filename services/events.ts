// Event use cases: publishing over REST, and pruning the history. (Change events
// are written by each service inside the unit of its change; see Tx.emit.)
import type { Ctx } from './context'
import type { Event } from '../store'
import { recordAudit, type AuditScope } from './audit'

/** Publishes an event of a client (source ""); it commits, then reaches subscribers. */
export function publishEvent(ctx: Ctx, scope: AuditScope | undefined, topic: string, data: unknown): Promise<Event> {
  return ctx.store.write((tx) => {
    const event = tx.emit(topic, data, '')
    recordAudit(tx, scope, `event ${event.id}`)
    return event
  })
}

/** Keeps the newest `keep` events. */
export const pruneEvents = (ctx: Ctx, keep: number) => ctx.store.write((tx) => tx.events.prune(keep))

// What one server keeps in memory beside its store, built once by app.ts after the bus
// and put on the context: the callers waiting in line for locks, claims and long-poll
// watches (each set's wake-up listener attached to the bus here, so the commit of a
// write wakes its waiters from the first request on), the token caches, and the
// releasers that run when a TTL ends or an instance goes away.
import type { Bus } from './bus'
import type { Ctx } from './context'
import { lockLines, lockReleaser } from './locks'
import { claimReleaser, claimWaiters } from './queue'
import { reservationReleaser } from './reservations'
import { watchWaiters } from './watches'
import { InboxWaiters } from './messages'
import { TokenIds } from './token-ids'
import { Credentials } from './credentials'
import { ApprovalsMemory } from './approvals'
import { ReachedBudgets } from './budgets'

export type Coordination = Pick<Ctx, 'lockLines' | 'claimWaiters' | 'inboxWaiters' | 'tokens' | 'credentials' | 'approvals' | 'reachedBudgets' | 'watches' | 'releasers'>

/** Held requests end when `shutdown` is aborted. */
export function coordination(bus: Bus, shutdown: AbortSignal): Coordination {
  return {
    lockLines: lockLines(bus, shutdown),
    claimWaiters: claimWaiters(bus, shutdown),
    inboxWaiters: new InboxWaiters(bus, shutdown),
    tokens: new TokenIds(bus),
    credentials: new Credentials(bus),
    approvals: new ApprovalsMemory(bus, shutdown),
    reachedBudgets: new ReachedBudgets(bus),
    watches: watchWaiters(bus, shutdown),
    // In this order their release events are written within one unit.
    releasers: [claimReleaser, lockReleaser, reservationReleaser],
  }
}

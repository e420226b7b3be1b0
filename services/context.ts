// What the composition root hands to every route module and job.
import type { Bus } from './bus'
import type { Config } from '../lib/config'
import type { Store } from '../store'
import type { AgentMetrics } from './metrics'
import type { Waiters } from '../lib/waiters'
import type { ApprovalsMemory } from './approvals'
import type { ReachedBudgets } from './budgets'
import type { InboxWaiters } from './messages'
import type { TokenIds } from './token-ids'
import type { Credentials } from './credentials'
import type { LockLines } from './locks'
import type { Watches } from './watches'
import type { Releaser } from './releasers'
import type { ImplicitHeartbeats } from './implicit-heartbeat'
import type { Background } from '../lib/background'

export interface Ctx {
  config: Config
  store: Store
  bus: Bus
  /** Agent metric counters: `ctx.metrics.count(instanceId, 'violations', n)`; batched in memory, flushed every few seconds. */
  metrics: AgentMetrics
  startedAt: number
  /** Aborted when the server stops: held requests (long polls, lock and claim waits) end at once. */
  shutdown: AbortSignal
  /** Throttles the heartbeat every call with an instance token counts as. */
  heartbeats: ImplicitHeartbeats
  /** Work after a response (agent metric counts, implicit heartbeats) that shutdown waits for. */
  background: Background
  // What the server keeps in memory beside its store (services/coordination.ts builds it).
  /** Callers waiting in line for a lock, by lock name. */
  lockLines: LockLines
  /** Claims held with wait_ms, by queue. */
  claimWaiters: Waiters
  /** Inbox reads held with wait, by agent name, and the delivery marks of inbox answers. */
  inboxWaiters: InboxWaiters
  /** Instance ids by X-Instance-Token, known from earlier calls. */
  tokens: TokenIds
  /** Agent and viewer tokens by their secret, known from earlier calls, and their uses not yet stored. */
  credentials: Credentials
  /** PermissionRequest hook answers held for a person's decision, and the sessions with a "needs input" notice. */
  approvals: ApprovalsMemory
  /** The budgets over their limit, as the hooks read them on every tool call. */
  reachedBudgets: ReachedBudgets
  /** Long polls on state keys and event history. */
  watches: Watches
  /** One per primitive (locks, reservations, task claims): what runs when a TTL ends or an instance goes away. */
  releasers: readonly Releaser[]
  /** Base URL of the API as bound (filled in once listening), e.g. http://127.0.0.1:9800 */
  apiUrl: string
  /** "host:port" as bound, or "" when the dashboard is disabled */
  apiBind: string
  dashboardBind: string
}

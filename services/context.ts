// What the composition root hands to every route module and job.
import type { Bus } from './bus'
import type { Config } from '../lib/config'
import type { Store } from '../store'
import type { AgentMetrics } from '../services/metrics'

export interface Ctx {
  config: Config
  store: Store
  bus: Bus
  /** Agent metric counters: `ctx.metrics.count(instanceId, 'violations', n)`; batched in memory, flushed every few seconds. */
  metrics: AgentMetrics
  startedAt: number
  /** Aborted when the server stops: held requests (long polls, lock and claim waits) end at once. */
  shutdown: AbortSignal
  /** Base URL of the API as bound (filled in once listening), e.g. http://127.0.0.1:9800 */
  apiUrl: string
  /** "host:port" as bound, or "" when the dashboard is disabled */
  apiBind: string
  dashboardBind: string
}

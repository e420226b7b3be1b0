// Agent metrics: counted in memory per request (lib/metrics.ts) and written in one
// unit per flush; the sink here is that write.
import type { Store } from '../store'
import { AgentMetrics } from '../lib/metrics'

/** The counters of a server, flushed into `store` (every few seconds, before reads and backups, on shutdown). */
export const agentMetrics = (store: Store) => new AgentMetrics((rows) => store.write(async (tx) => tx.metrics.add(rows)))

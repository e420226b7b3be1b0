// The store: every table group behind one object of Promise-returning methods
// (store/types.ts), on the embedded SQLite file or on PostgreSQL.
import type { Store } from './types'
import { openStore } from './sqlite/index'
export type { Store, Tx } from './types'
export type { Event } from './events'
export { openStore }

/** The store for the configured database: a PostgreSQL URL, or the embedded SQLite file in `dataDir` (its document cache bounded by `cacheBytes`). */
export async function openConfiguredStore(database: string, dataDir: string, cacheBytes?: number): Promise<Store> {
  if (!database) return openStore(dataDir, { cacheBytes })
  const { openPgStore } = await import('./pg/index')
  return openPgStore(database, dataDir)
}

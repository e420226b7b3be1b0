// The Store on PostgreSQL (--database postgres://…): the same interfaces as the
// embedded SQLite store, for any number of replicas sharing one database. Writes
// are serialized cluster-wide (store/pg/db.ts PgUnits), events reach every
// replica's listeners in id order (store/pg/feed.ts), jobs run on one leader
// (store/pg/leader.ts), and nothing is cached that another replica could change.
import type { SQL } from 'bun'
import { mkdirSync } from 'node:fs'
import { SCHEMA_VERSION } from '../db'
import { removeStaleTemps, tempPath } from '../backup'
import type { Store, Tx } from '../index'
import { connect, migrate, PgUnits } from './db'
import { EventFeed } from './feed'
import { Leader } from './leader'
import { syncClock } from './clock'
import { pgSnapshot, pgRestore, RESET_CHANNEL } from './backup'
import { pgEventsStore, pgEventsWrites } from './events'
import { pgDocs } from './versioned'
import { stateStore, stateWrites } from '../state'
import { specsStore, specsWrites } from '../specs'
import { pgAuditStore, pgAuditWrites } from './audit'
import { pgInstancesStore, pgInstancesWrites } from './instances'
import { pgMetricsStore, pgMetricsWrites } from './metrics'
import { pgLlmStore, pgLlmWrites } from './llm'
import { pgRulesStore, pgRulesWrites } from './rules'
import { pgTemplatesStore, pgTemplatesWrites } from './templates'
import { pgComplianceStore, pgComplianceWrites } from './compliance'
import { pgWebhooksStore, pgWebhooksWrites } from './webhooks'
import { pgHoldersStore, pgHoldersWrites } from './holders'
import { pgQueueStore, pgQueueWrites } from './queue'
import { pgLocksStore, pgLocksWrites } from './locks'
import { pgReservationsStore, pgReservationsWrites } from './reservations'

export async function openPgStore(url: string, dataDir: string): Promise<Store> {
  const sql: SQL = connect(url)
  await migrate(sql)
  await syncClock(sql)
  // The data dir only stages backups and restores on this backend.
  mkdirSync(dataDir, { recursive: true })
  removeStaleTemps(dataDir)
  const units = new PgUnits(sql)
  const events = pgEventsWrites(units)
  const feed = new EventFeed(sql)
  const docs = pgDocs(sql, units)
  // Every table group's writes; `emit` is added per unit (its events' after-commit hooks are the unit's).
  const writes: Omit<Tx, 'emit'> = {
    state: stateWrites(docs),
    specs: specsWrites(docs),
    audit: pgAuditWrites(units),
    events,
    instances: pgInstancesWrites(units),
    metrics: pgMetricsWrites(units),
    llm: pgLlmWrites(units),
    rules: pgRulesWrites(units),
    templates: pgTemplatesWrites(units),
    compliance: pgComplianceWrites(units),
    webhooks: pgWebhooksWrites(units),
    holders: pgHoldersWrites(units),
    queue: pgQueueWrites(units),
    locks: pgLocksWrites(units),
    reservations: pgReservationsWrites(units),
  }
  await feed.start()
  // A restore through any replica replaced the events table: every replica's feed starts over after it.
  const resetSub = await sql.listen(RESET_CHANNEL, () => void feed.reset())
  const leader = new Leader(url)
  leader.start()
  const clockTimer = setInterval(() => void syncClock(sql).catch(() => {}), 10_000)
  clockTimer.unref()

  const store: Store = {
    state: stateStore(docs),
    specs: specsStore(docs),
    audit: pgAuditStore(sql),
    events: pgEventsStore(sql),
    instances: pgInstancesStore(sql),
    metrics: pgMetricsStore(sql),
    llm: pgLlmStore(sql),
    rules: pgRulesStore(sql),
    templates: pgTemplatesStore(sql),
    compliance: pgComplianceStore(sql),
    webhooks: pgWebhooksStore(sql),
    holders: pgHoldersStore(sql),
    queue: pgQueueStore(sql),
    locks: pgLocksStore(sql),
    reservations: pgReservationsStore(sql),
    backend: 'postgres',
    isLeader: () => leader.held,
    write: (fn) =>
      units.run((unit) => {
        // This unit's events: delivered here after COMMIT, and announced to the other
        // replicas by the NOTIFY that PostgreSQL sends at that same COMMIT.
        const unitTx: Tx = {
          ...writes,
          async emit(topic, data, source, echo) {
            const event = await events.append(topic, data, source, echo)
            unit.afterCommit(() => feed.committed(event))
            return event
          },
        }
        return fn(unitTx)
      }),
    onEvent: (listener) => feed.listeners.push(listener),
    schemaVersion: SCHEMA_VERSION,
    tempFile: (kind) => tempPath(dataDir, kind),
    snapshot: async () => {
      const target = tempPath(dataDir, 'backup')
      await pgSnapshot(sql, target)
      return target
    },
    replaceWith: async (file) => {
      await units.pause()
      try {
        await pgRestore(sql, file)
      } finally {
        units.resume()
      }
    },
    close: async () => {
      clearInterval(clockTimer)
      await leader.stop()
      await resetSub.unlisten().catch(() => {})
      await feed.stop()
      await sql.close({ timeout: 5 })
    },
  }
  return store
}

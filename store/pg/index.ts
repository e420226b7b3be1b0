// The Store on PostgreSQL (--database postgres://…): the same interfaces as the
// embedded SQLite store, for any number of replicas sharing one database. Writes
// are serialized cluster-wide (store/pg/units.ts), events reach every
// replica's listeners in id order (store/pg/feed.ts), jobs run on one leader
// (store/pg/leader.ts), and nothing is cached that another replica could change.
import type { SQL } from 'bun'
import { mkdirSync } from 'node:fs'
import { SCHEMA_VERSION } from '../sqlite/db'
import type { UnitHooks } from '../runner'
import { removeStaleTemps, tempPath } from '../backup'
import type { Store } from '../types'
import { tables } from '../tables'
import { connect, migrate, PG_MIGRATIONS } from './db'
import { PgUnits } from './units'
import { pgStartError } from './errors'
import { EventFeed } from './feed'
import { Leader } from './leader'
import { syncClock } from './clock'
import { pgSnapshot, pgRestore, RESET_CHANNEL } from './backup'
import { pgEventsStore, pgEventsWrites } from './events'
import { pgDocs } from './versioned'
import { pgRunner, PG } from './runner'
import { keepStatistics } from './statistics'

/** How long GET /readyz waits for the database before calling it unreachable (a dead host would hold it for the pool's connect timeout). */
const READY_WAIT_MS = 2_000

async function notReady(sql: SQL, feed: EventFeed): Promise<string | null> {
  const timeout = new Promise<'timeout'>((resolve) => setTimeout(resolve, READY_WAIT_MS, 'timeout').unref())
  const version = sql.unsafe('SELECT version FROM muster_schema').then((rows) => Number(rows[0]?.version), (err: Error) => err)
  const answer = await Promise.race([version, timeout])
  if (answer === 'timeout') return `database did not answer within ${READY_WAIT_MS} ms`
  if (answer instanceof Error) return `database unreachable: ${answer.message}`
  if (answer !== PG_MIGRATIONS.length) return `database schema is at version ${answer}, this build needs ${PG_MIGRATIONS.length}`
  return feed.listening ? null : 'event feed is not listening for other replicas\' events'
}

export async function openPgStore(url: string, dataDir: string): Promise<Store> {
  const sql: SQL = connect(url)
  // The first query: where it fails, the database was not reached or refused the schema.
  await migrate(sql).catch(async (err) => {
    await sql.close().catch(() => {})
    throw pgStartError(url, err)
  })
  await syncClock(sql)
  // The data dir only stages backups and restores on this backend.
  mkdirSync(dataDir, { recursive: true })
  removeStaleTemps(dataDir)
  // Tags this process's NOTIFYs: its own feed has their events already.
  const replica = crypto.randomUUID().slice(0, 8)
  const units = new PgUnits(sql, replica)
  const events = { reads: pgEventsStore(sql), writes: pgEventsWrites(units) }
  const feed = new EventFeed(sql, replica)
  // Units run one at a time, so the unit the writes' hooks belong to is always the running one.
  let current: UnitHooks | null = null
  const unit: UnitHooks = { afterCommit: (fn) => current!.afterCommit(fn) }
  const { reads, tx } = tables({
    reads: pgRunner(() => sql),
    writes: pgRunner(() => units.tx, units),
    dialect: PG,
    docs: pgDocs(sql, units),
    events,
    unit,
    soleWriter: false,
    // Delivered here after COMMIT, and announced to the other replicas by the NOTIFY
    // that PostgreSQL sends at that same COMMIT.
    deliver: (event) => feed.committed(event),
  })
  await feed.start()
  // A restore through any replica replaced the events table: every replica's feed starts over after it.
  const resetSub = await sql.listen(RESET_CHANNEL, () => void feed.reset())
  const leader = new Leader(url)
  leader.start()
  const clockTimer = setInterval(() => void syncClock(sql).catch(() => {}), 10_000)
  clockTimer.unref()
  const stopStatistics = keepStatistics(sql, () => leader.held)

  const store: Store = {
    ...reads,
    backend: 'postgres',
    isLeader: () => leader.held,
    write: (fn) =>
      units.run((u) => {
        current = u
        return fn(tx)
      }),
    onEvent: (listener) => feed.listeners.push(listener),
    schemaVersion: SCHEMA_VERSION,
    notReady: () => notReady(sql, feed),
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
      await stopStatistics()
      await leader.stop()
      await resetSub.unlisten().catch(() => {})
      await feed.stop()
      await sql.close({ timeout: 5 })
    },
  }
  return store
}

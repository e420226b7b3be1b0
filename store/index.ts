// The store: every table group behind one object of Promise-returning methods,
// so routes never see SQL and another backend can replace SQLite later.
// Routes must reach sub-stores through the Store object on every call (never keep
// a sub-store in a variable): restore swaps the database and rebuilds them in place.
import { workerUrl } from '../lib/workers'
import type { Database } from 'bun:sqlite'
import { join } from 'node:path'
import { SCHEMA_VERSION, groupCommit, openDatabase } from './db'
import { auditStore, type AuditStore } from './audit'
import { checkBackup, removeStaleTemps, snapshot, swapIn, SwapFailed, tempPath } from './backup'
import { complianceStore, type ComplianceStore } from './compliance'
import { eventsStore, type EventsStore } from './events'
import { instancesStore, type InstancesStore } from './instances'
import { llmStore, type LlmStore } from './llm'
import { metricsStore, type MetricsStore } from './metrics'
import { rulesStore, type RulesStore } from './rules'
import { specsStore, type SpecsStore } from './specs'
export type { Event } from './events'
import { stateStore, type StateStore } from './state'
import { webhooksStore, type WebhooksStore } from './webhooks'
import { templatesStore, type TemplatesStore } from './templates'

const DB_FILE = 'muster.db'

export interface Store {
  state: StateStore
  specs: SpecsStore
  audit: AuditStore
  events: EventsStore
  instances: InstancesStore
  metrics: MetricsStore
  llm: LlmStore
  rules: RulesStore
  templates: TemplatesStore
  readonly schemaVersion: number
  /** A fresh temp path in the data dir, e.g. to receive an upload for replaceWith. */
  tempFile(kind: 'backup' | 'restore'): string
  /** Writes a consistent snapshot of the whole database to a new temp file and returns its path; the caller removes it. */
  snapshot(): Promise<string>
  /**
   * Checks that `file` is a sound backup of this schema (else throws invalid and
   * changes nothing), then makes it the live database: the sub-stores of this
   * object are rebuilt in place over it. `file` is moved, not copied.
   */
  replaceWith(file: string): Promise<void>
  compliance: ComplianceStore
  webhooks: WebhooksStore
  close(): void
}

/** WAL checkpoints every second on a worker thread (store/checkpointer.ts); autocheckpoint stays as the fallback. */
function startCheckpointer(file: string): Worker {
  const worker = new Worker(workerUrl('store/checkpointer.ts'))
  worker.onerror = (e) => console.error(`wal checkpointer failed (autocheckpoint continues): ${e.message}`)
  worker.postMessage({ file, intervalMs: 1000 })
  return worker
}

function build(db: Database) {
  return {
    state: stateStore(db),
    specs: specsStore(db),
    audit: auditStore(db),
    events: eventsStore(db),
    instances: instancesStore(db),
    metrics: metricsStore(db),
    llm: llmStore(db),
    compliance: complianceStore(db),
    webhooks: webhooksStore(db),
    rules: rulesStore(db),
    templates: templatesStore(db),
  }
}

export function openStore(dataDir: string): Store {
  let db = openDatabase(dataDir, DB_FILE)
  const dbPath = join(dataDir, DB_FILE)
  removeStaleTemps(dataDir)
  let checkpointer = startCheckpointer(dbPath)
  // Snapshots and restores take turns: a snapshot's reader must never straddle a swap.
  let turn: Promise<unknown> = Promise.resolve()
  const exclusive = <T>(fn: () => Promise<T>): Promise<T> => {
    const run = turn.then(fn, fn)
    turn = run.catch(() => {})
    return run
  }
  const store: Store = {
    ...build(db),
    schemaVersion: SCHEMA_VERSION,
    tempFile: (kind) => tempPath(dataDir, kind),
    snapshot: () =>
      exclusive(async () => {
        const target = tempPath(dataDir, 'backup')
        await snapshot(dbPath, target)
        return target
      }),
    replaceWith: (file) =>
      exclusive(async () => {
        await checkBackup(file)
        // The swap needs the only connection: commit the open batch and stop the checkpointer first.
        groupCommit(db).commitNow()
        checkpointer.terminate()
        try {
          db = swapIn(db, dbPath, file)
        } catch (err) {
          if (!(err instanceof SwapFailed)) throw err
          db = err.db
          Object.assign(store, build(db))
          throw err.reason
        } finally {
          checkpointer = startCheckpointer(dbPath)
        }
        Object.assign(store, build(db))
      }),
    close: () => {
      checkpointer.terminate()
      groupCommit(db).commitNow()
      db.close()
    },
  }
  return store
}

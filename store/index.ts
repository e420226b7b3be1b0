// The store: every table group behind one object of Promise-returning methods,
// so routes never see SQL and another backend can replace SQLite later.
// Routes must reach sub-stores through the Store object on every call (never keep
// a sub-store in a variable): restore swaps the database and rebuilds them in place.
import { log } from '../obs/log'
import { workerUrl } from '../lib/workers'
import type { FromCheckpointer, ToCheckpointer } from './checkpointer'
import type { Database } from 'bun:sqlite'
import { join } from 'node:path'
import { closeSync, fstatSync, openSync, statSync } from 'node:fs'
import { GroupCommit, SCHEMA_VERSION, openDatabase, openReader, type UnitHooks } from './db'
import { auditStore, auditWrites, type AuditStore, type AuditWrites } from './audit'
import { checkBackup, removeStaleTemps, snapshot, swapIn, SwapFailed, tempPath } from './backup'
import { complianceStore, complianceWrites, type ComplianceStore, type ComplianceWrites } from './compliance'
import { eventsStore, eventsWrites, type Event, type EventsStore, type EventsWrites } from './events'
import { instancesStore, instancesWrites, type InstancesStore, type InstancesWrites } from './instances'
import { llmStore, llmWrites, type LlmStore, type LlmWrites } from './llm'
import { metricsStore, metricsWrites, type MetricsStore, type MetricsWrites } from './metrics'
import { rulesStore, rulesWrites, type RulesStore, type RulesWrites } from './rules'
import { specsStore, specsWrites, type SpecsStore, type SpecsWrites } from './specs'
import { stateStore, stateWrites, type StateStore, type StateWrites } from './state'
import { webhooksStore, webhooksWrites, type WebhooksStore, type WebhooksWrites } from './webhooks'
import { templatesStore, templatesWrites, type TemplatesStore, type TemplatesWrites } from './templates'
import { VersionedDocs } from './versioned'
import { lockDataDir } from './datadir-lock'
import { holdersStore, holdersWrites, type HoldersStore, type HoldersWrites } from './holders'
import { queueStore, queueWrites, type QueueStore, type QueueWrites } from './queue'
import { locksStore, locksWrites, type LocksStore, type LocksWrites } from './locks'
import { reservationsStore, reservationsWrites, type ReservationsStore, type ReservationsWrites } from './reservations'
export type { Event } from './events'

const DB_FILE = 'muster.db'

/** The Promise-returning face of a table group's writes (SQLite runs them synchronously; another backend need not). */
export type Async<T> = { [K in keyof T]: T[K] extends (...args: infer A) => infer R ? (...args: A) => Promise<Awaited<R>> : T[K] }

function async<T extends object>(writes: T): Async<T> {
  const out: Record<string, unknown> = {}
  for (const [name, fn] of Object.entries(writes)) {
    out[name] = (...args: unknown[]) => {
      try {
        return Promise.resolve((fn as (...a: unknown[]) => unknown)(...args))
      } catch (err) {
        return Promise.reject(err)
      }
    }
  }
  return out as Async<T>
}

/**
 * One unit of work: every write method of every table group, all in one
 * transaction. `emit` appends an event that commits with the unit and reaches
 * subscribers only after that COMMIT (never for a unit that rolled back).
 */
export interface Tx {
  state: Async<StateWrites>
  specs: Async<SpecsWrites>
  audit: Async<AuditWrites>
  events: Async<EventsWrites>
  instances: Async<InstancesWrites>
  metrics: Async<MetricsWrites>
  llm: Async<LlmWrites>
  rules: Async<RulesWrites>
  templates: Async<TemplatesWrites>
  compliance: Async<ComplianceWrites>
  webhooks: Async<WebhooksWrites>
  holders: Async<HoldersWrites>
  queue: Async<QueueWrites>
  locks: Async<LocksWrites>
  reservations: Async<ReservationsWrites>
  emit(topic: string, data: unknown, source: string, echo?: boolean): Promise<Event>
}

/** Reads see committed data only. Every write goes through `write`. */
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
  compliance: ComplianceStore
  webhooks: WebhooksStore
  holders: HoldersStore
  queue: QueueStore
  locks: LocksStore
  reservations: ReservationsStore
  /**
   * Runs `fn` as one unit of work in the group commit and resolves with its result
   * once it is durable. A throw (or rejection) rolls the whole unit back. Units run
   * one at a time: keep slow work (network, workers) outside `fn`.
   */
  write<T>(fn: (tx: Tx) => Promise<T>): Promise<T>
  /** Calls `listener` with every event, in id order, right after the COMMIT that made it durable. */
  onEvent(listener: (event: Event) => void): void
  readonly schemaVersion: number
  /** Which engine holds the data. */
  readonly backend: 'sqlite' | 'postgres'
  /**
   * Whether this process runs the jobs (pruning, liveness, compliance, expiry, webhook
   * dispatch). Always on SQLite; on PostgreSQL exactly one replica at a time.
   */
  isLeader(): boolean
  /** A fresh temp path in the data dir, e.g. to receive an upload for replaceWith. */
  tempFile(kind: 'backup' | 'restore'): string
  /** Writes a consistent snapshot of the whole database to a new temp file and returns its path; the caller removes it. */
  snapshot(): Promise<string>
  /**
   * Checks that `file` is a sound backup of this schema (else throws invalid and
   * changes nothing), then makes it the live database: reads and writes are
   * rebuilt in place over it. `file` is moved, not copied.
   */
  replaceWith(file: string): Promise<void>
  close(): void | Promise<void>
}

/**
 * WAL checkpoints on a worker thread (store/checkpointer.ts): every CHECKPOINT_BUSY_MS
 * while writes come in, every CHECKPOINT_IDLE_MS otherwise; and a turnover (writes held
 * back for one last checkpoint, then the WAL starts over) once it holds TURNOVER_FRAMES
 * pages, ~200 MB: the bound the writer's autocheckpoint used to keep, inline in a COMMIT
 * (store/db.ts keeps that only as the fallback, further out). Small, frequent
 * checkpoints, and a sync of the database file every few MB they copy, leave the turnover's
 * checkpoint little to copy and little to sync: holds of 3-10 ms on the test machine.
 */
const CHECKPOINT_BUSY_MS = 25
const CHECKPOINT_IDLE_MS = 200
const TURNOVER_FRAMES = 50_000
/** A turnover that has not finished by then lets the writes go on anyway (the WAL then starts over later). */
const TURNOVER_WAIT_MS = 2_000

function startCheckpointer(file: string, fileFd: number, turnoverFrames: number, turnover: (worker: Worker) => void): Worker {
  const worker = new Worker(workerUrl('store/checkpointer.ts'))
  worker.onerror = (e) => log.error(`wal checkpointer failed (autocheckpoint continues): ${e.message}`)
  // The worker has no logger of its own (its module copy would not know the log format): it reports here.
  worker.addEventListener('message', (e: MessageEvent<FromCheckpointer>) => {
    if ('error' in e.data) log.error(`wal checkpoint failed: ${e.data.error}`)
    else if ('wantsTurnover' in e.data) turnover(worker)
  })
  const start: ToCheckpointer = { file, fileFd, busyMs: CHECKPOINT_BUSY_MS, idleMs: CHECKPOINT_IDLE_MS, turnoverFrames }
  worker.postMessage(start)
  return worker
}

/** Asks the worker for its turnover checkpoint; resolves when it is done, or after TURNOVER_WAIT_MS. */
function turnoverCheckpoint(worker: Worker): Promise<void> {
  return new Promise((resolve) => {
    const done = (e: MessageEvent<FromCheckpointer>) => {
      if ('turnedOver' in e.data) finish()
    }
    const finish = () => {
      clearTimeout(timer)
      worker.removeEventListener('message', done)
      resolve()
    }
    const timer = setTimeout(finish, TURNOVER_WAIT_MS)
    worker.addEventListener('message', done)
    const ask: ToCheckpointer = { turnover: true }
    worker.postMessage(ask)
  })
}

type Listener = (event: Event) => void

/**
 * A descriptor of the database file for the checkpointer's syncs, kept open while that file
 * is the live one: closing any descriptor of a file drops every POSIX lock this process holds
 * on it, SQLite's included, so one is closed only once no connection uses its file.
 */
function databaseFd(path: string, current: number | null): number {
  if (current !== null) {
    if (fstatSync(current).ino === statSync(path).ino) return current
    closeSync(current)
  }
  return openSync(path, 'r')
}

/** The reading and writing halves over one writer connection and one reader connection. */
function build(writer: Database, reader: Database, unit: UnitHooks, listeners: Listener[]) {
  const docs = new VersionedDocs(reader, writer, unit)
  const webhooks = webhooksStore(reader)
  const events = eventsWrites(writer)
  const tx: Tx = {
    state: stateWrites(docs),
    specs: specsWrites(docs),
    audit: async(auditWrites(writer)),
    events: async(events),
    instances: async(instancesWrites(writer)),
    metrics: async(metricsWrites(writer)),
    llm: async(llmWrites(writer)),
    rules: async(rulesWrites(writer)),
    templates: async(templatesWrites(writer)),
    compliance: async(complianceWrites(writer)),
    webhooks: async(webhooksWrites(writer, unit, webhooks.changed)),
    holders: async(holdersWrites(writer)),
    queue: async(queueWrites(writer)),
    locks: async(locksWrites(writer)),
    reservations: async(reservationsWrites(writer)),
    async emit(topic, data, source, echo) {
      const event = events.append(topic, data, source, echo)
      unit.afterCommit(() => {
        for (const listener of listeners) listener(event)
      })
      return event
    },
  }
  const reads = {
    state: stateStore(docs),
    specs: specsStore(docs),
    audit: auditStore(reader),
    events: eventsStore(reader),
    instances: instancesStore(reader),
    metrics: metricsStore(reader),
    llm: llmStore(reader),
    compliance: complianceStore(reader),
    webhooks,
    rules: rulesStore(reader),
    templates: templatesStore(reader),
    holders: holdersStore(reader),
    queue: queueStore(reader),
    locks: locksStore(reader),
    reservations: reservationsStore(reader),
  }
  return { reads, tx }
}

/** The store for the configured database: a PostgreSQL URL, or the embedded SQLite file in `dataDir`. */
export async function openConfiguredStore(database: string, dataDir: string): Promise<Store> {
  if (!database) return openStore(dataDir)
  const { openPgStore } = await import('./pg/index')
  return openPgStore(database, dataDir)
}

/** `turnoverFrames`: the WAL length that starts a turnover (TURNOVER_FRAMES; tests make it short). */
export function openStore(dataDir: string, { turnoverFrames = TURNOVER_FRAMES } = {}): Store {
  const lock = lockDataDir(dataDir)
  let db = openDatabase(dataDir, DB_FILE)
  let reader = openReader(dataDir, DB_FILE)
  const dbPath = join(dataDir, DB_FILE)
  let dbFd = databaseFd(dbPath, null)
  removeStaleTemps(dataDir)
  // Started once a write has changed a row: until then the WAL holds nothing the checkpointer could
  // move (the TTL expiry pass is a write every 250 ms that seldom changes one), and a server that has
  // only started or only read is spared the thread (~2.5 MB, and CPU on the way to /health).
  let checkpointer: Worker | null = null
  const totalChanges = () => (db.query('SELECT total_changes() AS n').get() as { n: number }).n
  const changesAtOpen = totalChanges()
  const group = new GroupCommit(db)
  // Write units wait (in the group's queue) while the worker's turnover checkpoint runs; reads go on.
  // In turn with snapshots and restores, which hold the writer themselves.
  const turnover = (worker: Worker) =>
    void exclusive(async () => {
      if (worker !== checkpointer) return
      const started = performance.now()
      await group.pause()
      try {
        await turnoverCheckpoint(worker)
      } finally {
        group.resume(db)
        log.debug({ held_ms: Math.round(performance.now() - started) }, 'wal turnover: writes held back for its checkpoint')
      }
    }).catch((err) => log.error({ err }, 'wal turnover failed'))
  const startCheckpointerOnChange = () => {
    if (!checkpointer && totalChanges() > changesAtOpen) checkpointer = startCheckpointer(dbPath, dbFd, turnoverFrames, turnover)
  }
  // Units run one at a time, so the unit the tx's hooks belong to is always the running one.
  let current: UnitHooks | null = null
  const unit: UnitHooks = { afterCommit: (fn) => current!.afterCommit(fn) }
  const listeners: Listener[] = []
  let built = build(db, reader, unit, listeners)
  // Snapshots and restores take turns: a snapshot's reader must never straddle a swap.
  let turn: Promise<unknown> = Promise.resolve()
  const exclusive = <T>(fn: () => Promise<T>): Promise<T> => {
    const run = turn.then(fn, fn)
    turn = run.catch(() => {})
    return run
  }
  const rebuild = () => {
    built = build(db, reader, unit, listeners)
    Object.assign(store, built.reads)
  }
  const store: Store = {
    ...built.reads,
    write: (fn) => {
      const run = group.run((u) => {
        current = u
        return fn(built.tx)
      })
      if (!checkpointer) run.then(startCheckpointerOnChange, startCheckpointerOnChange)
      return run
    },
    onEvent: (listener) => void listeners.push(listener),
    schemaVersion: SCHEMA_VERSION,
    backend: 'sqlite',
    isLeader: () => true,
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
        // The swap needs the only connection: finish and commit the running units, hold
        // back new ones, close the reader and stop the checkpointer first.
        await group.pause()
        checkpointer?.terminate()
        reader.close()
        try {
          db = swapIn(db, dbPath, file)
        } catch (err) {
          if (!(err instanceof SwapFailed)) throw err
          db = err.db
          throw err.reason
        } finally {
          reader = openReader(dataDir, DB_FILE)
          rebuild()
          group.resume(db)
          // The replaced file (now the pre-restore copy) has no connection left; a failed swap kept the live one.
          dbFd = databaseFd(dbPath, dbFd)
          checkpointer = startCheckpointer(dbPath, dbFd, turnoverFrames, turnover)
        }
      }),
    close: () => {
      checkpointer?.terminate()
      group.commitNow()
      reader.close()
      db.close()
      closeSync(dbFd)
      lock.release()
    },
  }
  return store
}

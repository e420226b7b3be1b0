// The Store on the embedded SQLite file: one writer connection running units of work
// in group commit (store/sqlite/db.ts), one reader connection, WAL checkpoints on a worker.
import { log } from '../../obs/log'
import { workerUrl } from '../../lib/workers'
import type { FromCheckpointer, ToCheckpointer } from './checkpointer'
import type { Database } from 'bun:sqlite'
import { join } from 'node:path'
import { closeSync, fstatSync, openSync, statSync } from 'node:fs'
import { GroupCommit, SCHEMA_VERSION, openDatabase, openReader } from './db'
import type { UnitHooks } from '../runner'
import { checkBackup, removeStaleTemps, snapshot, swapIn, SwapFailed, tempPath } from '../backup'
import { lockDataDir } from '../datadir-lock'
import type { Event } from '../events'
import type { Store } from '../types'
import { tables } from '../tables'
import { VersionedDocs } from './versioned'
import { eventsStore, eventsWrites } from './events'
import { committedReads, sqliteRunner, SQLITE } from './runner'

const DB_FILE = 'muster.db'

/**
 * WAL checkpoints on a worker thread (store/sqlite/checkpointer.ts): every CHECKPOINT_BUSY_MS
 * while writes come in, every CHECKPOINT_IDLE_MS otherwise; and a turnover (writes held
 * back for one last checkpoint, then the WAL starts over) once it holds TURNOVER_FRAMES
 * pages, ~200 MB: the bound the writer's autocheckpoint used to keep, inline in a COMMIT
 * (store/sqlite/db.ts keeps that only as the fallback, further out). Small, frequent
 * checkpoints, and a sync of the database file every few MB they copy, leave the turnover's
 * checkpoint little to copy and little to sync: short holds.
 */
const CHECKPOINT_BUSY_MS = 25
const CHECKPOINT_IDLE_MS = 200
const TURNOVER_FRAMES = 50_000
/** A turnover that has not finished by then lets the writes go on anyway (the WAL then starts over later). */
const TURNOVER_WAIT_MS = 2_000

function startCheckpointer(file: string, fileFd: number, turnoverFrames: number, turnover: (worker: Worker) => void): Worker {
  const worker = new Worker(workerUrl('store/sqlite/checkpointer.ts'))
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
function build(writer: Database, reader: Database, unit: UnitHooks, listeners: Listener[], cacheBytes?: number) {
  const events = { reads: eventsStore(reader), writes: eventsWrites(writer) }
  const docs = new VersionedDocs(reader, writer, unit, cacheBytes)
  return tables({
    reads: committedReads(writer, reader),
    writes: sqliteRunner(writer),
    dialect: SQLITE,
    docs,
    events,
    unit,
    soleWriter: true,
    deliver: (event) => {
      for (const listener of listeners) listener(event)
    },
  })
}

/** `turnoverFrames`: the WAL length that starts a turnover (TURNOVER_FRAMES; tests make it short); `cacheBytes`: the document cache's bound. */
export function openStore(dataDir: string, { turnoverFrames = TURNOVER_FRAMES, cacheBytes = undefined as number | undefined } = {}): Store {
  const lock = lockDataDir(dataDir)
  let db = openDatabase(dataDir, DB_FILE)
  let reader = openReader(dataDir, DB_FILE)
  const dbPath = join(dataDir, DB_FILE)
  let dbFd = databaseFd(dbPath, null)
  removeStaleTemps(dataDir)
  // Started once a write has changed a row: until then the WAL holds nothing the checkpointer could
  // move (the TTL expiry pass is a write every 250 ms that seldom changes one), and a server that has
  // only started or only read is spared the thread (its memory, and CPU on the way to /health).
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
  let built = build(db, reader, unit, listeners, cacheBytes)
  // Snapshots and restores take turns: a snapshot's reader must never straddle a swap.
  let turn: Promise<unknown> = Promise.resolve()
  const exclusive = <T>(fn: () => Promise<T>): Promise<T> => {
    const run = turn.then(fn, fn)
    turn = run.catch(() => {})
    return run
  }
  const rebuild = () => {
    built = build(db, reader, unit, listeners, cacheBytes)
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
    notReady: async () => {
      const { user_version } = reader.query('PRAGMA user_version').get() as { user_version: number }
      return user_version === SCHEMA_VERSION ? null : `database schema is at version ${user_version}, this build needs ${SCHEMA_VERSION}`
    },
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

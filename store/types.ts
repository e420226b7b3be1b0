// The store as services see it: every table group behind one object of Promise-returning
// methods, the same on both backends (store/sqlite/index.ts, store/pg/index.ts), so
// routes never see SQL. Routes must reach sub-stores through the Store object on every
// call (never keep a sub-store in a variable): restore swaps the database and rebuilds them in place.
import type { Event } from './events'
import type { Reads, Writes } from './tables'

/**
 * One unit of work: every write method of every table group, all in one
 * transaction. `emit` appends an event that commits with the unit and reaches
 * subscribers only after that COMMIT (never for a unit that rolled back).
 */
export interface Tx extends Writes {
  emit(topic: string, data: unknown, source: string, echo?: boolean): Promise<Event>
}

/** Reads see committed data only. Every write goes through `write`. */
export interface Store extends Reads {
  /**
   * Runs `fn` as one unit of work in the group commit and resolves with its result
   * once it is durable. A throw (or rejection) rolls the whole unit back. Units run
   * one at a time: keep slow work (network, workers) outside `fn`.
   */
  write<T>(fn: (tx: Tx) => Promise<T>): Promise<T>
  /** Calls `listener` with every event, in id order, right after the COMMIT that made it durable. */
  onEvent(listener: (event: Event) => void): void
  readonly schemaVersion: number
  /** What keeps this store from serving (GET /readyz): the database not answering, migrations not done, the event feed not listening; null when ready. */
  notReady(): Promise<string | null>
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

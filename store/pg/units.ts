// Units of work on PostgreSQL, with group commit as on SQLite: the units waiting when a
// transaction starts share it, each in a savepoint of its own (one that throws rolls
// back alone, its events and audit entry with it), so a burst pays for one COMMIT.
// Every transaction first takes an advisory lock, so transactions run one at a time
// across every replica: a unit's reads and checks see every earlier unit's commit (as
// SQLite's single writer gives), and events get ids in commit order with no gap. A
// unit's promise resolves after COMMIT; its after-commit hooks run then, in order.
//
// Round trips, not PostgreSQL's work, are what a unit waits on, so statements are
// pipelined on the transaction's connection: BEGIN, the lock and the event counter go
// in one; writes whose answers nobody reads (`send`: a new version row, an event, an
// audit entry) are queued, go out as one statement (store/pg/send.ts) before the unit's
// next statement or at its end without waiting; the next unit of the batch starts
// without waiting either, and the answers come in with the COMMIT's. Event ids are
// counted here from the counter read under the lock, and the counter is written once,
// with one NOTIFY for the whole transaction, just before COMMIT.
import type { ReservedSQL, SQL } from 'bun'
import type { UnitHooks } from '../runner'
import { int } from '../runner'
import { log } from '../../obs/log'
import { EVENTS_CHANNEL, exec, unavailableOr, WRITE_LOCK, type Handle } from './db'
import { combined, runs, type Sendable } from './send'

/** At most this many units share a transaction (keeps one failing COMMIT's reach bounded). */
const MAX_BATCH = 64

// One message (simple protocol, each statement its own snapshot): the counter is read under the lock.
const START = `BEGIN; SELECT pg_advisory_xact_lock(${WRITE_LOCK}); SELECT value FROM event_counter WHERE id = 1`
// The first unit's savepoint in a batch; each unit's is released and the next one's taken in one message (the last one's goes unused).
const SAVEPOINT = 'SAVEPOINT unit'
const NEXT = 'RELEASE SAVEPOINT unit; SAVEPOINT unit'
// A unit that threw undoes its writes; the savepoint stays, for the next unit.
const ROLLBACK_UNIT = 'ROLLBACK TO SAVEPOINT unit'
// Other replicas learn of a transaction's events from one NOTIFY (sent at COMMIT): it names the
// newest, this replica, and, when they fit, carries the events (store/pg/feed.ts).
const ENDING = `WITH c AS (UPDATE event_counter SET value = $1 WHERE id = 1) SELECT pg_notify('${EVENTS_CHANNEL}', $2)`

/** PostgreSQL refuses a NOTIFY payload of 8,000 bytes or more. */
const MAX_NOTIFY_BYTES = 7_999

type Pending = {
  fn: (unit: UnitHooks) => unknown
  resolve: (value: unknown) => void
  reject: (err: unknown) => void
  hooks: (() => void)[]
  /** Its batch failed pipelined (a statement in it failed): it runs again with each unit's answers awaited. */
  careful?: boolean
}

/** How a unit of a batch ended: its value, or its error. */
type Result = { ok: boolean; value: unknown }

/** Waits for every promise; the first rejection's reason, or undefined when all were fulfilled. */
async function firstError(ps: Promise<unknown>[]): Promise<unknown> {
  for (const r of await Promise.allSettled(ps)) if (r.status === 'rejected') return r.reason ?? new Error('statement failed')
  return undefined
}

export class PgUnits {
  private queue: Pending[] = []
  private draining = false
  private held: Promise<void> | null = null
  /** The newest transaction, until its units have settled (every one before it has then settled too). */
  private settled: Promise<void> = Promise.resolve()
  private release: (() => void) | null = null
  private current: Handle | null = null
  /** Statements of the running unit sent without waiting for their answers. */
  private sent: Promise<unknown>[] = []
  /** Writes the running unit queued (send), and their arguments one after the other. */
  private queued: Sendable[] = []
  private queuedArgs: unknown[] = []
  /** The last event id handed out in the running transaction. */
  private lastEvent = 0
  /** The running transaction's events, for its NOTIFY. */
  private rows: { id: number; row: string }[] = []
  /** A statement a unit waited for failed in the running transaction (its unit may have caught the error). */
  private statementFailed = false

  /** `replica`: this process's tag in its NOTIFY payloads, so its own event feed skips them. */
  constructor(
    private sql: SQL,
    private replica: string,
  ) {}

  /** The running unit's transaction; store writes run their statements on it. */
  get tx(): Handle {
    if (!this.current) throw new Error('store write outside a unit of work')
    return this.current
  }

  /**
   * Queues a write in the running unit without waiting for it: it goes out, combined with
   * the others queued, before the unit's next statement or at its end; its failure fails the unit.
   */
  send(s: Sendable, args: unknown[]): void {
    void this.tx
    this.queued.push(s)
    for (const a of args) this.queuedArgs.push(a)
  }

  /** Sends what the running unit queued (on `conn`, its transaction). */
  private flush(conn: Handle): void {
    if (!this.queued.length) return
    const items = this.queued
    const args = this.queuedArgs
    this.queued = []
    this.queuedArgs = []
    let at = 0
    for (const run of runs(items)) {
      const n = run.reduce((sum, s) => sum + s.params, 0)
      const one = combined(run)
      if (one !== null) this.sendText(conn, one, args.slice(at, at + n))
      else for (let i = 0, a = at; i < run.length; a += run[i++].params) this.sendText(conn, combined([run[i]])!, args.slice(a, a + run[i].params))
      at += n
    }
  }

  private sendText(conn: Handle, text: string, args: unknown[]): void {
    const p = exec(conn, text, args)
    p.catch(() => {})
    this.sent.push(p)
  }

  /** The id of the running unit's next event (gapless: a unit that fails gives its ids back). */
  nextEventId(): number {
    void this.tx
    return ++this.lastEvent
  }

  /** The running unit's event `id`, as a JSON row for the NOTIFY (feed.ts's `fromNotify`). */
  announce(id: number, row: string): void {
    this.rows.push({ id, row })
  }

  /** A unit rolled back: the ids after `last` are free again, and its events unannounced. */
  private giveBack(last: number): void {
    this.lastEvent = last
    while (this.rows.length && this.rows[this.rows.length - 1].id > last) this.rows.pop()
  }

  run<T>(fn: (unit: UnitHooks) => Promise<T> | T): Promise<T> {
    return new Promise<T>((resolve, reject) => {
      this.queue.push({ fn, resolve: resolve as (v: unknown) => void, reject, hooks: [] })
      if (!this.draining) void this.drain()
    })
  }

  /**
   * Runs transactions while units wait. The next transaction starts once this one has sent
   * its COMMIT: its BEGIN and lock wait in PostgreSQL meanwhile, and its counter is read the
   * moment the lock is free, so the units that came in during the COMMIT start right after
   * it without a round trip of their own. `draining` is cleared in the same synchronous
   * step that finds the queue empty (one async function, no await in between), so a unit
   * queued by a caller resumed right after (a microtask) starts the next drain.
   */
  private async drain(): Promise<void> {
    this.draining = true
    try {
      while (this.queue.length) {
        if (this.held) await this.held
        let committing!: () => void
        const sent = new Promise<void>((resolve) => (committing = resolve))
        this.settled = this.transaction(this.settled, committing)
          .catch((err) => log.error({ err }, 'unit of work transaction failed'))
          .finally(committing)
        await sent
      }
    } finally {
      this.draining = false
    }
  }

  /**
   * One transaction: it starts, waits for the one before it to settle, then takes the
   * waiting units as its batch; each settles here, after COMMIT or with its error.
   * `committing` is called once its COMMIT is sent (or it ended without one).
   */
  private async transaction(previous: Promise<void>, committing: () => void): Promise<void> {
    let conn: ReservedSQL | null = null
    let counter = 0
    let failed: { err: unknown } | null = null
    try {
      conn = await this.sql.reserve()
      counter = await this.start(conn)
    } catch (err) {
      failed = { err }
    }
    // Units run one at a time, and hooks in commit order: the one before has run its last.
    await previous
    const batch = this.queue.splice(0, MAX_BATCH)
    if (failed !== null || !batch.length) {
      // A ROLLBACK that fails leaves the connection in a transaction: released so, it is closed, never pooled.
      if (conn) await conn.unsafe('ROLLBACK').catch(() => {}), void conn.release()
      // The transaction could not start: nothing of the batch is durable.
      for (const p of batch) p.reject(unavailableOr(failed?.err))
      return
    }
    this.lastEvent = counter
    this.rows = []
    this.statementFailed = false
    let results: Result[] | null
    try {
      if (batch.some((p) => p.careful)) results = await this.oneByOne(conn!, batch, committing)
      else if (batch.length === 1) results = await this.alone(conn!, batch[0], committing)
      else results = await this.pipelined(conn!, batch, committing)
    } catch (err) {
      // The transaction could not commit (or a rollback failed): nothing of the batch is durable.
      for (const p of batch) p.reject(unavailableOr(err))
      return
    } finally {
      this.sent = []
      void conn!.release()
    }
    if (!results) {
      // Rolled back: the batch runs again, one unit at a time, before the units queued after it.
      for (const p of batch) p.careful = true
      this.queue.unshift(...batch)
      if (!this.draining) void this.drain()
      return
    }
    batch.forEach((p, i) => {
      const r = results[i]
      if (!r.ok) return p.reject(r.value)
      for (const hook of p.hooks) {
        try {
          hook()
        } catch (err) {
          log.error({ err }, 'after-commit hook failed')
        }
      }
      p.resolve(r.value)
    })
  }

  /** BEGIN, the lock and the counter: the counter's value. */
  private async start(conn: ReservedSQL): Promise<number> {
    const [, , counter] = (await conn.unsafe(START)) as unknown as { value: unknown }[][]
    return int(counter[0].value)
  }

  /**
   * A unit alone needs no savepoint: if it throws, the transaction rolls back with it, and
   * its unanswered statements go with the COMMIT.
   */
  private async alone(conn: ReservedSQL, p: Pending, committing: () => void): Promise<Result[]> {
    const first = this.lastEvent
    let value: unknown
    try {
      value = await this.unit(conn, p)
    } catch (err) {
      // A write sent earlier that failed is the cause; what followed it failed only because it had.
      const cause = (await firstError(this.takeSent())) ?? err
      // A ROLLBACK that fails leaves the connection in a transaction: released so, it is closed, never pooled.
      await conn.unsafe('ROLLBACK').catch(() => {})
      return [{ ok: false, value: cause }]
    }
    await this.commit(conn, [...this.takeSent(), ...this.ending(conn, first)], committing)
    return [{ ok: true, value }]
  }

  /**
   * The units of a batch back to back, none waiting for the answers to the one before
   * (its writes, the release of its savepoint), and the COMMIT sent with the last one's:
   * a batch costs the round trips of its reads and two more, whatever its size. A unit
   * that throws with every statement so far answered fine rolls back to its savepoint
   * alone. A failed statement fails every later one in the transaction, so its unit is
   * not known: then the transaction rolls back and null says to run the batch again one
   * unit at a time (oneByOne). The units' code runs again there, as in a new transaction.
   */
  private async pipelined(conn: ReservedSQL, batch: Pending[], committing: () => void): Promise<Result[] | null> {
    const first = this.lastEvent
    this.sent.push(conn.unsafe(SAVEPOINT).execute())
    const results: Result[] = []
    for (const p of batch) {
      const before = this.lastEvent
      try {
        const value = await this.unit(conn, p)
        this.sent.push(conn.unsafe(NEXT).execute())
        results.push({ ok: true, value })
      } catch (err) {
        if ((await firstError(this.takeSent())) !== undefined || this.statementFailed) {
          await conn.unsafe('ROLLBACK')
          return null
        }
        this.sent.push(conn.unsafe(ROLLBACK_UNIT).execute())
        this.giveBack(before)
        results.push({ ok: false, value: err })
      }
    }
    // Nothing rolled back to a savepoint without every statement before it answered, so a
    // failure anywhere makes PostgreSQL answer this COMMIT with ROLLBACK.
    return (await this.commit(conn, [...this.takeSent(), ...this.ending(conn, first)], committing, true)) ? results : null
  }

  /** The units of a batch one at a time, each one's statements answered before the next starts. */
  private async oneByOne(conn: ReservedSQL, batch: Pending[], committing: () => void): Promise<Result[]> {
    const first = this.lastEvent
    this.sent.push(conn.unsafe(SAVEPOINT).execute())
    const results: Result[] = []
    for (const p of batch) {
      const before = this.lastEvent
      try {
        const value = await this.unit(conn, p)
        this.sent.push(conn.unsafe(NEXT).execute())
        const err = await firstError(this.takeSent())
        if (err) throw err
        results.push({ ok: true, value })
      } catch (err) {
        // Every statement sent has answered (in order) before the rollback goes out.
        const cause = (await firstError(this.takeSent())) ?? err
        // The savepoint stays, for the next unit.
        await conn.unsafe(ROLLBACK_UNIT)
        this.giveBack(before)
        results.push({ ok: false, value: cause })
      }
    }
    await this.commit(conn, [...this.takeSent(), ...this.ending(conn, first)], committing)
    return results
  }

  /**
   * COMMIT after `before` (sent already): throws when any of them failed, or when PostgreSQL
   * answered the COMMIT with ROLLBACK (a statement failed whose error someone caught); with
   * `rolledBack`, that ROLLBACK answer is false instead (an unanswered COMMIT still throws).
   */
  private async commit(conn: ReservedSQL, before: Promise<unknown>[], committing: () => void, rolledBack = false): Promise<boolean> {
    const commit = conn.unsafe('COMMIT').execute()
    committing()
    const err = await firstError([...before, commit])
    const answer = await commit.then((c) => c.command, () => null)
    if (rolledBack && answer === 'ROLLBACK') return false
    if (err) throw err
    if (answer !== 'COMMIT') throw new Error('the transaction was rolled back: a statement in it failed')
    return true
  }

  /** The counter and the NOTIFY when the transaction wrote events (sent just before COMMIT). */
  private ending(conn: ReservedSQL, first: number): Promise<unknown>[] {
    if (this.lastEvent === first) return []
    // The events themselves when they fit: another replica then delivers them without reading them back.
    const head = `${this.lastEvent}:${this.replica}`
    const full = `${head}:[${this.rows.map((r) => r.row).join(',')}]`
    const payload = full.length * 3 <= MAX_NOTIFY_BYTES || Buffer.byteLength(full) <= MAX_NOTIFY_BYTES ? full : head
    return [conn.unsafe(ENDING, [this.lastEvent, payload]).execute()]
  }


  private takeSent(): Promise<unknown>[] {
    const sent = this.sent
    this.sent = []
    return sent
  }

  /** Runs `p` on `conn`: what it queued goes out before each of its statements and when it returns. */
  private async unit(conn: ReservedSQL, p: Pending): Promise<unknown> {
    this.current = {
      unsafe: ((text: string, args?: unknown[]) => {
        this.flush(conn)
        const query = conn.unsafe(text, args)
        query.catch(() => void (this.statementFailed = true))
        return query
      }) as Handle['unsafe'],
    }
    // A batch run again one unit at a time (pipelined) runs the unit's code again: its hooks are the new run's.
    p.hooks.length = 0
    try {
      const value = await p.fn({ afterCommit: (hook) => void p.hooks.push(hook) })
      this.flush(conn)
      return value
    } finally {
      this.current = null
      this.queued = []
      this.queuedArgs = []
    }
  }

  /** Lets the running transaction finish, and holds later units back until resume() (restore). */
  async pause(): Promise<void> {
    this.held = new Promise<void>((resolve) => (this.release = resolve))
    await this.settled
  }

  resume(): void {
    this.release?.()
    this.held = this.release = null
  }
}

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
// next statement or at its end without waiting, and are answered together with the
// unit's RELEASE (or, for a unit alone in its transaction, with the COMMIT). Event ids are
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
// A unit's savepoint is released and the next one's taken in one message (the last one's goes unused).
const NEXT = 'RELEASE SAVEPOINT unit; SAVEPOINT unit'
// Other replicas read every event after their last one when told of any newer one: one NOTIFY
// (sent at COMMIT) names the newest, and this replica (store/pg/feed.ts).
const ENDING = `WITH c AS (UPDATE event_counter SET value = $1 WHERE id = 1) SELECT pg_notify('${EVENTS_CHANNEL}', $2)`

type Pending = {
  fn: (unit: UnitHooks) => unknown
  resolve: (value: unknown) => void
  reject: (err: unknown) => void
  hooks: (() => void)[]
}

/** Waits for every promise; the first rejection's reason, or undefined when all were fulfilled. */
async function firstError(ps: Promise<unknown>[]): Promise<unknown> {
  for (const r of await Promise.allSettled(ps)) if (r.status === 'rejected') return r.reason ?? new Error('statement failed')
  return undefined
}

export class PgUnits {
  private queue: Pending[] = []
  private draining = false
  private held: Promise<void> | null = null
  private inTx: Promise<unknown> | null = null
  private release: (() => void) | null = null
  private current: Handle | null = null
  /** Statements of the running unit sent without waiting for their answers. */
  private sent: Promise<unknown>[] = []
  /** Writes the running unit queued (send), and their arguments one after the other. */
  private queued: Sendable[] = []
  private queuedArgs: unknown[] = []
  /** The last event id handed out in the running transaction. */
  private lastEvent = 0

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

  run<T>(fn: (unit: UnitHooks) => Promise<T> | T): Promise<T> {
    return new Promise<T>((resolve, reject) => {
      this.queue.push({ fn, resolve: resolve as (v: unknown) => void, reject, hooks: [] })
      if (!this.draining) void this.drain()
    })
  }

  /**
   * Runs transactions while units wait. `draining` is cleared in the same synchronous
   * step that finds the queue empty (one async function, no await in between), so a
   * unit queued by a caller resumed right after (a microtask) starts the next drain.
   */
  private async drain(): Promise<void> {
    this.draining = true
    try {
      while (this.queue.length) {
        if (this.held) await this.held
        const batch = this.queue.splice(0, MAX_BATCH)
        try {
          await (this.inTx = this.transaction(batch))
        } finally {
          this.inTx = null
        }
      }
    } finally {
      this.draining = false
    }
  }

  /** One transaction for `batch`: each unit settles here, after COMMIT or with its error. */
  private async transaction(batch: Pending[]): Promise<void> {
    let conn: ReservedSQL
    try {
      conn = await this.sql.reserve()
    } catch (err) {
      for (const p of batch) p.reject(unavailableOr(err))
      return
    }
    const results: { ok: boolean; value: unknown }[] = []
    try {
      const [, , counter] = (await conn.unsafe(batch.length === 1 ? START : `${START}; SAVEPOINT unit`)) as unknown as { value: unknown }[][]
      const first = (this.lastEvent = int(counter[0].value))
      // Alone, a unit needs no savepoint: if it throws, the transaction rolls back with it,
      // and its unanswered statements go with the COMMIT.
      if (batch.length === 1) {
        try {
          results.push({ ok: true, value: await this.unit(conn, batch[0]) })
        } catch (err) {
          // A write sent earlier that failed is the cause; what followed it failed only because it had.
          const cause = (await firstError(this.takeSent())) ?? err
          // A ROLLBACK that fails leaves the connection in a transaction: released so, it is closed, never pooled.
          await conn.unsafe('ROLLBACK').catch(() => {})
          return batch[0].reject(cause)
        }
        await this.commit(conn, [...this.takeSent(), ...this.ending(conn, first)])
      } else {
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
            await conn.unsafe('ROLLBACK TO SAVEPOINT unit')
            this.lastEvent = before
            results.push({ ok: false, value: cause })
          }
        }
        await this.commit(conn, this.ending(conn, first))
      }
    } catch (err) {
      // The transaction could not start or commit (or a rollback failed): nothing of the batch is durable.
      for (const p of batch) p.reject(unavailableOr(err))
      return
    } finally {
      this.sent = []
      void conn.release()
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

  /**
   * COMMIT after `before` (sent already): throws when any of them failed, or when PostgreSQL
   * answered the COMMIT with ROLLBACK (a statement failed whose error someone caught).
   */
  private async commit(conn: ReservedSQL, before: Promise<unknown>[]): Promise<void> {
    const commit = conn.unsafe('COMMIT').execute()
    const err = await firstError([...before, commit])
    if (err) throw err
    if ((await commit).command !== 'COMMIT') throw new Error('the transaction was rolled back: a statement in it failed')
  }

  /** The counter and the NOTIFY when the transaction wrote events (sent just before COMMIT). */
  private ending(conn: ReservedSQL, first: number): Promise<unknown>[] {
    if (this.lastEvent === first) return []
    return [conn.unsafe(ENDING, [this.lastEvent, `${this.lastEvent}:${this.replica}`]).execute()]
  }

  private takeSent(): Promise<unknown>[] {
    const sent = this.sent
    this.sent = []
    return sent
  }

  /** Runs `p` on `conn`: what it queued goes out before each of its statements and when it returns. */
  private async unit(conn: ReservedSQL, p: Pending): Promise<unknown> {
    this.current = { unsafe: ((text: string, args?: unknown[]) => (this.flush(conn), conn.unsafe(text, args))) as Handle['unsafe'] }
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
    await this.inTx?.catch(() => {})
  }

  resume(): void {
    this.release?.()
    this.held = this.release = null
  }
}

// Every replica's event stream: the events the whole cluster commits, delivered to
// this replica's listeners (WebSocket subscribers, watchers, waiters, webhooks) in
// id order, each once. Ids have no gaps (store/pg/events.ts), so "the next event" is
// always last + 1: an event committed here is delivered at once when it is next;
// otherwise, and whenever a NOTIFY says another replica committed, the missing run
// is read from the events table. A LISTEN connection that drops and comes back
// catches up the same way, so nothing committed meanwhile is lost.
import type { SQL } from 'bun'
import { log } from '../../obs/log'
import type { Event } from '../events'
import { EVENTS_CHANNEL, q } from './db'
import { int } from '../runner'
import { toEvent } from './events'

const PAGE = 500

const lastId = q<{ id: string | null }>('SELECT MAX(id) AS id FROM events')
const after = q('SELECT id, topic, data, source, created_at, echo FROM events WHERE id > ? ORDER BY id LIMIT ?')

export class EventFeed {
  readonly listeners: ((event: Event) => void)[] = []
  private last = 0
  private catching: Promise<void> | null = null
  private again = false
  private unlisten: (() => Promise<void>) | null = null
  /** Between the LISTEN's acknowledgement and stop (Bun reconnects a dropped LISTEN connection without telling). */
  listening = false

  /** `replica`: this process's tag in the NOTIFY payloads its units send (store/pg/units.ts). */
  constructor(
    private sql: SQL,
    private replica: string,
  ) {}

  async start(): Promise<void> {
    await this.reset()
    let first = true
    const sub = await this.sql.listen(
      EVENTS_CHANNEL,
      (payload) => {
        // `<newest id>:<replica>[:<events>]`: this replica's own events come through committed(), at once.
        const a = payload.indexOf(':')
        const b = payload.indexOf(':', a + 1)
        if (payload.slice(a + 1, b < 0 ? undefined : b) === this.replica || int(payload.slice(0, a)) <= this.last) return
        if (b < 0 || !this.fromNotify(payload.slice(b + 1))) this.catchUp()
      },
      () => {
        // Called again after every reconnect: what was committed while deaf is read now.
        if (!first) this.catchUp()
        first = false
        this.listening = true
      },
    )
    this.unlisten = () => sub.unlisten()
  }

  /** Starts after the newest stored event (at boot, and after a restore replaced the table). */
  async reset(): Promise<void> {
    this.last = int((await lastId.get(this.sql))?.id ?? 0)
  }

  /** An event this replica committed (called after its COMMIT). */
  committed(event: Event): void {
    if (event.id <= this.last) return
    if (event.id === this.last + 1 && !this.catching) return this.deliver(event)
    this.catchUp()
  }

  /**
   * Delivers the events a NOTIFY carried (store/pg/units.ts), rows as the events table holds
   * them; false when they do not follow on from the last one delivered (then read them).
   */
  private fromNotify(rows: string): boolean {
    if (this.catching) return false
    let events: Event[]
    try {
      events = (JSON.parse(rows) as unknown[][]).map(([id, topic, data, source, created_at, echo]) =>
        toEvent({ id, topic, data, source, created_at, echo }, true),
      )
    } catch (err) {
      log.error({ err }, 'an event notification could not be read; reading the events instead')
      return false
    }
    const fresh = events.filter((e) => e.id > this.last)
    if (!fresh.length || fresh[0].id !== this.last + 1 || fresh.some((e, i) => e.id !== fresh[0].id + i)) return false
    for (const event of fresh) this.deliver(event)
    return true
  }

  async stop(): Promise<void> {
    this.listening = false
    await this.unlisten?.().catch(() => {})
    await this.catching
  }

  private deliver(event: Event): void {
    this.last = event.id
    for (const listener of this.listeners) {
      try {
        listener(event)
      } catch (err) {
        log.error({ err }, 'event listener failed')
      }
    }
  }

  /** Reads and delivers every stored event after the last delivered one; one reader at a time. */
  private catchUp(): void {
    if (this.catching) return void (this.again = true)
    this.catching = (async () => {
      do {
        this.again = false
        for (;;) {
          let rows: Record<string, unknown>[]
          try {
            rows = await after.all(this.sql, this.last, PAGE)
          } catch (err) {
            log.error({ err }, 'reading new events failed; retrying')
            await Bun.sleep(200)
            continue
          }
          for (const row of rows) {
            const event = toEvent(row)
            if (event.id > this.last) this.deliver(event)
          }
          if (rows.length < PAGE) break
        }
      } while (this.again)
    })().finally(() => (this.catching = null))
  }
}

// The event bus: events are written by services inside the unit of the change they
// report (Tx.emit); once that unit's COMMIT is done, the store hands each event
// here, in id order, and the bus fans it out to the live subscriptions (WebSocket
// clients, each with its own bounded buffer) and to every listener (the webhook
// dispatcher, long-poll waiters). Nothing here ever waits on a client, and nothing
// is fanned out that did not commit.
//
// Fan-out is the server's main cost per event: one write to every connection (a
// system call each). So each event is serialized once for all, each pattern is
// matched once for all its subscribers, and the events of one COMMIT go to a
// connection in a single write.
import { log } from '../obs/log'
import type { Event, Store } from '../store'
import { topicMatcher } from '../lib/glob'

export type Listener = (event: Event) => void

/** Events held per subscriber while its connection is backed up. */
export const SUBSCRIBER_BUFFER = 64
const REPLAY_PAGE = 256

/**
 * Where a subscription's frames go, with the return values of Bun's
 * ServerWebSocket.send: -1 taken but the connection is backed up (wait for
 * drain), 0 dropped, > 0 sent.
 */
export interface Sink {
  send(frame: string): number
  /**
   * Runs `sends` with the connection's writes joined into one (Bun's cork); true when
   * the connection is backed up afterwards. Without it, frames go one write each.
   */
  cork?(sends: () => void): boolean
  /** Ends the connection (server shutdown). */
  end(code: number, reason: string): void
}

export interface SubscriptionInfo {
  id: number
  pattern: string
  connected_at: string
  /** Frames handed to the connection. */
  sent: number
  /** Events lost because the buffer was full (or the connection refused them). */
  dropped: number
  /** Events waiting in the buffer for the connection to drain. */
  buffered: number
  /** True while missed events (after_id) are still being replayed. */
  replaying: boolean
}

/**
 * One subscriber. Live events go straight to the connection; while it is backed up
 * they wait in a buffer of SUBSCRIBER_BUFFER, and beyond that are dropped and
 * counted. With after_id it first replays stored events page by page (pacing on
 * drain), then goes live; ids at or below the last one handed over are skipped,
 * so the seam has neither gap nor duplicate. The bus offers it only events that
 * match its pattern.
 */
export class Subscription {
  readonly connected_at = new Date().toISOString()
  sent = 0
  dropped = 0
  private queue: string[] = []
  private blocked = false
  private closed = false
  private lastId: number
  private replaying: boolean
  /** Live events that arrived during replay; cleared (and `missed` set) on overflow, since they are in the store. */
  private pending: Event[] = []
  private missed = false
  private onDrain: (() => void) | null = null

  constructor(
    readonly id: number,
    readonly pattern: string,
    private sink: Sink,
    private store: Store,
    afterId: number | undefined,
    private release: (s: Subscription) => void,
  ) {
    this.lastId = afterId ?? 0
    this.replaying = afterId !== undefined
    if (this.replaying) void this.replay()
  }

  /** Live events of one commit, in id order, with their frames: a single write where the sink can cork. */
  offerAll(events: readonly Event[], frames: readonly string[]): void {
    // Corked sends are all taken; backpressure shows only once the joined write is made.
    if (events.length > 1 && this.sink.cork && !this.blocked && !this.replaying) {
      if (this.sink.cork(() => this.offerEach(events, frames)) && !this.closed) this.blocked = true
    } else this.offerEach(events, frames)
  }

  private offerEach(events: readonly Event[], frames: readonly string[]): void {
    for (let i = 0; i < events.length; i++) this.offer(events[i], frames[i])
  }

  private offer(event: Event, frame: string): void {
    if (this.closed || event.id <= this.lastId) return
    if (this.replaying) {
      if (this.pending.length < SUBSCRIBER_BUFFER) this.pending.push(event)
      else (this.pending = []), (this.missed = true)
      return
    }
    this.lastId = event.id
    if (!this.blocked) this.transmit(frame)
    else if (this.queue.length < SUBSCRIBER_BUFFER) this.queue.push(frame)
    else this.dropped++
  }

  /** The connection has room again. */
  drain(): void {
    this.blocked = false
    while (!this.blocked && this.queue.length) this.transmit(this.queue.shift()!)
    if (!this.blocked && this.onDrain) {
      const resume = this.onDrain
      this.onDrain = null
      resume()
    }
  }

  close(): void {
    if (this.closed) return
    this.closed = true
    this.queue = []
    this.pending = []
    this.onDrain?.()
    this.release(this)
  }

  /** Closes the connection too (server shutdown). */
  end(code: number, reason: string): void {
    this.close()
    try {
      this.sink.end(code, reason)
    } catch {}
  }

  info(): SubscriptionInfo {
    const { id, pattern, connected_at, sent, dropped, replaying } = this
    return { id, pattern, connected_at, sent, dropped, buffered: this.queue.length, replaying }
  }

  private transmit(frame: string): void {
    const status = this.sink.send(frame)
    if (status === 0) return void this.dropped++
    this.sent++
    if (status === -1) this.blocked = true
  }

  private async replay(): Promise<void> {
    try {
      for (;;) {
        this.missed = false
        const page = await this.store.events.query({ topic: this.pattern, afterId: this.lastId, limit: REPLAY_PAGE })
        for (const event of page) {
          if (this.blocked) await new Promise<void>((resume) => (this.onDrain = resume))
          if (this.closed) return
          this.lastId = event.id
          this.transmit(JSON.stringify(event))
        }
        // A short page read everything stored at that moment; anything newer is in `pending`.
        if (page.length < REPLAY_PAGE && !this.missed) break
      }
    } catch (err) {
      log.error({ err, subscription: this.id }, 'subscription replay failed')
    }
    this.replaying = false
    const pending = this.pending
    this.pending = []
    this.offerAll(pending, pending.map((event) => JSON.stringify(event)))
  }
}

/** The subscriptions on one pattern: its matcher runs once per event for all of them. */
interface PatternGroup {
  matches: (topic: string) => boolean
  subscriptions: Set<Subscription>
}

export class Bus {
  private listeners = new Set<Listener>()
  private subscriptions = new Set<Subscription>()
  private byPattern = new Map<string, PatternGroup>()
  private nextSubscriptionId = 1
  /** Committed events not yet fanned out. */
  private committed: Event[] = []

  constructor(private store: Store) {
    // A COMMIT hands over its events one by one from its after-commit hooks; the
    // microtask runs once those are all done, before anything awaiting the commit
    // resumes, so the whole batch goes out together and nothing is delayed by it.
    store.onEvent((event) => {
      if (this.committed.push(event) === 1) queueMicrotask(() => this.fanOut())
    })
  }

  /** Publishes an event on its own (REST publish, jobs): it commits, then fans out. */
  publish(topic: string, data: unknown, source = ''): Promise<Event> {
    return this.store.write(async (tx) => await tx.emit(topic, data, source))
  }

  /** Hands committed events to subscribers and listeners, in id order. */
  private fanOut(): void {
    const events = this.committed
    this.committed = []
    if (this.subscriptions.size) {
      const frames = events.map((event) => JSON.stringify(event))
      for (const group of this.byPattern.values()) {
        const matched: Event[] = []
        const matchedFrames: string[] = []
        for (let i = 0; i < events.length; i++) if (group.matches(events[i].topic)) matched.push(events[i]), matchedFrames.push(frames[i])
        if (!matched.length) continue
        for (const s of group.subscriptions) {
          try {
            s.offerAll(matched, matchedFrames)
          } catch (err) {
            log.error({ err, subscription: s.id }, 'subscription failed')
          }
        }
      }
    }
    for (const event of events) {
      for (const listener of this.listeners) {
        try {
          listener(event)
        } catch (err) {
          log.error({ err }, 'event listener failed')
        }
      }
    }
  }

  /** Returns the function that removes the listener. */
  listen(listener: Listener): () => void {
    this.listeners.add(listener)
    return () => this.listeners.delete(listener)
  }

  /** A new subscriber on `pattern`; with `afterId` it first replays the stored events after that id. Call close() when it goes. */
  subscribe(sink: Sink, pattern: string, afterId?: number): Subscription {
    let group = this.byPattern.get(pattern)
    if (!group) this.byPattern.set(pattern, (group = { matches: topicMatcher(pattern), subscriptions: new Set() }))
    const s = new Subscription(this.nextSubscriptionId++, pattern, sink, this.store, afterId, (gone) => {
      this.subscriptions.delete(gone)
      group.subscriptions.delete(gone)
      if (!group.subscriptions.size && this.byPattern.get(pattern) === group) this.byPattern.delete(pattern)
    })
    this.subscriptions.add(s)
    group.subscriptions.add(s)
    return s
  }

  /** Subscriptions end when the server shuts down (and would otherwise hold the shutdown open). */
  closeSubscriptions(): void {
    for (const s of [...this.subscriptions]) s.end(1001, 'server shutting down')
  }

  subscribers(): SubscriptionInfo[] {
    return [...this.subscriptions].map((s) => s.info())
  }
}

// The event bus: events are written by services inside the unit of the change they
// report (Tx.emit); once that unit's COMMIT is done, the store hands each event
// here, in id order, and the bus fans it out to the live subscriptions (WebSocket
// clients, each with its own bounded buffer) and to every listener (the webhook
// dispatcher, long-poll waiters). Nothing here ever waits on a client, and nothing
// is fanned out that did not commit.
//
// Fan-out is the server's main cost per event: a write to every connection (a
// system call each). So each event is serialized once for all, each pattern is
// matched once for all its subscribers, and the subscribers of a pattern whose
// connections keep up share one Bun pub/sub topic: one publish per event reaches
// them all, and Bun joins each connection's frames of one event-loop turn into one
// write, up to 32 frames (its topic tree writes a connection's frames as the 33rd comes:
// at least one write per 32 events per connection, however long the window below). A
// subscriber whose connection backs up, or that is replaying, leaves the topic and gets
// its frames one by one, with its own buffer and drop count, until it has caught up.
// Under load the subscribers' frames go out at most once per short window that grows
// with the number of shared connections, so the writes per second stay bounded however
// many events come; the listeners get each event at once.
import { log } from '../obs/log'
import type { Event, Store } from '../store'
import { topicMatcher } from '../lib/glob'

export type Listener = (event: Event) => void

/** Events held per subscriber while its connection is backed up. */
export const SUBSCRIBER_BUFFER = 64
const REPLAY_PAGE = 256
/**
 * The least time between two deliveries to subscribers, per connection on a shared topic,
 * and its cap: a write to a loopback socket costs 12-17 µs of the server's CPU, so with a
 * thousand connections a turn of writes after every event would take the whole CPU at a
 * thousand events a second. Below the cap, the connections together get at most 5,000
 * writes a second: a fleet's hundred dashboards wait up to 20 ms (a person does not see
 * it), and the server's core is left for the agents' requests; a few agents' own
 * subscriptions wait a millisecond or less.
 */
const WINDOW_MS_PER_SHARED = 0.2
const MAX_WINDOW_MS = 20

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
  /** A connection that can be on a topic of a server's pub/sub (Bun's WebSocket); without it, every frame goes through send. */
  shared?: SharedSink
}

/** A WebSocket's side of Bun's pub/sub. */
export interface SharedSink {
  /** The name of the server the connection is on (Bus.serve), whose publish reaches it. */
  via: string
  subscribe(topic: string): void
  unsubscribe(topic: string): void
  /** Bytes written to the connection that it has not taken yet. */
  buffered(): number
}

/** What publishes to the connections of one server (Bun's Server.publish). */
export interface Publisher {
  publish(topic: string, frame: string): unknown
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
 * match its pattern. While it is live, its connection keeps up and nothing waits in
 * its buffer, it is on its pattern's shared topic instead (PatternGroup): the bus
 * publishes there once for all, and checks before each delivery that the connection
 * has taken what it was given; one that has not leaves the topic, backed up, and
 * comes back once drained. What was published to it counts as sent.
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
  /** On the group's shared topic; `sharedFrom`: the group's published count when it joined. */
  private onTopic = false
  private sharedFrom = 0

  constructor(
    readonly id: number,
    readonly pattern: string,
    private sink: Sink,
    private store: Store,
    afterId: number | undefined,
    private release: (s: Subscription) => void,
    private group: PatternGroup,
  ) {
    this.lastId = afterId ?? 0
    this.replaying = afterId !== undefined
    if (this.replaying) void this.replay()
    else this.share()
  }

  /** On the group's shared topic. */
  get shared(): boolean {
    return this.onTopic
  }

  /** Its connection has not taken everything it was given (only asked of shared ones). */
  backedUp(): boolean {
    return this.sink.shared!.buffered() > 0
  }

  /** Whether it was handed the event with id `id` (or a later one) already. */
  has(id: number): boolean {
    return this.lastId >= id
  }

  /** Joins the shared topic when it can: live, not backed up, nothing waiting, on a server the bus publishes to. */
  share(): void {
    const shared = this.sink.shared
    if (!shared || this.onTopic || this.closed || this.replaying || this.blocked || this.queue.length || !this.group.reaches(shared.via)) return
    try {
      shared.subscribe(this.group.topic)
    } catch {
      return
    }
    this.onTopic = true
    this.sharedFrom = this.group.published
    this.group.join(this, shared.via)
  }

  /** Leaves the shared topic; `backedUp`: because its connection is, so later events wait in its buffer until drain. */
  unshare(backedUp: boolean): void {
    if (!this.onTopic) return
    this.onTopic = false
    this.sent += this.group.published - this.sharedFrom
    if (this.group.lastId > this.lastId) this.lastId = this.group.lastId
    this.group.leave(this, this.sink.shared!.via)
    if (backedUp) this.blocked = true
    try {
      this.sink.shared!.unsubscribe(this.group.topic)
    } catch {}
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
    if (this.onTopic) return
    this.blocked = false
    while (!this.blocked && this.queue.length) this.transmit(this.queue.shift()!)
    if (!this.blocked && this.onDrain) {
      const resume = this.onDrain
      this.onDrain = null
      return resume()
    }
    this.share()
  }

  close(): void {
    if (this.closed) return
    this.unshare(false)
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
    const { id, pattern, connected_at, dropped, replaying } = this
    const sent = this.sent + (this.onTopic ? this.group.published - this.sharedFrom : 0)
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
    this.share()
  }
}

/**
 * The subscriptions on one pattern: its matcher runs once per event for all of them,
 * and those that keep up share a pub/sub topic of its own on each server they are on.
 */
class PatternGroup {
  readonly subscriptions = new Set<Subscription>()
  /** Members on the topic, and how many of them each server has. */
  readonly shared = new Set<Subscription>()
  readonly servers = new Map<string, number>()
  /** Frames published to the topic so far, and the id of the last one's event. */
  published = 0
  lastId = 0

  constructor(
    readonly matches: (topic: string) => boolean,
    readonly topic: string,
    readonly reaches: (server: string) => boolean,
    /** Counts the bus's shared subscriptions (the delivery window grows with them). */
    private counted: (change: number) => void,
  ) {}

  join(s: Subscription, server: string): void {
    this.shared.add(s)
    this.servers.set(server, (this.servers.get(server) ?? 0) + 1)
    this.counted(1)
  }

  leave(s: Subscription, server: string): void {
    this.shared.delete(s)
    this.counted(-1)
    const n = this.servers.get(server)! - 1
    if (n) this.servers.set(server, n)
    else this.servers.delete(server)
  }
}

export class Bus {
  private listeners = new Set<Listener>()
  private subscriptions = new Set<Subscription>()
  private byPattern = new Map<string, PatternGroup>()
  private nextSubscriptionId = 1
  private nextTopic = 1
  /** Committed events not yet fanned out; those not yet delivered to subscribers. */
  private committed: Event[] = []
  private undelivered: Event[] = []
  private lastDelivery = 0
  private deliveryTimer: ReturnType<typeof setTimeout> | null = null
  /** The servers whose pub/sub reaches the subscribers' connections, by name. */
  private publishers = new Map<string, Publisher>()
  /** Subscriptions on a shared topic, all patterns together. */
  private sharedCount = 0

  constructor(private store: Store) {
    // A COMMIT hands over its events one by one from its after-commit hooks; the
    // microtask runs once those are all done, before anything awaiting the commit
    // resumes, so the whole batch goes out together and nothing is delayed by it.
    store.onEvent((event) => {
      if (this.committed.push(event) === 1) queueMicrotask(() => this.fanOut())
    })
  }

  /** A server whose WebSocket subscribers share topics (called once it listens). */
  serve(name: string, publisher: Publisher): void {
    this.publishers.set(name, publisher)
  }

  /** Publishes an event on its own (REST publish, jobs): it commits, then fans out. */
  publish(topic: string, data: unknown, source = ''): Promise<Event> {
    return this.store.write(async (tx) => await tx.emit(topic, data, source))
  }

  /** Hands committed events to subscribers (now, or at the end of the window) and listeners (now), in id order. */
  private fanOut(): void {
    const events = this.committed
    this.committed = []
    if (this.subscriptions.size) {
      for (const event of events) this.undelivered.push(event)
      this.scheduleDelivery()
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

  private scheduleDelivery(): void {
    if (this.deliveryTimer) return
    const wait = this.lastDelivery + Math.min(MAX_WINDOW_MS, this.sharedCount * WINDOW_MS_PER_SHARED) - performance.now()
    if (wait <= 0) return this.deliver()
    const later = () => {
      this.deliveryTimer = null
      this.deliver()
    }
    // A wait under a timer's resolution is the next turn of the event loop: what commits in this one goes together.
    this.deliveryTimer = wait < 1 ? (setImmediate(later) as unknown as ReturnType<typeof setTimeout>) : setTimeout(later, wait)
  }

  /** Sends the undelivered events to every subscription whose pattern they match, in id order. */
  private deliver(): void {
    this.lastDelivery = performance.now()
    const events = this.undelivered
    this.undelivered = []
    const frames = events.map((event) => JSON.stringify(event))
    for (const group of this.byPattern.values()) {
      const matched: Event[] = []
      const matchedFrames: string[] = []
      for (let i = 0; i < events.length; i++) if (group.matches(events[i].topic)) matched.push(events[i]), matchedFrames.push(frames[i])
      if (!matched.length) continue
      // A connection that has not taken the last delivery yet gets this one in its own buffer; one
      // whose replay read some of these events (they committed before it joined) gets them one by
      // one, where the ids it has are skipped, and joins again.
      for (const s of group.shared) if (s.backedUp()) s.unshare(true)
      else if (s.has(matched[0].id)) s.unshare(false)
      if (group.shared.size) {
        for (const server of group.servers.keys()) {
          const publisher = this.publishers.get(server)!
          for (const frame of matchedFrames) publisher.publish(group.topic, frame)
        }
        group.published += matched.length
        group.lastId = matched[matched.length - 1].id
      }
      for (const s of group.subscriptions) {
        if (s.shared) continue
        try {
          s.offerAll(matched, matchedFrames)
          s.share()
        } catch (err) {
          log.error({ err, subscription: s.id }, 'subscription failed')
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
    if (!group) {
      group = new PatternGroup(topicMatcher(pattern), `events ${this.nextTopic++}`, (server) => this.publishers.has(server), (n) => (this.sharedCount += n))
      this.byPattern.set(pattern, group)
    }
    const s = new Subscription(
      this.nextSubscriptionId++,
      pattern,
      sink,
      this.store,
      afterId,
      (gone) => {
        this.subscriptions.delete(gone)
        group.subscriptions.delete(gone)
        if (!group.subscriptions.size && this.byPattern.get(pattern) === group) this.byPattern.delete(pattern)
      },
      group,
    )
    this.subscriptions.add(s)
    group.subscriptions.add(s)
    return s
  }

  /** Subscriptions end when the server shuts down (and would otherwise hold the shutdown open). */
  closeSubscriptions(): void {
    if (this.deliveryTimer) clearTimeout(this.deliveryTimer), clearImmediate(this.deliveryTimer as never), (this.deliveryTimer = null), this.deliver()
    for (const s of [...this.subscriptions]) s.end(1001, 'server shutting down')
  }

  subscribers(): SubscriptionInfo[] {
    return [...this.subscriptions].map((s) => s.info())
  }
}

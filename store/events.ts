// Event history: every published event, ids strictly increasing. Each backend keeps
// it its own way (store/sqlite/events.ts, store/pg/events.ts).

/**
 * Marks an event published by a webhook delivery: it reaches subscribers but never
 * webhooks, or a receiver forwarding to this server would loop. A symbol, so no
 * answer or stream ever shows it; kept with the row where replicas need it (PostgreSQL).
 */
export const ECHO = Symbol('echo')

export interface Event {
  id: number
  topic: string
  data: unknown
  source: string
  created_at: string
  [ECHO]?: true
}

export interface EventQuery {
  /** Topic glob (lib/glob.ts); absent or `*` for all. */
  topic?: string
  source?: string
  from?: string
  to?: string
  /** Only events with a greater id, and then oldest first (resume); otherwise newest first. */
  afterId?: number
  limit: number
}

export interface EventsStore {
  lastId(): Promise<number>
  /** Every filter runs in SQL before the LIMIT, so `limit` counts matching events. */
  query(q: EventQuery): Promise<Event[]>
  /** The id through which the prune deletes, so that the newest `keep` stay (0: nothing beyond them). */
  pruneCutoff(keep: number): Promise<number>
}

/** Event writes, inside a unit of work: an event commits with the change it reports. */
export interface EventsWrites {
  append(topic: string, data: unknown, source: string, echo?: boolean): Promise<Event>
  /**
   * Deletes the oldest events with ids up to `through` (a pruneCutoff), at most `limit` of them;
   * returns how many went. Ids only rise, so events written since the cutoff was read stay.
   */
  prune(through: number, limit: number): Promise<number>
}

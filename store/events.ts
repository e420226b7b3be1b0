// Event history: every published event, ids strictly increasing.
import type { Database } from 'bun:sqlite'
import { now } from './db'
import { globToSql } from '../lib/glob'

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
}

/** Event writes, inside a unit of work: an event commits with the change it reports. */
export interface EventsWrites {
  append(topic: string, data: unknown, source: string, echo?: boolean): Event
  /** Deletes all but the newest `keep` events; returns how many went. */
  prune(keep: number): number
}

type Row = { id: number; topic: string; data: string; source: string; created_at: string }
const toEvent = (r: Row): Event => ({ id: r.id, topic: r.topic, data: JSON.parse(r.data), source: r.source, created_at: r.created_at })

export function eventsWrites(db: Database): EventsWrites {
  // The id from run()'s lastInsertRowid: RETURNING costs a result row on every event.
  const insert = db.query<unknown, [string, string, string, string]>('INSERT INTO events (topic, data, source, created_at) VALUES (?, ?, ?, ?)')
  const pruneBelow = db.query<unknown, [number]>(
    'DELETE FROM events WHERE id <= (SELECT id FROM events ORDER BY id DESC LIMIT 1 OFFSET ?)',
  )
  return {
    append(topic, data, source, echo) {
      const created_at = now()
      const id = Number(insert.run(topic, JSON.stringify(data ?? null), source, created_at).lastInsertRowid)
      const event: Event = { id, topic, data: data ?? null, source, created_at }
      if (echo) event[ECHO] = true
      return event
    },
    prune: (keep) => pruneBelow.run(Math.max(0, keep)).changes,
  }
}

export function eventsStore(db: Database): EventsStore {
  const last = db.query<{ id: number | null }, []>('SELECT MAX(id) AS id FROM events')
  // Queries differ only in which filters are present: prepare each shape once.
  const shapes = new Map<string, ReturnType<typeof db.query<Row, (string | number)[]>>>()
  return {
    lastId: async () => last.get()?.id ?? 0,
    async query(q) {
      const where: string[] = []
      const args: (string | number)[] = []
      const glob = q.topic ? globToSql(q.topic) : null
      if (glob) {
        where.push("topic GLOB ? AND length(topic) - length(replace(topic, '.', '')) = ?")
        args.push(glob.glob, glob.dots)
      }
      if (q.source !== undefined) where.push('source = ?'), args.push(q.source)
      if (q.from) where.push('created_at >= ?'), args.push(q.from)
      if (q.to) where.push('created_at <= ?'), args.push(q.to)
      if (q.afterId !== undefined) where.push('id > ?'), args.push(q.afterId)
      args.push(q.limit)
      const sql = `SELECT id, topic, data, source, created_at FROM events ${where.length ? `WHERE ${where.join(' AND ')}` : ''} ORDER BY id ${q.afterId !== undefined ? 'ASC' : 'DESC'} LIMIT ?`
      let stmt = shapes.get(sql)
      if (!stmt) shapes.set(sql, (stmt = db.query<Row, (string | number)[]>(sql)))
      return stmt.all(...args).map(toEvent)
    },
  }
}

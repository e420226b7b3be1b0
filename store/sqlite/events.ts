// Event history on SQLite: ids from the rowid, times that never go back, so a time
// filter is answered as an id range.
import type { Database } from 'bun:sqlite'
import { nowIso } from '../../lib/time'
import { globToSql } from '../../lib/glob'
import { idWindow, risingStamp } from '../rising'
import { ECHO, type Event, type EventsStore, type EventsWrites } from '../events'

type Row = { id: number; topic: string; data: string; source: string; created_at: string }
const toEvent = (r: Row): Event => ({ id: r.id, topic: r.topic, data: JSON.parse(r.data), source: r.source, created_at: r.created_at })

export function eventsWrites(db: Database): EventsWrites {
  // The id from run()'s lastInsertRowid: RETURNING costs a result row on every event.
  const insert = db.query<unknown, [string, string, string, string]>('INSERT INTO events (topic, data, source, created_at) VALUES (?, ?, ?, ?)')
  // Times rise with ids (store/rising.ts), so eventsStore turns a time filter into an id range.
  const stamp = risingStamp(nowIso, db.query<{ created_at: string }, []>('SELECT created_at FROM events ORDER BY id DESC LIMIT 1').get()?.created_at ?? '')
  const pruneThrough = db.query<unknown, [number, number]>('DELETE FROM events WHERE id IN (SELECT id FROM events WHERE id <= ? ORDER BY id LIMIT ?)')
  return {
    async append(topic, data, source, echo) {
      const created_at = stamp()
      const id = Number(insert.run(topic, JSON.stringify(data ?? null), source, created_at).lastInsertRowid)
      const event: Event = { id, topic, data: data ?? null, source, created_at }
      if (echo) event[ECHO] = true
      return event
    },
    prune: async (through, limit) => pruneThrough.run(through, limit).changes,
  }
}

export function eventsStore(db: Database): EventsStore {
  const last = db.query<{ id: number | null }, []>('SELECT MAX(id) AS id FROM events')
  const cutoff = db.query<{ id: number }, [number]>('SELECT id FROM events ORDER BY id DESC LIMIT 1 OFFSET ?')
  // Two subqueries: MIN and MAX in one SELECT would scan the table instead of reading both ends.
  const span = db.query<{ first: number | null; last: number | null }, []>('SELECT (SELECT MIN(id) FROM events) AS first, (SELECT MAX(id) FROM events) AS last')
  const atOrAfter = db.query<{ id: number; created_at: string }, [number]>('SELECT id, created_at FROM events WHERE id >= ? ORDER BY id LIMIT 1')
  const probe = (id: number) => {
    const row = atOrAfter.get(id)
    return row && { id: row.id, time: row.created_at }
  }
  // Queries differ only in which filters are present: prepare each shape once.
  const shapes = new Map<string, ReturnType<typeof db.query<Row, (string | number)[]>>>()
  return {
    lastId: async () => last.get()?.id ?? 0,
    pruneCutoff: async (keep) => cutoff.get(Math.max(0, keep))?.id ?? 0,
    async query(q) {
      const where: string[] = []
      const args: (string | number)[] = []
      const glob = q.topic ? globToSql(q.topic) : null
      if (glob) {
        where.push("topic GLOB ? AND length(topic) - length(replace(topic, '.', '')) = ?")
        args.push(glob.glob, glob.dots)
      }
      if (q.source !== undefined) where.push('source = ?'), args.push(q.source)
      // The id range is the time filter (times rise with ids in every row, the migration's included);
      // the time conditions stay as a guard that costs nothing once the range is read.
      const ids = await idWindow(() => span.get()!, probe, q.from, q.to)
      where.push(...ids.sql), args.push(...ids.args)
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

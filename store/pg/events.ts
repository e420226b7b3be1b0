// Event history on PostgreSQL. Ids come from a counter row, read and written under
// the write lock by the transaction that publishes (store/pg/units.ts), so they are
// strictly increasing in commit order with no gap (a rolled-back unit takes its ids
// back), which the event feed and `after_id` resume rely on across replicas.
import type { SQL } from 'bun'
import { globRegex, matchesAll } from '../../lib/glob'
import { nowIso } from '../../lib/time'
import { ECHO, type Event, type EventsStore, type EventsWrites } from '../events'
import { q } from './db'
import { sendable } from './send'
import type { PgUnits } from './units'
import { int } from '../runner'

/** A row of the events table as an event; `parsed`: its data is parsed JSON already (a NOTIFY's row). */
export function toEvent(r: Record<string, unknown>, parsed = false): Event {
  const data = parsed ? r.data : JSON.parse(r.data as string)
  const event: Event = { id: int(r.id), topic: r.topic as string, data, source: r.source as string, created_at: r.created_at as string }
  // The leader may be another replica: it learns that an event is an echo from the row.
  if (r.echo === 1) event[ECHO] = true
  return event
}


// Sent without waiting: the id is the unit's, the counter and the NOTIFY go with the COMMIT.
const INSERT = sendable('INSERT INTO events (id, topic, data, source, created_at, echo) VALUES (?, ?, ?, ?, ?, ?)')
const pruneThrough = q('DELETE FROM events WHERE id IN (SELECT id FROM events WHERE id <= ? ORDER BY id LIMIT ?)')
const cutoff = q<{ id: string }>('SELECT id FROM events ORDER BY id DESC LIMIT 1 OFFSET ?')
const last = q<{ id: string | null }>('SELECT MAX(id) AS id FROM events')

export function pgEventsWrites(u: PgUnits): EventsWrites {
  return {
    async append(topic, data, source, echo) {
      const created_at = nowIso()
      const id = u.nextEventId()
      const text = JSON.stringify(data ?? null)
      u.send(INSERT, [id, topic, text, source, created_at, echo ? 1 : 0])
      u.announce(id, `[${id},${JSON.stringify(topic)},${text},${JSON.stringify(source)},"${created_at}",${echo ? 1 : 0}]`)
      const event: Event = { id, topic, data: data ?? null, source, created_at }
      if (echo) event[ECHO] = true
      return event
    },
    prune: (through, limit) => pruneThrough.run(u.tx, through, limit),
  }
}

export function pgEventsStore(sql: SQL): EventsStore {
  // Queries differ only in which filters are present: one statement per shape.
  const shapes = new Map<string, ReturnType<typeof q<Record<string, unknown>>>>()
  return {
    lastId: async () => int((await last.get(sql))?.id ?? 0),
    pruneCutoff: async (keep) => int((await cutoff.get(sql, Math.max(0, keep)))?.id ?? 0),
    async query(qy) {
      const where: string[] = []
      const args: (string | number)[] = []
      if (qy.topic && !matchesAll(qy.topic)) where.push('topic ~ ?'), args.push(globRegex(qy.topic))
      if (qy.source !== undefined) where.push('source = ?'), args.push(qy.source)
      if (qy.from) where.push('created_at >= ?'), args.push(qy.from)
      if (qy.to) where.push('created_at <= ?'), args.push(qy.to)
      if (qy.afterId !== undefined) where.push('id > ?'), args.push(qy.afterId)
      args.push(qy.limit)
      const text = `SELECT id, topic, data, source, created_at FROM events ${where.length ? `WHERE ${where.join(' AND ')}` : ''}
        ORDER BY id ${qy.afterId !== undefined ? 'ASC' : 'DESC'} LIMIT ?`
      let stmt = shapes.get(text)
      if (!stmt) shapes.set(text, (stmt = q(text)))
      return (await stmt.all(sql, ...args)).map((r) => toEvent(r))
    },
  }
}

// Event history: every published event, ids strictly increasing.
import type { Database } from 'bun:sqlite'
import { groupCommit, now } from './db'

export interface Event {
  id: number
  topic: string
  data: unknown
  source: string
  created_at: string
}

export interface EventsStore {
  append(topic: string, data: unknown, source: string): Promise<Event>
  lastId(): Promise<number>
}

export function eventsStore(db: Database): EventsStore {
  const insert = db.query<{ id: number }, [string, string, string, string]>(
    'INSERT INTO events (topic, data, source, created_at) VALUES (?, ?, ?, ?) RETURNING id',
  )
  const last = db.query<{ id: number | null }, []>('SELECT MAX(id) AS id FROM events')
  return {
    async append(topic, data, source) {
      const created_at = now()
      const { id } = await groupCommit(db).write(() => insert.get(topic, JSON.stringify(data ?? null), source, created_at)!)
      return { id, topic, data: data ?? null, source, created_at }
    },
    lastId: async () => last.get()?.id ?? 0,
  }
}

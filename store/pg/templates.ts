// Templates on PostgreSQL (twin of store/templates.ts).
import type { SQL } from 'bun'
import type { Async } from '../index'
import { conflict, notFound } from '../../lib/errors'
import { now } from '../db'
import { full, summary, type TemplateRow, type TemplatesStore, type TemplatesWrites } from '../templates'
import { q, type PgUnits } from './db'

export function pgTemplatesWrites(u: PgUnits): Async<TemplatesWrites> {
  const insert = q<TemplateRow>(
    `INSERT INTO templates (id, name, description, kind, data, tags, version, created_at, updated_at)
     VALUES (?, ?, ?, ?, ?, ?, 1, ?, ?) ON CONFLICT DO NOTHING RETURNING *`,
  )
  const update = q<TemplateRow>(
    `UPDATE templates SET name = ?, description = ?, kind = ?, data = ?, tags = ?, version = version + 1, updated_at = ?
     WHERE id = ? RETURNING *`,
  )
  const remove = q('DELETE FROM templates WHERE id = ?')
  return {
    async create(t) {
      const at = now()
      const row = await insert.get(u.tx, t.id, t.name, t.description, t.kind, JSON.stringify(t.data), JSON.stringify(t.tags), at, at)
      if (!row) throw conflict(`template ${t.id} already exists`)
      return full(row)
    },
    async update(t) {
      const row = await update.get(u.tx, t.name, t.description, t.kind, JSON.stringify(t.data), JSON.stringify(t.tags), now(), t.id)
      if (!row) throw notFound('template not found')
      return full(row)
    },
    delete: async (id) => (await remove.run(u.tx, id)) > 0,
  }
}

export function pgTemplatesStore(sql: SQL): TemplatesStore {
  const get = q<TemplateRow>('SELECT * FROM templates WHERE id = ?')
  const list = q<Omit<TemplateRow, 'data'>>(
    `SELECT id, name, description, kind, tags, version, created_at, updated_at FROM templates
     WHERE (?1::text IS NULL OR kind = ?1) AND (?2::text IS NULL OR ?2 IN (SELECT json_array_elements(templates.tags::json)::text))
     ORDER BY id`,
  )
  return {
    // Tags are matched as JSON text (json keeps each element as written, by JSON.stringify):
    // jsonb would refuse a stored tag holding \u0000, which SQLite lists fine.
    list: async (f) => (await list.all(sql, f.kind ?? null, f.tag === undefined ? null : JSON.stringify(f.tag))).map(summary),
    get: async (id) => {
      const row = await get.get(sql, id)
      return row ? full(row) : null
    },
  }
}

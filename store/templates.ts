// Templates: named, versioned bundles of rules, contracts and specs that can be
// applied to a project. `data` is stored as JSON text.
import type { Database } from 'bun:sqlite'
import { conflict, notFound } from '../lib/errors'
import { now } from './db'

import type { TemplateKind } from '../lib/templates'
export { TEMPLATE_KINDS, type TemplateKind } from '../lib/templates'

export interface TemplateSummary {
  id: string
  name: string
  description: string
  kind: TemplateKind
  tags: string[]
  version: number
  created_at: string
  updated_at: string
}

export interface Template extends TemplateSummary {
  data: unknown
}

export type TemplateInput = Pick<Template, 'id' | 'name' | 'description' | 'kind' | 'data' | 'tags'>

export interface TemplatesWrites {
  /** 409 when the id exists. */
  create(t: TemplateInput): Template
  /** Replaces the fields and adds 1 to version; 404 when missing. */
  update(t: TemplateInput): Template
  delete(id: string): boolean
}

export interface TemplatesStore {
  /** Without data; `tag` keeps templates carrying that tag. */
  list(filter: { kind?: string; tag?: string }): Promise<TemplateSummary[]>
  get(id: string): Promise<Template | null>
}

type Row = Omit<Template, 'data' | 'tags'> & { data: string; tags: string }
export type { Row as TemplateRow }

export const summary = (r: Omit<Row, 'data'>): TemplateSummary => ({
  id: r.id,
  name: r.name,
  description: r.description,
  kind: r.kind,
  tags: JSON.parse(r.tags),
  version: r.version,
  created_at: r.created_at,
  updated_at: r.updated_at,
})

export const full = (r: Row): Template => ({ ...summary(r), data: JSON.parse(r.data) })

export function templatesWrites(db: Database): TemplatesWrites {
  const insert = db.query<Row, [string, string, string, string, string, string, string, string]>(
    `INSERT INTO templates (id, name, description, kind, data, tags, version, created_at, updated_at)
     VALUES (?, ?, ?, ?, ?, ?, 1, ?, ?) ON CONFLICT DO NOTHING RETURNING *`,
  )
  const update = db.query<Row, [string, string, string, string, string, string, string]>(
    `UPDATE templates SET name = ?, description = ?, kind = ?, data = ?, tags = ?, version = version + 1, updated_at = ?
     WHERE id = ? RETURNING *`,
  )
  const remove = db.query<void, [string]>('DELETE FROM templates WHERE id = ?')
  return {
    create(t) {
      const at = now()
      const row = insert.get(t.id, t.name, t.description, t.kind, JSON.stringify(t.data), JSON.stringify(t.tags), at, at)
      if (!row) throw conflict(`template ${t.id} already exists`)
      return full(row)
    },
    update(t) {
      const row = update.get(t.name, t.description, t.kind, JSON.stringify(t.data), JSON.stringify(t.tags), now(), t.id)
      if (!row) throw notFound('template not found')
      return full(row)
    },
    delete: (id) => remove.run(id).changes > 0,
  }
}

export function templatesStore(db: Database): TemplatesStore {
  const get = db.query<Row, [string]>('SELECT * FROM templates WHERE id = ?')
  const list = db.query<Omit<Row, 'data'>, [string | null, string | null]>(
    `SELECT id, name, description, kind, tags, version, created_at, updated_at FROM templates
     WHERE (?1 IS NULL OR kind = ?1) AND (?2 IS NULL OR EXISTS (SELECT 1 FROM json_each(templates.tags) WHERE value = ?2))
     ORDER BY id`,
  )
  return {
    list: async (f) => list.all(f.kind ?? null, f.tag ?? null).map(summary),
    get: async (id) => {
      const row = get.get(id)
      return row ? full(row) : null
    },
  }
}

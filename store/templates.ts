// Templates: named, versioned bundles of rules, contracts and specs that can be
// applied to a project. `data` is stored as JSON text.
import { conflict, notFound } from '../lib/errors'
import { nowIso } from '../lib/time'
import { stmt, type Dialect, type Runner } from './runner'

export const TEMPLATE_KINDS = ['rules', 'contracts', 'bundle'] as const
export type TemplateKind = (typeof TEMPLATE_KINDS)[number]

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
  create(t: TemplateInput): Promise<Template>
  /** Replaces the fields and adds 1 to version; 404 when missing. */
  update(t: TemplateInput): Promise<Template>
  delete(id: string): Promise<boolean>
}

export interface TemplatesStore {
  /** Without data; `tag` keeps templates carrying that tag. */
  list(filter: { kind?: string; tag?: string }): Promise<TemplateSummary[]>
  get(id: string): Promise<Template | null>
}

type Row = Omit<Template, 'data' | 'tags'> & { data: string; tags: string }

const summary = (r: Omit<Row, 'data'>): TemplateSummary => ({
  id: r.id,
  name: r.name,
  description: r.description,
  kind: r.kind,
  tags: JSON.parse(r.tags),
  version: r.version,
  created_at: r.created_at,
  updated_at: r.updated_at,
})

const full = (r: Row): Template => ({ ...summary(r), data: JSON.parse(r.data) })

const INSERT = stmt<Row>(
  `INSERT INTO templates (id, name, description, kind, data, tags, version, created_at, updated_at)
   VALUES (?, ?, ?, ?, ?, ?, 1, ?, ?) ON CONFLICT DO NOTHING RETURNING *`,
)
const UPDATE = stmt<Row>(
  `UPDATE templates SET name = ?, description = ?, kind = ?, data = ?, tags = ?, version = version + 1, updated_at = ?
   WHERE id = ? RETURNING *`,
)
const REMOVE = stmt('DELETE FROM templates WHERE id = ?')
const ONE = stmt<Row>('SELECT * FROM templates WHERE id = ?')

export function templatesWrites(w: Runner): TemplatesWrites {
  return {
    async create(t) {
      const at = nowIso()
      const row = await w.get(INSERT, t.id, t.name, t.description, t.kind, JSON.stringify(t.data), JSON.stringify(t.tags), at, at)
      if (!row) throw conflict(`template ${t.id} already exists`)
      return full(row)
    },
    async update(t) {
      const row = await w.get(UPDATE, t.name, t.description, t.kind, JSON.stringify(t.data), JSON.stringify(t.tags), nowIso(), t.id)
      if (!row) throw notFound('template not found')
      return full(row)
    },
    delete: async (id) => (await w.run(REMOVE, id)) > 0,
  }
}

export function templatesStore(r: Runner, d: Dialect): TemplatesStore {
  return {
    async list(f) {
      const where: string[] = []
      const args: string[] = []
      if (f.kind != null) where.push('kind = ?'), args.push(f.kind)
      if (f.tag != null) where.push(d.hasElement('templates.tags', '?')), args.push(d.element(f.tag))
      const text = `SELECT id, name, description, kind, tags, version, created_at, updated_at FROM templates
        ${where.length ? `WHERE ${where.join(' AND ')}` : ''} ORDER BY id`
      return (await r.all(stmt<Omit<Row, 'data'>>(text), ...args)).map(summary)
    },
    get: async (id) => {
      const row = await r.get(ONE, id)
      return row ? full(row) : null
    },
  }
}

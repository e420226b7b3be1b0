// Webhooks: where matching events are POSTed. The secret is write-only: only
// target() returns it, for signing deliveries.
import type { Database } from 'bun:sqlite'
import { conflict } from '../lib/errors'
import { now, type UnitHooks } from './db'

export interface Webhook {
  id: string
  url: string
  patterns: string[]
  active: boolean
  created_at: string
  /** Present once a delivery was attempted. */
  last_fired?: string
  fail_count: number
}

export interface WebhookTarget extends Webhook {
  secret: string
}

export interface NewWebhook {
  id: string
  url: string
  patterns: string[]
  secret: string
}

export interface WebhooksWrites {
  /** Throws conflict when the id exists. */
  create(w: NewWebhook): Webhook
  delete(id: string): boolean
  /** Enables (resetting fail_count) or disables; null when unknown. */
  setActive(id: string, active: boolean): Webhook | null
  /**
   * Records one delivery attempt: success resets fail_count, failure increments it
   * and disables the webhook at `maxFailures`. Null when the webhook is gone.
   */
  recordDelivery(id: string, ok: boolean, maxFailures: number): Webhook | null
}

export interface WebhooksStore {
  list(): Promise<Webhook[]>
  get(id: string): Promise<Webhook | null>
  /** The webhook with its secret, for delivery. */
  target(id: string): Promise<WebhookTarget | null>
  /** The active webhooks, cached between writes: treat the array as read-only. */
  active(): Promise<readonly Webhook[]>
  /** Forgets the cached active list (a webhook write committed). */
  changed(): void
}

type Row = { id: string; url: string; patterns: string; secret: string; active: number; created_at: string; last_fired: string | null; fail_count: number }
export type { Row as WebhookRow }

export function toWebhook(r: Row): Webhook {
  const w: Webhook = { id: r.id, url: r.url, patterns: JSON.parse(r.patterns), active: r.active === 1, created_at: r.created_at, fail_count: r.fail_count }
  if (r.last_fired) w.last_fired = r.last_fired
  return w
}

/** Webhook writes; `changed` runs after the commit (it drops the reader's cached active list). */
export function webhooksWrites(db: Database, unit: UnitHooks, changed: () => void): WebhooksWrites {
  const insert = db.query<Row, [string, string, string, string, string]>(
    'INSERT INTO webhooks (id, url, patterns, secret, created_at) VALUES (?, ?, ?, ?, ?) ON CONFLICT (id) DO NOTHING RETURNING *',
  )
  const remove = db.query<unknown, [string]>('DELETE FROM webhooks WHERE id = ?')
  const enable = db.query<Row, [string]>('UPDATE webhooks SET active = 1, fail_count = 0 WHERE id = ? RETURNING *')
  const disable = db.query<Row, [string]>('UPDATE webhooks SET active = 0 WHERE id = ? RETURNING *')
  const succeeded = db.query<Row, [string, string]>('UPDATE webhooks SET fail_count = 0, last_fired = ? WHERE id = ? RETURNING *')
  const failed = db.query<Row, [string, number, string]>(
    `UPDATE webhooks SET fail_count = fail_count + 1, last_fired = ?1,
       active = CASE WHEN fail_count + 1 >= ?2 THEN 0 ELSE active END
     WHERE id = ?3 RETURNING *`,
  )
  const write = <T>(fn: () => T): T => {
    unit.afterCommit(changed)
    return fn()
  }
  return {
    create(w) {
      const row = write(() => insert.get(w.id, w.url, JSON.stringify(w.patterns), w.secret, now()))
      if (!row) throw conflict(`webhook ${w.id} already exists`)
      return toWebhook(row)
    },
    delete: (id) => write(() => remove.run(id).changes) > 0,
    setActive(id, on) {
      const row = write(() => (on ? enable : disable).get(id))
      return row ? toWebhook(row) : null
    },
    recordDelivery(id, ok, maxFailures) {
      const row = write(() => (ok ? succeeded.get(now(), id) : failed.get(now(), maxFailures, id)))
      return row ? toWebhook(row) : null
    },
  }
}

export function webhooksStore(db: Database): WebhooksStore {
  const all = db.query<Row, []>('SELECT * FROM webhooks ORDER BY id')
  const active = db.query<Row, []>('SELECT * FROM webhooks WHERE active = 1')
  const one = db.query<Row, [string]>('SELECT * FROM webhooks WHERE id = ?')
  // Every published event asks for the active webhooks: keep them in memory, dropped after any committed write.
  let activeCache: Webhook[] | null = null
  return {
    list: async () => all.all().map(toWebhook),
    active: async () => (activeCache ??= active.all().map(toWebhook)),
    async get(id) {
      const row = one.get(id)
      return row ? toWebhook(row) : null
    },
    async target(id) {
      const row = one.get(id)
      return row ? { ...toWebhook(row), secret: row.secret } : null
    },
    changed: () => void (activeCache = null),
  }
}

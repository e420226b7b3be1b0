// Webhooks on PostgreSQL (twin of store/webhooks.ts). Nothing is cached: another
// replica may change the webhooks at any time, so active() reads them every call.
import type { SQL } from 'bun'
import type { Async } from '../index'
import { conflict } from '../../lib/errors'
import { now } from '../db'
import { toWebhook, type WebhookRow, type WebhooksStore, type WebhooksWrites } from '../webhooks'
import { q, type PgUnits } from './db'

export function pgWebhooksWrites(u: PgUnits): Async<WebhooksWrites> {
  const insert = q<WebhookRow>(
    'INSERT INTO webhooks (id, url, patterns, secret, created_at) VALUES (?, ?, ?, ?, ?) ON CONFLICT (id) DO NOTHING RETURNING *',
  )
  const remove = q('DELETE FROM webhooks WHERE id = ?')
  const enable = q<WebhookRow>('UPDATE webhooks SET active = 1, fail_count = 0 WHERE id = ? RETURNING *')
  const disable = q<WebhookRow>('UPDATE webhooks SET active = 0 WHERE id = ? RETURNING *')
  const succeeded = q<WebhookRow>('UPDATE webhooks SET fail_count = 0, last_fired = ? WHERE id = ? RETURNING *')
  const failed = q<WebhookRow>(
    `UPDATE webhooks SET fail_count = fail_count + 1, last_fired = ?1,
       active = CASE WHEN fail_count + 1 >= ?2 THEN 0 ELSE active END
     WHERE id = ?3 RETURNING *`,
  )
  const orNull = (row: WebhookRow | null) => (row ? toWebhook(row) : null)
  return {
    async create(w) {
      const row = await insert.get(u.tx, w.id, w.url, JSON.stringify(w.patterns), w.secret, now())
      if (!row) throw conflict(`webhook ${w.id} already exists`)
      return toWebhook(row)
    },
    delete: async (id) => (await remove.run(u.tx, id)) > 0,
    setActive: async (id, on) => orNull(await (on ? enable : disable).get(u.tx, id)),
    recordDelivery: async (id, ok, maxFailures) =>
      orNull(await (ok ? succeeded.get(u.tx, now(), id) : failed.get(u.tx, now(), maxFailures, id))),
  }
}

export function pgWebhooksStore(sql: SQL): WebhooksStore {
  const all = q<WebhookRow>('SELECT * FROM webhooks ORDER BY id')
  const active = q<WebhookRow>('SELECT * FROM webhooks WHERE active = 1 ORDER BY id')
  const one = q<WebhookRow>('SELECT * FROM webhooks WHERE id = ?')
  return {
    list: async () => (await all.all(sql)).map(toWebhook),
    // The dispatcher (jobs/webhooks.ts) asks one event at a time, so answers keep event order.
    active: async () => (await active.all(sql)).map(toWebhook),
    get: async (id) => {
      const row = await one.get(sql, id)
      return row ? toWebhook(row) : null
    },
    async target(id) {
      const row = await one.get(sql, id)
      return row ? { ...toWebhook(row), secret: row.secret } : null
    },
    changed: () => {},
  }
}

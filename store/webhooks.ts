// Webhooks: where matching events are POSTed. The secret is write-only: only
// target() returns it, for signing deliveries. Their delivery queue is
// store/webhook-deliveries.ts, reached through the same group.
import { conflict } from '../lib/errors'
import { nowIso } from '../lib/time'
import { stmt, type Runner, type UnitHooks } from './runner'
import { deliveriesReads, deliveriesWrites } from './webhook-deliveries'

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

/** What PATCH may change; absent fields stay. */
export interface WebhookChange {
  url?: string
  patterns?: string[]
  secret?: string
}

export interface WebhooksWrites extends ReturnType<typeof deliveriesWrites> {
  /** Throws conflict when the id exists. */
  create(w: NewWebhook): Promise<Webhook>
  /** Null when unknown. */
  update(id: string, change: WebhookChange): Promise<Webhook | null>
  /** Deletes the webhook and its deliveries. */
  delete(id: string): Promise<boolean>
  /** Enables (resetting fail_count) or disables; null when unknown. */
  setActive(id: string, active: boolean): Promise<Webhook | null>
  /**
   * Records one delivery attempt: success resets fail_count, failure increments it
   * and disables the webhook at `maxFailures`. Null when the webhook is gone.
   */
  recordDelivery(id: string, ok: boolean, maxFailures: number): Promise<Webhook | null>
}

export interface WebhooksStore extends ReturnType<typeof deliveriesReads> {
  list(): Promise<Webhook[]>
  get(id: string): Promise<Webhook | null>
  /** The webhook with its secret, for delivery. */
  target(id: string): Promise<WebhookTarget | null>
  /** Every webhook, active or not (cached between writes where this process is the only writer): treat the array as read-only. */
  all(): Promise<readonly Webhook[]>
  /** The active webhooks (cached as `all`): treat the array as read-only. */
  active(): Promise<readonly Webhook[]>
  /** Forgets the cached lists (a webhook write committed). */
  changed(): void
}

type Row = { id: string; url: string; patterns: string; secret: string; active: number; created_at: string; last_fired: string | null; fail_count: number }

function toWebhook(r: Row): Webhook {
  const w: Webhook = { id: r.id, url: r.url, patterns: JSON.parse(r.patterns), active: r.active === 1, created_at: r.created_at, fail_count: r.fail_count }
  if (r.last_fired) w.last_fired = r.last_fired
  return w
}

const orNull = (row: Row | null) => (row ? toWebhook(row) : null)

const INSERT = stmt<Row>(
  'INSERT INTO webhooks (id, url, patterns, secret, created_at) VALUES (?, ?, ?, ?, ?) ON CONFLICT (id) DO NOTHING RETURNING *',
)
const REMOVE = stmt('DELETE FROM webhooks WHERE id = ?')
const UPDATE = stmt<Row>(
  'UPDATE webhooks SET url = COALESCE(?, url), patterns = COALESCE(?, patterns), secret = COALESCE(?, secret) WHERE id = ? RETURNING *',
)
const ENABLE = stmt<Row>('UPDATE webhooks SET active = 1, fail_count = 0 WHERE id = ? RETURNING *')
const DISABLE = stmt<Row>('UPDATE webhooks SET active = 0 WHERE id = ? RETURNING *')
const SUCCEEDED = stmt<Row>('UPDATE webhooks SET fail_count = 0, last_fired = ? WHERE id = ? RETURNING *')
const FAILED = stmt<Row>(
  `UPDATE webhooks SET fail_count = fail_count + 1, last_fired = ?1,
     active = CASE WHEN fail_count + 1 >= ?2 THEN 0 ELSE active END
   WHERE id = ?3 RETURNING *`,
)
const ALL = stmt<Row>('SELECT * FROM webhooks ORDER BY id')
const ONE = stmt<Row>('SELECT * FROM webhooks WHERE id = ?')

/** Webhook writes; `changed` runs after the commit (it drops the reader's cached active list). */
export function webhooksWrites(w: Runner, unit: UnitHooks, changed: () => void): WebhooksWrites {
  const write = <T>(result: Promise<T>): Promise<T> => {
    unit.afterCommit(changed)
    return result
  }
  const deliveries = deliveriesWrites(w)
  return {
    ...deliveries,
    async create(hook) {
      const row = await write(w.get(INSERT, hook.id, hook.url, JSON.stringify(hook.patterns), hook.secret, nowIso()))
      if (!row) throw conflict(`webhook ${hook.id} already exists`)
      return toWebhook(row)
    },
    update: async (id, c) =>
      orNull(await write(w.get(UPDATE, c.url ?? null, c.patterns ? JSON.stringify(c.patterns) : null, c.secret ?? null, id))),
    async delete(id) {
      if (!(await write(w.run(REMOVE, id)))) return false
      await deliveries.forget(id)
      return true
    },
    setActive: async (id, on) => orNull(await write(w.get(on ? ENABLE : DISABLE, id))),
    recordDelivery: async (id, ok, maxFailures) => orNull(await write(ok ? w.get(SUCCEEDED, nowIso(), id) : w.get(FAILED, nowIso(), maxFailures, id))),
  }
}

/**
 * `cache`: keep the lists in memory, dropped after any committed write (every batch of
 * published events asks for them). Only where this process is the database's only writer:
 * on PostgreSQL another replica may change the webhooks at any time.
 */
export function webhooksStore(r: Runner, cache: boolean): WebhooksStore {
  let cached: { all: Webhook[]; active: Webhook[] } | null = null
  // Counts writes, so a read that a commit overtook is answered but not kept.
  let writes = 0
  const lists = async () => {
    if (cached) return cached
    const seen = writes
    const all = (await r.all(ALL)).map(toWebhook)
    const read = { all, active: all.filter((w) => w.active) }
    if (cache && seen === writes) cached = read
    return read
  }
  return {
    ...deliveriesReads(r),
    list: async () => (await r.all(ALL)).map(toWebhook),
    // The dispatcher (jobs/webhooks.ts) asks one batch of events at a time, so answers keep event order.
    all: async () => (await lists()).all,
    active: async () => (await lists()).active,
    get: async (id) => orNull(await r.get(ONE, id)),
    async target(id) {
      const row = await r.get(ONE, id)
      return row ? { ...toWebhook(row), secret: row.secret } : null
    },
    changed() {
      writes++
      cached = null
    },
  }
}

// The task queue on PostgreSQL (twin of store/queue.ts): same claim order, same
// transitions; JSON arrays are matched as jsonb.
import type { SQL } from 'bun'
import type { Async } from '../index'
import { now } from '../db'
import { afterMs } from '../../lib/time'
import type { TaskStatus } from '../../lib/tasks'
import { CLAIM_ORDER, COLUMNS, maybe, must, queueCounts, type QueueStore, type QueueWrites, type Row } from '../queue'
import { intOrNull, q, type PgUnits } from './db'

/** Every entry of the task's `requires` is among the capabilities (a JSON array parameter): containment, for arrays of strings. */
const CAPABLE = 'tasks.requires::jsonb <@ ?::text::jsonb'
const RETURNING = `RETURNING ${COLUMNS}`

const fromPg = (r: Row | null): Row | null => r && { ...r, fence: intOrNull(r.fence) }

export function pgQueueWrites(u: PgUnits): Async<QueueWrites> {
  const insert = q<Row>(
    `INSERT INTO tasks (queue, title, payload, priority, status, depends_on, requires, max_attempts, last_error, dedupe_key, created_at, updated_at)
     VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?) ${RETURNING}`,
  )
  const edges = q('INSERT INTO task_deps (task_id, depends_on) SELECT ?, d::int FROM jsonb_array_elements_text(?::text::jsonb) d')
  const one = q<Row>(`SELECT ${COLUMNS} FROM tasks WHERE id = ?`)
  const dedupe = q<Row>(`SELECT ${COLUMNS} FROM tasks WHERE queue = ? AND dedupe_key = ? AND status IN ('blocked', 'ready', 'claimed')`)
  // In the order of the ids given, as the SQLite store's one lookup per id.
  const statuses = q<{ id: number; status: TaskStatus }>(
    `SELECT t.id, t.status FROM jsonb_array_elements_text(?::text::jsonb) WITH ORDINALITY AS x(v, n)
     JOIN tasks t ON t.id = x.v::bigint WHERE t.queue = ? ORDER BY x.n`,
  )
  const next = q<Row>(
    `SELECT ${COLUMNS} FROM tasks WHERE queue = ? AND status = 'ready' AND (available_at IS NULL OR available_at <= ?) AND ${CAPABLE}
     ${CLAIM_ORDER} LIMIT 1`,
  )
  const nextAvailable = q<{ at: string | null }>(
    `SELECT MIN(available_at) AS at FROM tasks WHERE queue = ? AND status = 'ready' AND available_at > ? AND ${CAPABLE}`,
  )
  const claim = q<Row>(
    `UPDATE tasks SET status = 'claimed', attempts = attempts + 1, claimed_by = ?, claim_id = ?, fence = ?, visible_until = ?,
     available_at = NULL, updated_at = ? WHERE id = ? ${RETURNING}`,
  )
  // Finished tasks keep claimed_by (who had it last) and fence; the live-claim columns are cleared.
  const complete = q<Row>(
    `UPDATE tasks SET status = 'done', result = ?, claim_id = NULL, visible_until = NULL, updated_at = ? WHERE id = ? ${RETURNING}`,
  )
  const fail = q<Row>(
    `UPDATE tasks SET status = 'failed', last_error = ?, claim_id = NULL, visible_until = NULL, available_at = NULL, updated_at = ?
     WHERE id = ? ${RETURNING}`,
  )
  const cancel = q<Row>(
    `UPDATE tasks SET status = 'cancelled', claim_id = NULL, visible_until = NULL, available_at = NULL, updated_at = ?
     WHERE id = ? ${RETURNING}`,
  )
  const requeue = q<Row>(
    `UPDATE tasks SET status = 'ready', claimed_by = NULL, claim_id = NULL, visible_until = NULL, available_at = ?, last_error = ?,
     updated_at = ? WHERE id = ? ${RETURNING}`,
  )
  const unblock = q<Row>(`UPDATE tasks SET status = 'ready', updated_at = ? WHERE id = ? ${RETURNING}`)
  const extend = q<Row>(`UPDATE tasks SET visible_until = ?, updated_at = ? WHERE id = ? ${RETURNING}`)
  const dependents = q<Row>(
    `SELECT ${COLUMNS} FROM tasks WHERE status = 'blocked' AND id IN (SELECT task_id FROM task_deps WHERE depends_on = ?) ORDER BY id`,
  )
  const pending = q<{ n: number }>(
    `SELECT COUNT(*)::int AS n FROM task_deps d JOIN tasks t ON t.id = d.depends_on WHERE d.task_id = ? AND t.status != 'done'`,
  )
  const claimedBy = q<Row>(`SELECT ${COLUMNS} FROM tasks WHERE status = 'claimed' AND claimed_by = ? ORDER BY id`)
  const timedOut = q<Row>(`SELECT ${COLUMNS} FROM tasks WHERE status = 'claimed' AND visible_until IS NOT NULL AND visible_until <= ? ORDER BY id`)
  const many = async (rows: Promise<Row[]>) => (await rows).map((r) => must(fromPg(r)))
  return {
    async insert(t, st, lastError) {
      const at = now()
      const row = await insert.get(
        u.tx, t.queue, t.title, JSON.stringify(t.payload), t.priority, st, JSON.stringify(t.depends_on), JSON.stringify(t.requires),
        t.max_attempts, lastError, t.dedupe_key, at, at,
      )
      const task = must(fromPg(row))
      if (t.depends_on.length) await edges.run(u.tx, task.id, JSON.stringify(t.depends_on))
      return task
    },
    get: async (id) => maybe(fromPg(await one.get(u.tx, id))),
    byDedupeKey: async (queue, key) => maybe(fromPg(await dedupe.get(u.tx, queue, key))),
    statuses: async (queue, ids) => (ids.length ? statuses.all(u.tx, JSON.stringify(ids), queue) : []),
    nextClaimable: async (queue, caps, at) => maybe(fromPg(await next.get(u.tx, queue, at, JSON.stringify(caps)))),
    nextAvailable: async (queue, caps, at) => (await nextAvailable.get(u.tx, queue, at, JSON.stringify(caps)))?.at ?? null,
    claim: async (id, c) => {
      const at = now()
      return must(fromPg(await claim.get(u.tx, c.instanceId, c.claimId, c.fence, c.visibilityMs === null ? null : afterMs(at, c.visibilityMs), at, id)))
    },
    complete: async (id, result) => must(fromPg(await complete.get(u.tx, JSON.stringify(result ?? null), now(), id))),
    fail: async (id, lastError) => must(fromPg(await fail.get(u.tx, lastError, now(), id))),
    cancel: async (id) => must(fromPg(await cancel.get(u.tx, now(), id))),
    requeue: async (id, availableAt, lastError) => must(fromPg(await requeue.get(u.tx, availableAt, lastError, now(), id))),
    unblock: async (id) => must(fromPg(await unblock.get(u.tx, now(), id))),
    extend: async (id, visibilityMs) => {
      const at = now()
      return must(fromPg(await extend.get(u.tx, afterMs(at, visibilityMs), at, id)))
    },
    blockedDependents: (id) => many(dependents.all(u.tx, id)),
    pendingDependencies: async (id) => (await pending.get(u.tx, id))!.n,
    claimedBy: (instanceId) => many(claimedBy.all(u.tx, instanceId)),
    timedOut: (at) => many(timedOut.all(u.tx, at)),
  }
}

export function pgQueueStore(sql: SQL): QueueStore {
  const one = q<Row>(`SELECT ${COLUMNS} FROM tasks WHERE id = ?`)
  // LIMIT NULL is no limit, as SQLite's LIMIT -1.
  const all = q<Row>(`SELECT ${COLUMNS} FROM tasks WHERE queue = ? ${CLAIM_ORDER} LIMIT ?`)
  const byStatus = q<Row>(`SELECT ${COLUMNS} FROM tasks WHERE queue = ? AND status = ? ${CLAIM_ORDER} LIMIT ?`)
  const counts = q<{ queue: string; status: TaskStatus; n: number }>(
    'SELECT queue, status, COUNT(*)::int AS n FROM tasks GROUP BY queue, status ORDER BY queue',
  )
  return {
    get: async (id) => maybe(fromPg(await one.get(sql, id))),
    async list(queue, status, limit = -1) {
      const max = limit < 0 ? null : limit
      const rows = await (status ? byStatus.all(sql, queue, status, max) : all.all(sql, queue, max))
      return rows.map((r) => must(fromPg(r)))
    },
    queues: async () => queueCounts(await counts.all(sql)),
  }
}

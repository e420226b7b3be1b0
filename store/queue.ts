// Task queue tables: tasks and their dependency edges. Claim order is priority
// (higher first), then creation (id). SQL only: which transition is allowed is
// decided by services/queue.ts inside one unit of work.
import type { Database } from 'bun:sqlite'
import { now } from './db'
import { afterMs } from '../lib/time'
import type { NewTask, TaskStatus } from '../lib/tasks'

export interface Task {
  id: number
  queue: string
  title: string
  payload: unknown
  priority: number
  status: TaskStatus
  depends_on: number[]
  requires: string[]
  attempts: number
  max_attempts: number
  claimed_by: string | null
  claim_id: string | null
  fence: number | null
  visible_until: string | null
  /** A nacked task with delay_ms is not claimable before this instant (null: claimable now). */
  available_at: string | null
  result: unknown
  last_error: string | null
  dedupe_key: string | null
  created_at: string
  updated_at: string
}

export type QueueCounts = Record<TaskStatus, number>

export interface QueueStore {
  get(id: number): Promise<Task | null>
  /** A queue's tasks in claim order, optionally of one status. */
  list(queue: string, status?: TaskStatus, limit?: number): Promise<Task[]>
  /** Every queue that has tasks, by name, with its count per status. */
  queues(): Promise<{ queue: string; counts: QueueCounts }[]>
}

export interface Claim {
  instanceId: string
  claimId: string
  fence: number
  /** visible_until is this long after the claim's updated_at (one instant for both); null for none. */
  visibilityMs: number | null
}

export interface QueueWrites {
  insert(task: NewTask, status: TaskStatus, lastError: string | null): Task
  get(id: number): Task | null
  /** The unfinished task of `queue` with this dedupe key. */
  byDedupeKey(queue: string, key: string): Task | null
  /** Id and status of those of `ids` that are tasks of `queue`. */
  statuses(queue: string, ids: number[]): { id: number; status: TaskStatus }[]
  /** The first task in claim order that is ready, available at `at`, and needs no capability outside `capabilities`. */
  nextClaimable(queue: string, capabilities: string[], at: string): Task | null
  /** The earliest instant after `at` when a delayed task of `queue` such a claimer could take becomes available. */
  nextAvailable(queue: string, capabilities: string[], at: string): string | null
  claim(id: number, claim: Claim): Task
  complete(id: number, result: unknown): Task
  fail(id: number, lastError: string): Task
  cancel(id: number): Task
  /** Back to ready, the claim cleared; claimable from `availableAt` (null: at once). */
  requeue(id: number, availableAt: string | null, lastError: string): Task
  unblock(id: number): Task
  /** visible_until = the update's instant + `visibilityMs`. */
  extend(id: number, visibilityMs: number): Task
  /** Blocked tasks that depend on `id`. */
  blockedDependents(id: number): Task[]
  /** How many dependencies of `id` are not done. */
  pendingDependencies(id: number): number
  claimedBy(instanceId: string): Task[]
  /** Claimed tasks whose visible_until is at or before `at`. */
  timedOut(at: string): Task[]
}

export type Row = Omit<Task, 'payload' | 'depends_on' | 'requires' | 'result'> & {
  payload: string
  depends_on: string
  requires: string
  result: string | null
}

export const COLUMNS = `id, queue, title, payload, priority, status, depends_on, requires, attempts, max_attempts, claimed_by,
  claim_id, fence, visible_until, available_at, result, last_error, dedupe_key, created_at, updated_at`
export const CLAIM_ORDER = 'ORDER BY priority DESC, id'
/** Every entry of the task's `requires` is among the capabilities (a JSON array parameter). */
const CAPABLE = 'NOT EXISTS (SELECT 1 FROM json_each(tasks.requires) r WHERE r.value NOT IN (SELECT value FROM json_each(?)))'

const toTask = (r: Row): Task => ({
  ...r,
  payload: JSON.parse(r.payload),
  depends_on: JSON.parse(r.depends_on),
  requires: JSON.parse(r.requires),
  result: r.result === null ? null : JSON.parse(r.result),
})
export const maybe = (r: Row | null): Task | null => (r ? toTask(r) : null)
export const must = (r: Row | null): Task => {
  if (!r) throw new Error('task vanished inside its unit')
  return toTask(r)
}

export function queueWrites(db: Database): QueueWrites {
  const insert = db.query<Row, (string | number | null)[]>(
    `INSERT INTO tasks (queue, title, payload, priority, status, depends_on, requires, max_attempts, last_error, dedupe_key, created_at, updated_at)
     VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?) RETURNING ${COLUMNS}`,
  )
  const edge = db.query<null, [number, number]>('INSERT INTO task_deps (task_id, depends_on) VALUES (?, ?)')
  const one = db.query<Row, [number]>(`SELECT ${COLUMNS} FROM tasks WHERE id = ?`)
  const dedupe = db.query<Row, [string, string]>(
    `SELECT ${COLUMNS} FROM tasks WHERE queue = ? AND dedupe_key = ? AND status IN ('blocked', 'ready', 'claimed')`,
  )
  const status = db.query<{ id: number; status: TaskStatus }, [string, number]>('SELECT id, status FROM tasks WHERE queue = ? AND id = ?')
  const next = db.query<Row, [string, string, string]>(
    `SELECT ${COLUMNS} FROM tasks WHERE queue = ? AND status = 'ready' AND (available_at IS NULL OR available_at <= ?) AND ${CAPABLE}
     ${CLAIM_ORDER} LIMIT 1`,
  )
  const nextAvailable = db.query<{ at: string | null }, [string, string, string]>(
    `SELECT MIN(available_at) AS at FROM tasks WHERE queue = ? AND status = 'ready' AND available_at > ? AND ${CAPABLE}`,
  )
  const claim = db.query<Row, [string, string, number, string | null, string, number]>(
    `UPDATE tasks SET status = 'claimed', attempts = attempts + 1, claimed_by = ?, claim_id = ?, fence = ?, visible_until = ?,
     available_at = NULL, updated_at = ? WHERE id = ? RETURNING ${COLUMNS}`,
  )
  // Finished tasks keep claimed_by (who had it last) and fence; the live-claim columns are cleared.
  const complete = db.query<Row, [string, string, number]>(
    `UPDATE tasks SET status = 'done', result = ?, claim_id = NULL, visible_until = NULL, updated_at = ? WHERE id = ? RETURNING ${COLUMNS}`,
  )
  const fail = db.query<Row, [string, string, number]>(
    `UPDATE tasks SET status = 'failed', last_error = ?, claim_id = NULL, visible_until = NULL, available_at = NULL, updated_at = ?
     WHERE id = ? RETURNING ${COLUMNS}`,
  )
  const cancel = db.query<Row, [string, number]>(
    `UPDATE tasks SET status = 'cancelled', claim_id = NULL, visible_until = NULL, available_at = NULL, updated_at = ?
     WHERE id = ? RETURNING ${COLUMNS}`,
  )
  const requeue = db.query<Row, [string | null, string, string, number]>(
    `UPDATE tasks SET status = 'ready', claimed_by = NULL, claim_id = NULL, visible_until = NULL, available_at = ?, last_error = ?,
     updated_at = ? WHERE id = ? RETURNING ${COLUMNS}`,
  )
  const unblock = db.query<Row, [string, number]>(`UPDATE tasks SET status = 'ready', updated_at = ? WHERE id = ? RETURNING ${COLUMNS}`)
  const extend = db.query<Row, [string, string, number]>(`UPDATE tasks SET visible_until = ?, updated_at = ? WHERE id = ? RETURNING ${COLUMNS}`)
  const dependents = db.query<Row, [number]>(
    `SELECT ${COLUMNS} FROM tasks WHERE status = 'blocked' AND id IN (SELECT task_id FROM task_deps WHERE depends_on = ?) ORDER BY id`,
  )
  const pending = db.query<{ n: number }, [number]>(
    `SELECT COUNT(*) AS n FROM task_deps d JOIN tasks t ON t.id = d.depends_on WHERE d.task_id = ? AND t.status != 'done'`,
  )
  const claimedBy = db.query<Row, [string]>(`SELECT ${COLUMNS} FROM tasks WHERE status = 'claimed' AND claimed_by = ? ORDER BY id`)
  const timedOut = db.query<Row, [string]>(
    `SELECT ${COLUMNS} FROM tasks WHERE status = 'claimed' AND visible_until IS NOT NULL AND visible_until <= ? ORDER BY id`,
  )
  return {
    insert(t, st, lastError) {
      const at = now()
      const task = toTask(
        insert.get(
          t.queue, t.title, JSON.stringify(t.payload), t.priority, st, JSON.stringify(t.depends_on), JSON.stringify(t.requires),
          t.max_attempts, lastError, t.dedupe_key, at, at,
        )!,
      )
      for (const dep of t.depends_on) edge.run(task.id, dep)
      return task
    },
    get: (id) => maybe(one.get(id)),
    byDedupeKey: (queue, key) => maybe(dedupe.get(queue, key)),
    statuses: (queue, ids) => ids.flatMap((id) => status.all(queue, id)),
    nextClaimable: (queue, caps, at) => maybe(next.get(queue, at, JSON.stringify(caps))),
    nextAvailable: (queue, caps, at) => nextAvailable.get(queue, at, JSON.stringify(caps))?.at ?? null,
    claim: (id, c) => {
      const at = now()
      return must(claim.get(c.instanceId, c.claimId, c.fence, c.visibilityMs === null ? null : afterMs(at, c.visibilityMs), at, id))
    },
    complete: (id, result) => must(complete.get(JSON.stringify(result ?? null), now(), id)),
    fail: (id, lastError) => must(fail.get(lastError, now(), id)),
    cancel: (id) => must(cancel.get(now(), id)),
    requeue: (id, availableAt, lastError) => must(requeue.get(availableAt, lastError, now(), id)),
    unblock: (id) => must(unblock.get(now(), id)),
    extend: (id, visibilityMs) => {
      const at = now()
      return must(extend.get(afterMs(at, visibilityMs), at, id))
    },
    blockedDependents: (id) => dependents.all(id).map(toTask),
    pendingDependencies: (id) => pending.get(id)!.n,
    claimedBy: (instanceId) => claimedBy.all(instanceId).map(toTask),
    timedOut: (at) => timedOut.all(at).map(toTask),
  }
}

/** Per-queue counts from (queue, status, n) rows ordered by queue. */
export function queueCounts(rows: { queue: string; status: TaskStatus; n: number }[]): { queue: string; counts: QueueCounts }[] {
  const out = new Map<string, QueueCounts>()
  for (const { queue, status, n } of rows) {
    let c = out.get(queue)
    if (!c) out.set(queue, (c = { blocked: 0, ready: 0, claimed: 0, done: 0, failed: 0, cancelled: 0 }))
    c[status] = n
  }
  return [...out].map(([queue, counts]) => ({ queue, counts }))
}

export function queueStore(db: Database): QueueStore {
  const one = db.query<Row, [number]>(`SELECT ${COLUMNS} FROM tasks WHERE id = ?`)
  const all = db.query<Row, [string, number]>(`SELECT ${COLUMNS} FROM tasks WHERE queue = ? ${CLAIM_ORDER} LIMIT ?`)
  const byStatus = db.query<Row, [string, string, number]>(`SELECT ${COLUMNS} FROM tasks WHERE queue = ? AND status = ? ${CLAIM_ORDER} LIMIT ?`)
  const counts = db.query<{ queue: string; status: TaskStatus; n: number }, []>(
    'SELECT queue, status, COUNT(*) AS n FROM tasks GROUP BY queue, status ORDER BY queue',
  )
  return {
    get: async (id) => maybe(one.get(id)),
    list: async (queue, status, limit = -1) => (status ? byStatus.all(queue, status, limit) : all.all(queue, limit)).map(toTask),
    queues: async () => queueCounts(counts.all()),
  }
}

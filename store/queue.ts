// Task queue tables: tasks and their dependency edges. Claim order is priority
// (higher first), then creation (id). SQL only: which transition is allowed is
// decided by services/queue.ts inside one unit of work.
import { nowIso } from '../lib/time'
import { int, intOrNull, stmt, type Dialect, type Runner } from './runner'
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
  insert(task: NewTask, status: TaskStatus, lastError: string | null): Promise<Task>
  get(id: number): Promise<Task | null>
  /** The unfinished task of `queue` with this dedupe key. */
  byDedupeKey(queue: string, key: string): Promise<Task | null>
  /** Id and status of those of `ids` that are tasks of `queue`. */
  statuses(queue: string, ids: number[]): Promise<{ id: number; status: TaskStatus }[]>
  /** The first task in claim order that is ready, available at `at`, and needs no capability outside `capabilities`. */
  nextClaimable(queue: string, capabilities: string[], at: string): Promise<Task | null>
  /** The earliest instant after `at` when a delayed task of `queue` such a claimer could take becomes available. */
  nextAvailable(queue: string, capabilities: string[], at: string): Promise<string | null>
  claim(id: number, claim: Claim): Promise<Task>
  complete(id: number, result: unknown): Promise<Task>
  fail(id: number, lastError: string): Promise<Task>
  cancel(id: number): Promise<Task>
  /** Back to ready, the claim cleared; claimable from `availableAt` (null: at once). */
  requeue(id: number, availableAt: string | null, lastError: string): Promise<Task>
  unblock(id: number): Promise<Task>
  /** visible_until = the update's instant + `visibilityMs`. */
  extend(id: number, visibilityMs: number): Promise<Task>
  /** Blocked tasks that depend on `id`. */
  blockedDependents(id: number): Promise<Task[]>
  /** How many dependencies of `id` are not done. */
  pendingDependencies(id: number): Promise<number>
  claimedBy(instanceId: string): Promise<Task[]>
  /** Claimed tasks whose visible_until is at or before `at`. */
  timedOut(at: string): Promise<Task[]>
}

type Row = Omit<Task, 'payload' | 'depends_on' | 'requires' | 'result' | 'fence'> & {
  payload: string
  depends_on: string
  requires: string
  result: string | null
  fence: number | string | null
}

const COLUMNS = `id, queue, title, payload, priority, status, depends_on, requires, attempts, max_attempts, claimed_by,
  claim_id, fence, visible_until, available_at, result, last_error, dedupe_key, created_at, updated_at`
const RETURNING = `RETURNING ${COLUMNS}`
const CLAIM_ORDER = 'ORDER BY priority DESC, id'

const toTask = (r: Row): Task => ({
  ...r,
  payload: JSON.parse(r.payload),
  depends_on: JSON.parse(r.depends_on),
  requires: JSON.parse(r.requires),
  fence: intOrNull(r.fence),
  result: r.result === null ? null : JSON.parse(r.result),
})
const maybe = (r: Row | null): Task | null => (r ? toTask(r) : null)
const must = (r: Row | null): Task => {
  if (!r) throw new Error('task vanished inside its unit')
  return toTask(r)
}

const INSERT = stmt<Row>(
  `INSERT INTO tasks (queue, title, payload, priority, status, depends_on, requires, max_attempts, last_error, dedupe_key, created_at, updated_at)
   VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?) ${RETURNING}`,
)
const ONE = stmt<Row>(`SELECT ${COLUMNS} FROM tasks WHERE id = ?`)
const DEDUPE = stmt<Row>(`SELECT ${COLUMNS} FROM tasks WHERE queue = ? AND dedupe_key = ? AND status IN ('blocked', 'ready', 'claimed')`)
const CLAIM = stmt<Row>(
  `UPDATE tasks SET status = 'claimed', attempts = attempts + 1, claimed_by = ?, claim_id = ?, fence = ?, visible_until = ?,
   available_at = NULL, updated_at = ? WHERE id = ? ${RETURNING}`,
)
// Finished tasks keep claimed_by (who had it last) and fence; the live-claim columns are cleared.
const COMPLETE = stmt<Row>(
  `UPDATE tasks SET status = 'done', result = ?, claim_id = NULL, visible_until = NULL, updated_at = ? WHERE id = ? ${RETURNING}`,
)
const FAIL = stmt<Row>(
  `UPDATE tasks SET status = 'failed', last_error = ?, claim_id = NULL, visible_until = NULL, available_at = NULL, updated_at = ?
   WHERE id = ? ${RETURNING}`,
)
const CANCEL = stmt<Row>(
  `UPDATE tasks SET status = 'cancelled', claim_id = NULL, visible_until = NULL, available_at = NULL, updated_at = ?
   WHERE id = ? ${RETURNING}`,
)
const REQUEUE = stmt<Row>(
  `UPDATE tasks SET status = 'ready', claimed_by = NULL, claim_id = NULL, visible_until = NULL, available_at = ?, last_error = ?,
   updated_at = ? WHERE id = ? ${RETURNING}`,
)
const UNBLOCK = stmt<Row>(`UPDATE tasks SET status = 'ready', updated_at = ? WHERE id = ? ${RETURNING}`)
const EXTEND = stmt<Row>(`UPDATE tasks SET visible_until = ?, updated_at = ? WHERE id = ? ${RETURNING}`)
const DEPENDENTS = stmt<Row>(
  `SELECT ${COLUMNS} FROM tasks WHERE status = 'blocked' AND id IN (SELECT task_id FROM task_deps WHERE depends_on = ?) ORDER BY id`,
)
const PENDING = stmt<{ n: number | string }>(
  `SELECT COUNT(*) AS n FROM task_deps d JOIN tasks t ON t.id = d.depends_on WHERE d.task_id = ? AND t.status != 'done'`,
)
const CLAIMED_BY = stmt<Row>(`SELECT ${COLUMNS} FROM tasks WHERE status = 'claimed' AND claimed_by = ? ORDER BY id`)
const TIMED_OUT = stmt<Row>(`SELECT ${COLUMNS} FROM tasks WHERE status = 'claimed' AND visible_until IS NOT NULL AND visible_until <= ? ORDER BY id`)
const ALL = stmt<Row>(`SELECT ${COLUMNS} FROM tasks WHERE queue = ? ${CLAIM_ORDER} LIMIT ?`)
const BY_STATUS = stmt<Row>(`SELECT ${COLUMNS} FROM tasks WHERE queue = ? AND status = ? ${CLAIM_ORDER} LIMIT ?`)
const COUNTS = stmt<{ queue: string; status: TaskStatus; n: number | string }>(
  'SELECT queue, status, COUNT(*) AS n FROM tasks GROUP BY queue, status ORDER BY queue',
)

export function queueWrites(w: Runner, d: Dialect): QueueWrites {
  const edges = stmt(`INSERT INTO task_deps (task_id, depends_on) SELECT ?, CAST(x.value AS INTEGER) FROM ${d.elements('?')}`)
  // In the order of the ids given.
  const statuses = stmt<{ id: number; status: TaskStatus }>(
    `SELECT t.id, t.status FROM ${d.elements('?')} JOIN tasks t ON t.id = CAST(x.value AS INTEGER) WHERE t.queue = ? ORDER BY x.key`,
  )
  // Every entry of the task's `requires` is among the capabilities (a JSON array parameter).
  const capable = d.within('tasks.requires', '?')
  const next = stmt<Row>(
    `SELECT ${COLUMNS} FROM tasks WHERE queue = ? AND status = 'ready' AND (available_at IS NULL OR available_at <= ?) AND ${capable}
     ${CLAIM_ORDER} LIMIT 1`,
  )
  const nextAvailable = stmt<{ at: string | null }>(
    `SELECT MIN(available_at) AS at FROM tasks WHERE queue = ? AND status = 'ready' AND available_at > ? AND ${capable}`,
  )
  const many = async (rows: Promise<Row[]>) => (await rows).map(toTask)
  return {
    async insert(t, st, lastError) {
      const at = nowIso()
      const row = await w.get(
        INSERT, t.queue, t.title, JSON.stringify(t.payload), t.priority, st, JSON.stringify(t.depends_on), JSON.stringify(t.requires),
        t.max_attempts, lastError, t.dedupe_key, at, at,
      )
      const task = must(row)
      if (t.depends_on.length) await w.run(edges, task.id, JSON.stringify(t.depends_on))
      return task
    },
    get: async (id) => maybe(await w.get(ONE, id)),
    byDedupeKey: async (queue, key) => maybe(await w.get(DEDUPE, queue, key)),
    statuses: async (queue, ids) => (ids.length ? w.all(statuses, JSON.stringify(ids), queue) : []),
    nextClaimable: async (queue, caps, at) => maybe(await w.get(next, queue, at, JSON.stringify(caps))),
    nextAvailable: async (queue, caps, at) => (await w.get(nextAvailable, queue, at, JSON.stringify(caps)))?.at ?? null,
    async claim(id, c) {
      const at = nowIso()
      return must(await w.get(CLAIM, c.instanceId, c.claimId, c.fence, c.visibilityMs === null ? null : afterMs(at, c.visibilityMs), at, id))
    },
    complete: async (id, result) => must(await w.get(COMPLETE, JSON.stringify(result ?? null), nowIso(), id)),
    fail: async (id, lastError) => must(await w.get(FAIL, lastError, nowIso(), id)),
    cancel: async (id) => must(await w.get(CANCEL, nowIso(), id)),
    requeue: async (id, availableAt, lastError) => must(await w.get(REQUEUE, availableAt, lastError, nowIso(), id)),
    unblock: async (id) => must(await w.get(UNBLOCK, nowIso(), id)),
    async extend(id, visibilityMs) {
      const at = nowIso()
      return must(await w.get(EXTEND, afterMs(at, visibilityMs), at, id))
    },
    blockedDependents: (id) => many(w.all(DEPENDENTS, id)),
    pendingDependencies: async (id) => int((await w.get(PENDING, id))!.n),
    claimedBy: (instanceId) => many(w.all(CLAIMED_BY, instanceId)),
    timedOut: (at) => many(w.all(TIMED_OUT, at)),
  }
}

export function queueStore(r: Runner, d: Dialect): QueueStore {
  return {
    get: async (id) => maybe(await r.get(ONE, id)),
    async list(queue, status, limit = -1) {
      const max = limit < 0 ? d.noLimit : limit
      return (await (status ? r.all(BY_STATUS, queue, status, max) : r.all(ALL, queue, max))).map(toTask)
    },
    async queues() {
      const out = new Map<string, QueueCounts>()
      for (const { queue, status, n } of await r.all(COUNTS)) {
        let c = out.get(queue)
        if (!c) out.set(queue, (c = { blocked: 0, ready: 0, claimed: 0, done: 0, failed: 0, cancelled: 0 }))
        c[status] = int(n)
      }
      return [...out].map(([queue, counts]) => ({ queue, counts }))
    },
  }
}

// Task queue tables: tasks, their dependency edges and their notes. Claim order is
// priority (higher first), then creation (id). SQL only: which transition is allowed
// is decided by services/queue.ts inside one unit of work.
import { nowIso } from '../lib/time'
import { int, intOrNull, send, stmt, type Dialect, type Runner } from './runner'
import { afterMs } from '../lib/time'
import { MAX_PRIORITY, type NewTask, type TaskStatus } from '../lib/tasks'

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
  /** The files the task will touch: a claim reserves `paths` of `project` for the claimer (null: none). */
  project: string | null
  paths: string[] | null
  /** The reservation the live claim took of `paths` (null when not claimed, or the task names no paths). */
  reservation_id: string | null
  created_at: string
  updated_at: string
}

/** Context one attempt leaves for the next: `by` is the instance name, `attempt` the task's attempts when written. */
export interface Note {
  at: string
  by: string
  attempt: number
  text: string
}

/**
 * What a claim's scan needs of a claimable task: no payload or result, which a scan of
 * large tasks would parse by the page to take one (claim() answers the whole task).
 */
export type ClaimCandidate = Pick<Task, 'id' | 'priority' | 'project' | 'paths'>

/** Where claims resume scanning: after this task in claim order. */
export interface ClaimCursor {
  priority: number
  id: number
}

export type QueueCounts = Record<TaskStatus, number>

/** JSON text as stored (a task's payload or result). */
export interface StoredJson {
  json: string
}

/**
 * A task as a listing reads it: payload and result left as their stored JSON text, to be
 * spliced into the answer (tasksJson). Parsing and serializing them again cost a listing
 * of large tasks seconds of the request thread (issue 38).
 */
export type StoredTask = Omit<Task, 'payload' | 'result'> & { payload: StoredJson; result: StoredJson }

export interface QueueStore {
  get(id: number): Promise<Task | null>
  /** A queue's tasks in claim order, optionally of one status. */
  list(queue: string, status?: TaskStatus, limit?: number): Promise<Task[]>
  /** Up to `limit` of the same after `after` in claim order (from the start when null), payload and result as stored JSON text (for an answer: tasksJson). */
  listStored(queue: string, status: TaskStatus | undefined, after: ClaimCursor | null, limit: number): Promise<StoredTask[]>
  /** Every queue that has tasks, by name, with its count per status. */
  queues(): Promise<{ queue: string; counts: QueueCounts }[]>
  /** The notes of each of `ids`, oldest first (one query for a page of tasks; tasks without notes are absent). */
  notes(ids: number[]): Promise<Map<number, Note[]>>
  /** The tasks an instance holds a live claim on, by id (on committed data). */
  claimedBy(instanceId: string): Promise<Task[]>
}

export interface Claim {
  instanceId: string
  claimId: string
  fence: number
  /** visible_until is this long after the claim's updated_at (one instant for both); null for none. */
  visibilityMs: number | null
  /** The reservation the claim took of the task's paths. */
  reservationId?: string | null
}

export interface QueueWrites {
  insert(task: NewTask, status: TaskStatus, lastError: string | null): Promise<Task>
  get(id: number): Promise<Task | null>
  /** The unfinished task of `queue` with this dedupe key. */
  byDedupeKey(queue: string, key: string): Promise<Task | null>
  /** Id and status of those of `ids` that are tasks of `queue`. */
  statuses(queue: string, ids: number[]): Promise<{ id: number; status: TaskStatus }[]>
  /** The first task in claim order that is ready, available at `at`, and needs no capability outside `capabilities`. */
  nextClaimable(queue: string, capabilities: string[], at: string): Promise<ClaimCandidate | null>
  /**
   * Up to `limit` such tasks in claim order, after `after` (from the start when null). `capabilities`
   * may be asked for: only when the queue has ready tasks that require some.
   */
  claimable(queue: string, capabilities: string[] | (() => Promise<string[]>), at: string, after: ClaimCursor | null, limit: number): Promise<ClaimCandidate[]>
  /** The earliest instant after `at` when a delayed task of `queue` such a claimer could take becomes available. */
  nextAvailable(queue: string, capabilities: string[], at: string): Promise<string | null>
  claim(id: number, claim: Claim): Promise<Task>
  /** Done with `result`; `read` is the task as its unit has just read it, when it has (then nothing is read back). */
  complete(id: number, result: unknown, read?: Task): Promise<Task>
  fail(id: number, lastError: string): Promise<Task>
  cancel(id: number): Promise<Task>
  /** Back to ready, the claim cleared; claimable from `availableAt` (null: at once). */
  requeue(id: number, availableAt: string | null, lastError: string): Promise<Task>
  /** A finished task starts over as `status`: attempts 0, no claim, claimable at once; last_error, result and fence stay. */
  restart(id: number, status: 'ready' | 'blocked'): Promise<Task>
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
  addNote(taskId: number, note: Note): Promise<void>
  notes(ids: number[]): Promise<Map<number, Note[]>>
}

type Row = Omit<Task, 'payload' | 'depends_on' | 'requires' | 'result' | 'fence' | 'paths'> & {
  payload: string
  depends_on: string
  requires: string
  result: string | null
  fence: number | string | null
  paths: string | null
}

const COLUMNS = `id, queue, title, payload, priority, status, depends_on, requires, attempts, max_attempts, claimed_by,
  claim_id, fence, visible_until, available_at, result, last_error, dedupe_key, project, paths, reservation_id, created_at, updated_at`
const RETURNING = `RETURNING ${COLUMNS}`
const CLAIM_ORDER = 'ORDER BY priority DESC, id'
/** Before the first task in claim order: above every allowed priority. */
const START: ClaimCursor = { priority: MAX_PRIORITY + 1, id: 0 }

/** The columns other than payload and result, as a Task has them. */
const fields = (r: Row) => ({
  ...r,
  depends_on: JSON.parse(r.depends_on) as number[],
  requires: JSON.parse(r.requires) as string[],
  fence: intOrNull(r.fence),
  paths: r.paths === null ? null : (JSON.parse(r.paths) as string[]),
})
const toTask = (r: Row): Task => ({ ...fields(r), payload: JSON.parse(r.payload), result: r.result === null ? null : JSON.parse(r.result) })
const toStored = (r: Row): StoredTask => ({ ...fields(r), payload: { json: r.payload }, result: { json: r.result ?? 'null' } })

/** Listed tasks as the elements of a JSON array (no brackets): their stored payload and result spliced in as they are, the other fields serialized. */
export function tasksJson(tasks: readonly StoredTask[]): string {
  return tasks.map(({ payload, result, ...rest }) => `${JSON.stringify(rest).slice(0, -1)},"payload":${payload.json},"result":${result.json}}`).join(',')
}
const many = async (rows: Promise<Row[]>) => (await rows).map(toTask)
const maybe = (r: Row | null): Task | null => (r ? toTask(r) : null)
const present = (r: Row | null): Row => {
  if (!r) throw new Error('task vanished inside its unit')
  return r
}
const must = (r: Row | null): Task => toTask(present(r))

const INSERT = stmt<Row>(
  `INSERT INTO tasks (queue, title, payload, priority, status, depends_on, requires, max_attempts, last_error, dedupe_key, project, paths,
   created_at, updated_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?) ${RETURNING}`,
)
const ONE = stmt<Row>(`SELECT ${COLUMNS} FROM tasks WHERE id = ?`)
const DEDUPE = stmt<Row>(`SELECT ${COLUMNS} FROM tasks WHERE queue = ? AND dedupe_key = ? AND status IN ('blocked', 'ready', 'claimed')`)
// The claim and the completion of every task cycle write without RETURNING, whose result row
// cost SQLite more than the update (on PostgreSQL the write goes out with the next statement).
const CLAIM = stmt(
  `UPDATE tasks SET status = 'claimed', attempts = attempts + 1, claimed_by = ?, claim_id = ?, fence = ?, visible_until = ?,
   available_at = NULL, reservation_id = ?, updated_at = ? WHERE id = ?`,
)
// Finished tasks keep claimed_by (who had it last) and fence; the live-claim columns (its reservation too) are cleared.
const COMPLETE = stmt(
  `UPDATE tasks SET status = 'done', result = ?, claim_id = NULL, visible_until = NULL, reservation_id = NULL, updated_at = ?
   WHERE id = ?`,
)
const FAIL = stmt<Row>(
  `UPDATE tasks SET status = 'failed', last_error = ?, claim_id = NULL, visible_until = NULL, available_at = NULL, reservation_id = NULL,
   updated_at = ? WHERE id = ? ${RETURNING}`,
)
const CANCEL = stmt<Row>(
  `UPDATE tasks SET status = 'cancelled', claim_id = NULL, visible_until = NULL, available_at = NULL, reservation_id = NULL, updated_at = ?
   WHERE id = ? ${RETURNING}`,
)
const REQUEUE = stmt<Row>(
  `UPDATE tasks SET status = 'ready', claimed_by = NULL, claim_id = NULL, visible_until = NULL, available_at = ?, last_error = ?,
   reservation_id = NULL, updated_at = ? WHERE id = ? ${RETURNING}`,
)
// last_error (what the run before ended with) and fence (fences never repeat) stay until a later claim replaces them.
const RESTART = stmt<Row>(
  `UPDATE tasks SET status = ?, attempts = 0, claimed_by = NULL, claim_id = NULL, visible_until = NULL, available_at = NULL,
   reservation_id = NULL, updated_at = ? WHERE id = ? ${RETURNING}`,
)
const UNBLOCK = stmt<Row>(`UPDATE tasks SET status = 'ready', updated_at = ? WHERE id = ? ${RETURNING}`)
const EXTEND = stmt<Row>(`UPDATE tasks SET visible_until = ?, updated_at = ? WHERE id = ? ${RETURNING}`)
/** Whether any task depends on the task: most have no dependents, and this is a key lookup where DEPENDENTS builds a list. */
const ANY_DEPENDENT = stmt<{ x: number }>('SELECT 1 AS x FROM task_deps WHERE depends_on = ? LIMIT 1')
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
// Keyset pages in claim order: after (priority, id) means a lower priority, or the same one and a later id.
const AFTER = '(priority < ? OR (priority = ? AND id > ?))'
const ALL_AFTER = stmt<Row>(`SELECT ${COLUMNS} FROM tasks WHERE queue = ? AND ${AFTER} ${CLAIM_ORDER} LIMIT ?`)
const BY_STATUS_AFTER = stmt<Row>(`SELECT ${COLUMNS} FROM tasks WHERE queue = ? AND status = ? AND ${AFTER} ${CLAIM_ORDER} LIMIT ?`)
const ADD_NOTE = stmt('INSERT INTO task_notes (task_id, at, by_name, attempt, text) VALUES (?, ?, ?, ?, ?)')
const COUNTS = stmt<{ queue: string; status: TaskStatus; n: number | string }>(
  'SELECT queue, status, COUNT(*) AS n FROM tasks GROUP BY queue, status ORDER BY queue',
)

/** The distinct `requires` of a queue's ready tasks, smallest first, one index seek each (a loose index scan). */
const SETS = `WITH RECURSIVE sets (requires) AS (
     SELECT MIN(requires) FROM tasks WHERE queue = ? AND status = 'ready'
     UNION ALL
     SELECT (SELECT MIN(t.requires) FROM tasks t WHERE t.queue = ? AND t.status = 'ready' AND t.requires > sets.requires) FROM sets WHERE sets.requires IS NOT NULL
   )`
type Candidate = { id: number | string; priority: number | string; project: string | null; paths: string | null }
/** Up to LIMIT claimable tasks of one `requires` set after the cursor, in claim order. */
const OF_SET = (requires: string) => `SELECT id, priority, project, paths FROM tasks WHERE queue = ? AND status = 'ready' AND requires = ${requires}
   AND (available_at IS NULL OR available_at <= ?) AND ${AFTER} ${CLAIM_ORDER} LIMIT ?`
const NO_REQUIRES = '[]'
/**
 * A claim's first read, in one statement: the `requires` sets of the queue's ready tasks
 * (rows with `requires`), and the candidates that require nothing, which every claimer
 * takes (rows with `id`). Through tasks_claim_requires (queue, requires, priority DESC, id
 * of the ready tasks), a claim reads only the sets its claimer meets, in claim order within each,
 * however many tasks it cannot take are ahead of them; sets are few.
 */
const CLAIM_HEAD = stmt<{ requires: string | null } & { [K in keyof Candidate]: Candidate[K] | null }>(
  `${SETS} SELECT requires, NULL AS id, NULL AS priority, NULL AS project, NULL AS paths FROM sets WHERE requires IS NOT NULL
   UNION ALL SELECT NULL, id, priority, project, paths FROM (${OF_SET(`'${NO_REQUIRES}'`)}) f`,
)
const NEXT_OF_SET = stmt<Candidate>(OF_SET('?'))
const READY_SETS = stmt<{ requires: string }>(`${SETS} SELECT requires FROM sets WHERE requires IS NOT NULL`)
const NEXT_AVAILABLE = stmt<{ at: string | null }>(
  `SELECT MIN(available_at) AS at FROM tasks WHERE queue = ? AND status = 'ready' AND requires = ? AND available_at > ?`,
)

type NoteRow = { task_id: number | string; at: string; by_name: string; attempt: number | string; text: string }
const NOTES_OF_ONE = stmt<NoteRow>('SELECT task_id, at, by_name, attempt, text FROM task_notes WHERE task_id = ? ORDER BY id')

/** The notes of a page of tasks in one query, grouped by task, oldest first. */
function notesReader(r: Runner, d: Dialect) {
  const q = stmt<NoteRow>(
    `SELECT task_id, at, by_name, attempt, text FROM task_notes
     WHERE task_id IN (SELECT CAST(x.value AS INTEGER) FROM ${d.elements('?')}) ORDER BY task_id, id`,
  )
  return async (ids: number[]): Promise<Map<number, Note[]>> => {
    const out = new Map<number, Note[]>()
    if (!ids.length) return out
    const unique = [...new Set(ids)]
    // One task (every claim, ack, nack): a lookup by key, no JSON array to build and walk.
    for (const n of await (unique.length === 1 ? r.all(NOTES_OF_ONE, unique[0]!) : r.all(q, JSON.stringify(unique)))) {
      const id = int(n.task_id)
      let list = out.get(id)
      if (!list) out.set(id, (list = []))
      list.push({ at: n.at, by: n.by_name, attempt: int(n.attempt), text: n.text })
    }
    return out
  }
}

/** The `requires` sets (as stored) whose every entry is among `caps`. */
function meets(sets: string[], caps: string[]): string[] {
  const have = new Set(caps)
  return sets.filter((set) => (JSON.parse(set) as string[]).every((c) => have.has(c)))
}

export function queueWrites(w: Runner, d: Dialect): QueueWrites {
  const edges = stmt(`INSERT INTO task_deps (task_id, depends_on) SELECT ?, CAST(x.value AS INTEGER) FROM ${d.elements('?')}`)
  // In the order of the ids given.
  const statuses = stmt<{ id: number; status: TaskStatus }>(
    `SELECT t.id, t.status FROM ${d.elements('?')} JOIN tasks t ON t.id = CAST(x.value AS INTEGER) WHERE t.queue = ? ORDER BY x.key`,
  )
  const claimable = async (queue: string, caps: string[] | (() => Promise<string[]>), at: string, after: ClaimCursor | null, limit: number): Promise<ClaimCandidate[]> => {
    const c = after ?? START
    const head = await w.all(CLAIM_HEAD, queue, queue, queue, at, c.priority, c.priority, c.id, limit)
    const lists: Candidate[][] = [head.filter((r): r is Candidate & { requires: null } => r.id !== null)]
    const sets = head.flatMap((r) => (r.requires !== null && r.requires !== NO_REQUIRES ? [r.requires] : []))
    const met = sets.length ? meets(sets, typeof caps === 'function' ? await caps() : caps) : []
    for (const requires of met) lists.push(await w.all(NEXT_OF_SET, queue, requires, at, c.priority, c.priority, c.id, limit))
    // Each list in claim order: the first `limit` of them all, in claim order.
    const rows = lists.flat().sort((a, b) => int(b.priority) - int(a.priority) || int(a.id) - int(b.id)).slice(0, limit)
    return rows.map((r) => ({ id: int(r.id), priority: int(r.priority), project: r.project, paths: r.paths === null ? null : JSON.parse(r.paths) }))
  }
  return {
    async insert(t, st, lastError) {
      const at = nowIso()
      const row = await w.get(
        INSERT, t.queue, t.title, JSON.stringify(t.payload), t.priority, st, JSON.stringify(t.depends_on), JSON.stringify(t.requires),
        t.max_attempts, lastError, t.dedupe_key, t.project ?? null, t.paths ? JSON.stringify(t.paths) : null, at, at,
      )
      // The payload as given, not parsed back from the row: the same JSON value, one parse less on the request thread.
      const task: Task = { ...fields(present(row)), payload: t.payload, result: null }
      if (t.depends_on.length) await w.run(edges, task.id, JSON.stringify(t.depends_on))
      return task
    },
    get: async (id) => maybe(await w.get(ONE, id)),
    byDedupeKey: async (queue, key) => maybe(await w.get(DEDUPE, queue, key)),
    statuses: async (queue, ids) => (ids.length ? w.all(statuses, JSON.stringify(ids), queue) : []),
    nextClaimable: async (queue, caps, at) => (await claimable(queue, caps, at, null, 1))[0] ?? null,
    claimable,
    async nextAvailable(queue, caps, at) {
      let first: string | null = null
      const sets = (await w.all(READY_SETS, queue, queue)).map((r) => r.requires)
      for (const requires of meets(sets, caps)) {
        const next = (await w.get(NEXT_AVAILABLE, queue, requires, at))?.at ?? null
        if (next !== null && (first === null || next < first)) first = next
      }
      return first
    },
    async claim(id, c) {
      const at = nowIso()
      const visibleUntil = c.visibilityMs === null ? null : afterMs(at, c.visibilityMs)
      await send(w, CLAIM, c.instanceId, c.claimId, c.fence, visibleUntil, c.reservationId ?? null, at, id)
      return must(await w.get(ONE, id))
    },
    async complete(id, result, read) {
      const at = nowIso()
      await send(w, COMPLETE, JSON.stringify(result ?? null), at, id)
      // The row as COMPLETE leaves it, from the one the unit read, else read back. The result as given.
      const before = read ?? must(await w.get(ONE, id))
      return { ...before, status: 'done', result: result ?? null, claim_id: null, visible_until: null, reservation_id: null, updated_at: at }
    },
    fail: async (id, lastError) => must(await w.get(FAIL, lastError, nowIso(), id)),
    cancel: async (id) => must(await w.get(CANCEL, nowIso(), id)),
    requeue: async (id, availableAt, lastError) => must(await w.get(REQUEUE, availableAt, lastError, nowIso(), id)),
    restart: async (id, status) => must(await w.get(RESTART, status, nowIso(), id)),
    unblock: async (id) => must(await w.get(UNBLOCK, nowIso(), id)),
    async extend(id, visibilityMs) {
      const at = nowIso()
      return must(await w.get(EXTEND, afterMs(at, visibilityMs), at, id))
    },
    blockedDependents: async (id) => ((await w.get(ANY_DEPENDENT, id)) ? many(w.all(DEPENDENTS, id)) : []),
    pendingDependencies: async (id) => int((await w.get(PENDING, id))!.n),
    claimedBy: (instanceId) => many(w.all(CLAIMED_BY, instanceId)),
    timedOut: (at) => many(w.all(TIMED_OUT, at)),
    addNote: async (taskId, n) => void (await w.run(ADD_NOTE, taskId, n.at, n.by, n.attempt, n.text)),
    notes: notesReader(w, d),
  }
}

export function queueStore(r: Runner, d: Dialect): QueueStore {
  return {
    get: async (id) => maybe(await r.get(ONE, id)),
    claimedBy: (instanceId) => many(r.all(CLAIMED_BY, instanceId)),
    async list(queue, status, limit = -1) {
      const max = limit < 0 ? d.noLimit : limit
      return (await (status ? r.all(BY_STATUS, queue, status, max) : r.all(ALL, queue, max))).map(toTask)
    },
    async listStored(queue, status, after, limit) {
      const c = after ?? START
      const rows = await (status ? r.all(BY_STATUS_AFTER, queue, status, c.priority, c.priority, c.id, limit) : r.all(ALL_AFTER, queue, c.priority, c.priority, c.id, limit))
      return rows.map(toStored)
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
    notes: notesReader(r, d),
  }
}

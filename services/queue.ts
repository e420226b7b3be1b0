// Task queue use cases. Every transition (create, claim, ack, nack, extend, cancel,
// retry, requeue) is decided and written in one unit of work, with its task.* event and
// audit entry, so a task has at most one live claim whatever the concurrency.
// Claims end without an ack when the claimer goes stale or deregisters or its
// visibility timeout passes (claimReleaser).
// Hand-off: a task that names its files (project, paths) is claimed together with an
// exclusive reservation of them, and only when that could be granted; every way the
// claim ends releases it. Notes carry context from one attempt to the next.
import { nowIso, nowMs } from '../lib/time'
import { randomUUID } from 'node:crypto'
import type { Bus } from './bus'
import type { Ctx } from './context'
import type { Tx } from '../store'
import type { Instance } from '../store/instances'
import type { ClaimCandidate, ClaimCursor, Note, Task } from '../store/queue'
import { AppError, conflict, forbidden, invalid, notFound } from '../lib/errors'
import {
  afterRequeue,
  checkError,
  checkNote,
  checkQueue,
  checkTask,
  dependencyError,
  initialStatus,
  requeueError,
  type RequeueReason,
  type TaskInput,
} from '../lib/tasks'
import { Waiters } from '../lib/waiters'
import { assertClaimAllowed } from './budgets'
import { recordAudit, type AuditScope } from './audit'
import { throwIfEnded } from './credentials'
import { SOURCE, touch, touchId, TTL_MAX_MS, TTL_MIN_MS, waitMsParam, type ReleaseReason } from './holders'
import type { Releaser } from './releasers'
import { checkPaths, checkProject, grantIn, overlapsIn, releaseIn } from './reservations'

/** Events after whose COMMIT a task may have become claimable: held claims of that queue try again. */
const WAKE_TOPICS = new Set(['task.created', 'task.requeued', 'task.unblocked', 'task.retried'])

/**
 * The waiter key of a project's reservation releases: a claim whose tasks were held back
 * by reservations of `project` waits on it too. Queue names never contain ':'.
 */
const releasesOf = (project: string) => `project:${project}`

/**
 * The server's claims held with wait_ms (ctx.claimWaiters), by queue, and by project for
 * claims that found tasks held back by reservations; woken by the events of the writes
 * themselves (a released reservation may make a held-back task claimable).
 */
export function claimWaiters(bus: Bus, shutdown: AbortSignal): Waiters {
  const waiters = new Waiters(shutdown)
  bus.listen((event) => {
    const data = event.data as { queue?: string; status?: string; project?: string }
    if (WAKE_TOPICS.has(event.topic) && data.status === 'ready' && data.queue) waiters.wake(data.queue)
    else if (event.topic === 'reservation.released' && typeof data.project === 'string') waiters.wake(releasesOf(data.project))
  })
  return waiters
}

/** The task as anyone but its claimer's claim and ack calls sees it: no claim_id. */
export const hideClaim = <T extends { claim_id: string | null }>(task: T): T => ({ ...task, claim_id: null })

/** A task as every answer shows it: with its notes, oldest first. */
export type ShownTask<T = Task> = T & { notes: Note[] }

/** Tasks with their notes, read in one query for the lot (committed reads, or inside a unit). */
export async function withNotes<T extends { id: number } = Task>(reads: { notes(ids: number[]): Promise<Map<number, Note[]>> }, tasks: T[]): Promise<ShownTask<T>[]> {
  const notes = await reads.notes(tasks.map((t) => t.id))
  return tasks.map((t) => ({ ...t, notes: notes.get(t.id) ?? [] }))
}

const withNotesOne = async (tx: Tx, task: Task): Promise<ShownTask> => (await withNotes(tx.queue, [task]))[0]!

/** A task's project and paths from a create body: globs checked as for reservations; paths need a project. */
function checkFiles(body: TaskInput): { project: string | null; paths: string[] | null } {
  const hasPaths = body.paths !== undefined && body.paths !== null
  if (hasPaths && (body.project === undefined || body.project === null))
    throw invalid('project is required with paths: the paths are globs relative to that project\'s root')
  const project = body.project === undefined || body.project === null ? null : checkProject(body.project)
  return { project, paths: hasPaths ? checkPaths(body.paths) : null }
}

/**
 * Ends the reservation a claim took of its task's paths, inside the unit that ends the
 * claim: `released`, or the holder's reason when it went away. One released by hand
 * meanwhile is gone already: nothing more happens.
 */
async function releaseFiles(tx: Tx, task: Task, reason: ReleaseReason = 'released'): Promise<void> {
  if (task.reservation_id) await releaseIn(tx, task.reservation_id, reason)
}

async function announce(tx: Tx, topic: string, task: Task, instanceId?: string | null, reason?: string): Promise<void> {
  const data: Record<string, unknown> = { id: task.id, queue: task.queue, status: task.status }
  if (instanceId) data.instance_id = instanceId
  if (reason) data.reason = reason
  await tx.emit(topic, data, SOURCE)
}

/**
 * A finished task's blocked dependents follow it: when it is done, those whose
 * dependencies are now all done turn ready; when it failed or was cancelled, they
 * fail, and theirs after them.
 */
async function settleDependents(tx: Tx, task: Task): Promise<void> {
  for (const dependent of await tx.queue.blockedDependents(task.id)) {
    if (task.status === 'done') {
      if ((await tx.queue.pendingDependencies(dependent.id)) === 0) await announce(tx, 'task.unblocked', await tx.queue.unblock(dependent.id))
    } else {
      const failed = await tx.queue.fail(dependent.id, dependencyError(task.id, task.status))
      await announce(tx, 'task.failed', failed, null, 'dependency')
      await settleDependents(tx, failed)
    }
  }
}

/** A claim ends without an ack: back to ready (after `delayMs`), or failed once its attempts are spent. */
async function endClaim(tx: Tx, task: Task, reason: RequeueReason, error: string | null = null, delayMs = 0): Promise<Task> {
  const lastError = requeueError(reason, error)
  await releaseFiles(tx, task, reason === 'holder_stale' || reason === 'holder_deregistered' ? reason : 'released')
  if (afterRequeue(task.attempts, task.max_attempts) === 'failed') {
    const failed = await tx.queue.fail(task.id, lastError)
    await announce(tx, 'task.failed', failed, task.claimed_by, reason)
    await settleDependents(tx, failed)
    return failed
  }
  const availableAt = delayMs > 0 ? new Date(nowMs() + delayMs).toISOString() : null
  const ready = await tx.queue.requeue(task.id, availableAt, lastError)
  await announce(tx, 'task.requeued', ready, task.claimed_by, reason)
  return ready
}

export const claimReleaser: Releaser = {
  // Visibility timeouts: a claim not acked or extended by visible_until is requeued.
  async expire(tx, now) {
    for (const task of await tx.queue.timedOut(now)) await endClaim(tx, task, 'timeout')
  },
  async gone(tx, instance, reason) {
    for (const task of await tx.queue.claimedBy(instance.id)) await endClaim(tx, task, reason)
  },
}

/** An optional visibility_ms (TTL bounds); a required one when `required`. */
function visibilityParam(value: unknown, required = false): number | undefined {
  if (value === undefined || value === null) {
    if (required) throw invalid('visibility_ms is required')
    return undefined
  }
  if (typeof value !== 'number' || !Number.isInteger(value) || value < TTL_MIN_MS || value > TTL_MAX_MS)
    throw invalid(`invalid visibility_ms: expected an integer from ${TTL_MIN_MS} to ${TTL_MAX_MS}`)
  return value
}

/** A task id from a path: anything but a positive integer names no task. */
export function taskId(raw: string): number {
  if (!/^[1-9]\d{0,15}$/.test(raw)) throw notFound('task not found')
  return Number(raw)
}


/** The calling instance as these calls need it: its id; the unit reads the rest when it needs it. */
export type Holder = Pick<Instance, 'id'>

/**
 * One unit as `holder` (or as nobody): the call is a heartbeat that commits even
 * when `fn` refuses it (404, 409 claim lost, 400), so `fn` must throw before it
 * writes anything; its AppError is answered once the heartbeat is committed.
 * `fn` gets the holder as it is now when it asks (`readBack`: notes need its
 * name), else null; a claim reads its row itself, and only when it needs it.
 */
async function asHolder<T>(ctx: Ctx, holder: Holder | null, fn: (tx: Tx, me: Instance | null) => Promise<T>, readBack = false): Promise<T> {
  const out = await ctx.store.write(async (tx): Promise<{ ok: T } | { refused: AppError }> => {
    let me: Instance | null = null
    if (holder && readBack) me = await touch(tx, holder.id)
    else if (holder) await touchId(tx, holder.id)
    try {
      return { ok: await fn(tx, me) }
    } catch (err) {
      if (err instanceof AppError) return { refused: err }
      throw err
    }
  })
  if ('refused' in out) throw out.refused
  return out.ok
}

/** Creates a task (201), or with a dedupe_key finds the unfinished one of the queue that has it (200, nothing new). */
export function createTask(
  ctx: Ctx,
  audit: AuditScope | undefined,
  caller: Holder | null,
  queue: string,
  body: TaskInput,
): Promise<{ task: ShownTask; created: boolean }> {
  const input = { ...checkTask(queue, body), ...checkFiles(body) }
  return asHolder(ctx, caller, async (tx) => {
    if (input.dedupe_key !== null) {
      const existing = await tx.queue.byDedupeKey(queue, input.dedupe_key)
      if (existing) return { task: await withNotesOne(tx, hideClaim(existing)), created: false }
    }
    const deps = await tx.queue.statuses(queue, input.depends_on)
    const unknown = input.depends_on.find((id) => !deps.some((d) => d.id === id))
    if (unknown !== undefined) throw invalid(`invalid depends_on: no task ${unknown} in queue ${queue}`)
    const start = initialStatus(deps)
    const task = await tx.queue.insert(input, start.status, start.status === 'failed' ? start.last_error : null)
    await announce(tx, 'task.created', task, caller?.id)
    if (task.status === 'failed') await announce(tx, 'task.failed', task, null, 'dependency')
    await recordAudit(tx, audit, `task ${task.id}: ${task.title}`)
    return { task: { ...task, notes: [] }, created: true }
  })
}

/**
 * Candidates read per query while a claim skips held-back tasks: most claims take the
 * first, so the first read is short (each row read is a row built), later ones longer.
 */
const FIRST_BATCH = 4
const SCAN_BATCH = 32

interface Attempt {
  task: ShownTask | null
  /** When a delayed task such a claimer could take becomes available. */
  next: string | null
  /** Projects whose reservations held back a task the claimer could otherwise take. */
  heldBy: string[]
}

/**
 * One claim attempt, in one unit: the first task in claim order that is ready, available,
 * needs no capability the claimer lacks and, when it names paths, whose paths could be
 * reserved exclusively for the claimer now (they are, in the same unit). Held-back tasks
 * stay ready; the scan goes on down the order a batch at a time.
 */
function tryClaim(ctx: Ctx, audit: AuditScope | undefined, holder: Holder, queue: string, visibilityMs: number | undefined) {
  return asHolder(ctx, holder, async (tx): Promise<Attempt> => {
    // The claimer's row, read only when the claim needs more than its id (the unit's heartbeat has
    // checked it exists): its capabilities once the queue has ready tasks that require some, and
    // itself to reserve a task's paths. Most claims need neither.
    let row: Promise<Instance> | undefined
    const me = () => (row ??= tx.instances.get(holder.id).then((i) => i!))
    const capabilities = async () => (await me()).capabilities
    const at = nowIso()
    const heldBy = new Set<string>()
    let found: ClaimCandidate | null = null
    for (let after: ClaimCursor | null = null; !found; ) {
      const limit = after ? SCAN_BATCH : FIRST_BATCH
      const batch = await tx.queue.claimable(queue, capabilities, at, after, limit)
      for (const t of batch) {
        if (!t.paths || !(await overlapsIn(tx.reservations, t.project!, t.paths, true, holder.id)).length) {
          found = t
          break
        }
        heldBy.add(t.project!)
      }
      if (batch.length < limit) break
      after = batch[batch.length - 1]!
    }
    if (!found) return { task: null, next: await tx.queue.nextAvailable(queue, await capabilities(), at), heldBy: [...heldBy] }
    // A deny budget over its limit holding the claimer or this task: 409 naming it (services/budgets.ts).
    await assertClaimAllowed(tx, () => me(), { id: found.id, queue, project: found.project })
    const fence = await tx.holders.nextFence()
    const reservation = found.paths
      ? await grantIn(tx, await me(), { project: found.project!, paths: found.paths, exclusive: true, reason: `task ${found.id}` })
      : null
    const claim = { instanceId: holder.id, claimId: randomUUID(), fence, visibilityMs: visibilityMs ?? null, reservationId: reservation?.id ?? null }
    const task = await tx.queue.claim(found.id, claim)
    await announce(tx, 'task.claimed', task, holder.id)
    await recordAudit(tx, audit, `task ${task.id}, fence ${fence}${reservation ? `, reservation ${reservation.id}` : ''}`)
    return { task: await withNotesOne(tx, task), next: null, heldBy: [] }
  })
}

/** Several waits as one: resolves with the first of them; cancel ends them all. */
function waitAny(waiters: Waiters, keys: string[], ms: number, until?: AbortSignal) {
  const waits = keys.map((key) => waiters.wait(key, ms, until))
  return { done: Promise.race(waits.map((w) => w.done)), cancel: () => waits.forEach((w) => w.cancel()) }
}

/**
 * Claims the first claimable task of `queue` for `holder`, holding up to `wait_ms`
 * for one. Null when none came in time (or the server is stopping); 401 when `until`
 * (the caller's token) ends while it waits, before anything is claimed.
 */
export async function claimTask(
  ctx: Ctx,
  audit: AuditScope | undefined,
  holder: Holder,
  queue: string,
  body: { wait_ms?: unknown; visibility_ms?: unknown },
  until?: AbortSignal,
): Promise<ShownTask | null> {
  checkQueue(queue)
  const waitMs = waitMsParam(body.wait_ms)
  const visibilityMs = visibilityParam(body.visibility_ms)
  const deadline = Date.now() + waitMs
  const waiters = ctx.claimWaiters
  // Wake-up keys: the queue, and each project whose reservations held a task back.
  const keys = [queue]
  for (;;) {
    throwIfEnded(until)
    const remaining = deadline - Date.now()
    // Registered before the attempt: a task committed (or a reservation released) during it still wakes this claim.
    const wait = remaining > 0 ? waitAny(waiters, keys, remaining, until) : null
    const { task, next, heldBy } = await tryClaim(ctx, audit, holder, queue, visibilityMs)
    if (task || !wait) {
      wait?.cancel()
      return task
    }
    const fresh = heldBy.map(releasesOf).filter((key) => !keys.includes(key))
    if (fresh.length) {
      // A release before these waits are registered would be missed: register them, then check again.
      keys.push(...fresh)
      wait.cancel()
      continue
    }
    // A delayed task becomes claimable at a known instant: sleep until then at most.
    const untilNext = next === null ? Infinity : Date.parse(next) - nowMs()
    let timer: ReturnType<typeof setTimeout> | undefined
    const delayEnds = new Promise<'timeout'>((resolve) => {
      if (untilNext < remaining) timer = setTimeout(() => resolve('timeout'), Math.max(0, untilNext))
    })
    const reason = await Promise.race([wait.done, delayEnds])
    clearTimeout(timer)
    wait.cancel()
    throwIfEnded(until)
    if (reason === 'shutdown') return null
  }
}

/**
 * ack, nack and extend: the caller must hold the task's live claim. 404 unknown
 * task; 409 `claim lost` when `claimId` is not the live claim (nothing changes);
 * 403 when the live claim is another instance's.
 */
function withClaim(
  ctx: Ctx,
  holder: Holder,
  id: number,
  claimId: string,
  change: (tx: Tx, task: Task) => Promise<Task>,
): Promise<ShownTask> {
  return asHolder(ctx, holder, async (tx) => {
    const task = await tx.queue.get(id)
    if (!task) throw notFound('task not found')
    if (task.status !== 'claimed' || task.claim_id !== claimId) throw conflict('claim lost')
    if (task.claimed_by !== holder.id) throw forbidden('the claim belongs to another instance')
    return withNotesOne(tx, await change(tx, task))
  })
}

/** Done, with its result; dependents whose dependencies are all done turn ready. Shows the claim_id used. */
export function ackTask(ctx: Ctx, audit: AuditScope | undefined, holder: Holder, id: number, body: { claim_id: string; result?: unknown }) {
  return withClaim(ctx, holder, id, body.claim_id, async (tx, task) => {
    await releaseFiles(tx, task)
    const done = await tx.queue.complete(task.id, body.result ?? null, task)
    await announce(tx, 'task.done', done, holder.id)
    await settleDependents(tx, done)
    await recordAudit(tx, audit, `task ${task.id}, fence ${task.fence}`)
    return { ...done, claim_id: body.claim_id }
  })
}

/** Back to ready (claimable after delay_ms) with last_error, or failed when its attempts are spent. */
export function nackTask(
  ctx: Ctx,
  audit: AuditScope | undefined,
  holder: Holder,
  id: number,
  body: { claim_id: string; error?: unknown; delay_ms?: unknown },
) {
  const error = checkError(body.error)
  const delayMs = waitMsParam(body.delay_ms, 'delay_ms', TTL_MAX_MS)
  return withClaim(ctx, holder, id, body.claim_id, async (tx, task) => {
    const after = await endClaim(tx, task, 'nack', error, delayMs)
    await recordAudit(tx, audit, `task ${task.id}: ${after.status}`)
    return hideClaim(after)
  })
}

/** visible_until = now + visibility_ms (a claim without one gets one). */
export function extendTask(ctx: Ctx, audit: AuditScope | undefined, holder: Holder, id: number, body: { claim_id: string; visibility_ms?: unknown }) {
  const ms = visibilityParam(body.visibility_ms, true)
  return withClaim(ctx, holder, id, body.claim_id, async (tx, task) => {
    const extended = await tx.queue.extend(task.id, ms!)
    await recordAudit(tx, audit, `task ${task.id} visible until ${extended.visible_until}`)
    return hideClaim(extended)
  })
}

/**
 * The access rule of a cancel or retry (the route's), run on the task as the unit read
 * it, before anything is checked or changed: it throws (403) to refuse, and nothing
 * changes. An agent token may not cancel or retry what another token's instance claimed.
 */
export type TaskGuard = (tx: Tx, task: Task) => void | Promise<void>

/** A cancel or retry in one unit: 404 for an unknown task, then the guard, then `change` on the task. */
function byHand(ctx: Ctx, caller: Instance | null, id: number, guard: TaskGuard, change: (tx: Tx, task: Task) => Promise<Task>): Promise<ShownTask> {
  return asHolder(ctx, caller, async (tx) => {
    const task = await tx.queue.get(id)
    if (!task) throw notFound(`task ${id} not found`)
    await guard(tx, task)
    return withNotesOne(tx, hideClaim(await change(tx, task)))
  })
}

/** Cancelled (a live claim ends with it; dependents fail). A done task: 409; a cancelled one is returned as it is. */
export function cancelTask(ctx: Ctx, audit: AuditScope | undefined, caller: Instance | null, id: number, guard: TaskGuard): Promise<ShownTask> {
  return byHand(ctx, caller, id, guard, async (tx, task) => {
    if (task.status === 'done') throw conflict('task is done')
    if (task.status === 'cancelled') return task
    await releaseFiles(tx, task)
    const cancelled = await tx.queue.cancel(id)
    await announce(tx, 'task.cancelled', cancelled, task.status === 'claimed' ? task.claimed_by : null)
    await settleDependents(tx, cancelled)
    await recordAudit(tx, audit, `task ${id} (was ${task.status})`)
    return cancelled
  })
}

/** What to do instead, by the status of a task that cannot be retried. */
const notRetryable = (task: Task): string =>
  ({
    blocked: 'it waits for its dependencies and starts once they are done',
    ready: 'it waits for a claimer already',
    claimed: `its claimer can nack it; or cancel it (DELETE /api/tasks/${task.id}) and retry it then`,
    done: 'it succeeded; add a new task to run it again',
  })[task.status as 'blocked' | 'ready' | 'claimed' | 'done']

/**
 * A failed or cancelled task starts over: attempts 0, no claim, ready (or blocked while
 * a dependency is not done yet; one that failed or was cancelled is 409: retry it
 * first). last_error stays, and event task.retried carries what the run before ended
 * with (previous_status, previous_attempts, last_error). Held claims of the queue wake.
 * Dependents it failed stay failed: retry them too (they wait for it, blocked).
 */
export function retryTask(ctx: Ctx, audit: AuditScope | undefined, caller: Instance | null, id: number, guard: TaskGuard): Promise<ShownTask> {
  return byHand(ctx, caller, id, guard, async (tx, task) => {
    if (task.status !== 'failed' && task.status !== 'cancelled')
      throw conflict(`task ${id} is ${task.status}: only a failed or cancelled task can be retried; ${notRetryable(task)}`, { status: task.status })
    const deps = await tx.queue.statuses(task.queue, task.depends_on)
    const broken = deps.find((d) => d.status === 'failed' || d.status === 'cancelled')
    if (broken)
      throw conflict(`task ${id} depends on task ${broken.id}, which is ${broken.status}: retry task ${broken.id} first, then this one`, {
        status: task.status,
        dependency: broken.id,
      })
    const retried = await tx.queue.restart(id, deps.every((d) => d.status === 'done') ? 'ready' : 'blocked')
    await tx.emit(
      'task.retried',
      {
        id,
        queue: task.queue,
        status: retried.status,
        ...(caller ? { instance_id: caller.id } : {}),
        previous_status: task.status,
        previous_attempts: task.attempts,
        last_error: task.last_error,
      },
      SOURCE,
    )
    await recordAudit(tx, audit, `task ${id} (was ${task.status} after ${task.attempts} of ${task.max_attempts} attempts) now ${retried.status}`)
    return retried
  })
}

/**
 * A note on a task for whoever takes it next (any status; 404 unknown task): `by` the
 * caller's name, `attempt` the task's attempts now. Event task.noted; audit task.note.
 */
export function noteTask(ctx: Ctx, audit: AuditScope | undefined, holder: Instance, id: number, body: { text?: unknown }): Promise<Note> {
  const text = checkNote(body.text)
  return asHolder(ctx, holder, async (tx, me) => {
    const task = await tx.queue.get(id)
    if (!task) throw notFound('task not found')
    const note: Note = { at: nowIso(), by: me!.name, attempt: task.attempts, text }
    await tx.queue.addNote(id, note)
    await tx.emit('task.noted', { id, queue: task.queue }, SOURCE)
    await recordAudit(tx, audit, `task ${id}, attempt ${task.attempts}`)
    return note
  }, true)
}

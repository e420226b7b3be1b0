// /api/queues and /api/tasks: the task queue. Creating, reading, cancelling and retrying
// need no instance token; claiming, acking, nacking, extending and notes do (the
// caller is the claimer, or the note's author). claim_id appears only in the
// claimer's claim and ack answers; every task answer carries its notes.
import { t, getSchemaValidator } from 'elysia'
import { IdParams, IntQuery, checks } from '../http/models'
import type { Ctx } from '../services/context'
import type { AuditScope } from '../services/audit'
import { auditLeftover, audited, auditedAnswer, noteAudit } from '../http/audit'
import { enumParam, intParam } from '../http/params'
import { forbidden, notFound } from '../lib/errors'
import type { FastRoute } from '../http/api'
import { bodyReader } from '../http/schema-body'
import { DEFAULT_MAX_ATTEMPTS, MAX_ATTEMPTS, MAX_ERROR, MAX_LIST, MAX_PRIORITY, MAX_TITLE, checkQueue, TASK_STATUSES } from '../lib/tasks'
import { caller, credentialFor, heldUntil, holderOf, optionalHolder, optionalHolderId, readerOf } from '../http/caller'
import type { Instance } from '../store/instances'
import {
  ackTask,
  cancelTask,
  claimTask,
  createTask,
  extendTask,
  hideClaim,
  nackTask,
  noteTask,
  retryTask,
  taskId,
  withNotes,
  type Holder,
  type ShownTask,
  type TaskGuard,
} from '../services/queue'
import { TTL_MAX_MS, TTL_MIN_MS, WAIT_MAX_MS, readerHeartbeat } from '../services/holders'
import { tasksJson, type ClaimCursor } from '../store/queue'
import type { TaskStatus } from '../lib/tasks'
import { bodyLimits } from '../http/body'

/**
 * The most a task's create or ack body may be: payload and result are its bulk. A
 * task carries instructions and findings, not files; every claim, read and listing
 * parses and sends them again on the request thread, so a 10 MB value there held
 * every other request up for a second (issue 38). 413 before a byte is read.
 */
export const MAX_TASK_BODY = 256 * 1024

const nullable = <T extends Parameters<typeof t.Union>[0][number]>(schema: T, description?: string) =>
  t.Union([schema, t.Null()], description ? { description } : {})

const NoteSchema = t.Object({
  at: t.String(),
  by: t.String({ description: 'name of the instance that wrote it' }),
  attempt: t.Integer({ description: "the task's attempts when it was written" }),
  text: t.String(),
})

const TaskSchema = t.Object({
  id: t.Integer(),
  queue: t.String(),
  title: t.String(),
  payload: t.Unknown({ description: 'any JSON value, null when not given' }),
  priority: t.Integer({ description: 'higher is claimed first' }),
  status: t.UnionEnum(TASK_STATUSES),
  depends_on: t.Array(t.Integer()),
  requires: t.Array(t.String(), { description: 'capabilities the claimer must have' }),
  attempts: t.Integer({ description: 'claims so far' }),
  max_attempts: t.Integer(),
  claimed_by: nullable(t.String(), 'instance id of the live claim, or of the last one for done and failed tasks'),
  claim_id: nullable(t.String(), "only in the claimer's own claim and ack answers"),
  fence: nullable(t.Integer(), 'fence of the latest claim'),
  visible_until: nullable(t.String(), 'a claim with visibility_ms is requeued after this instant'),
  available_at: nullable(t.String(), 'a task nacked with delay_ms is not claimable before this instant'),
  result: t.Unknown({ description: 'the ack result' }),
  last_error: nullable(t.String()),
  dedupe_key: nullable(t.String()),
  project: nullable(t.String(), 'the project whose paths the task will touch'),
  paths: nullable(t.Array(t.String()), 'globs of project: claimable only when they can be reserved exclusively for the claimer'),
  reservation_id: nullable(t.String(), "the reservation the live claim took of paths (kept if that reservation is released by hand)"),
  notes: t.Array(NoteSchema, { description: 'oldest first: context one attempt leaves for the next' }),
  created_at: t.String(),
  updated_at: t.String(),
})

/**
 * Tasks per page of a listing: payload and result are at most MAX_TASK_BODY each, so a page
 * is at most a few MB of stored JSON, a few milliseconds of the request thread.
 */
const LISTING_PAGE = 8
const JSON_TYPE = { 'content-type': 'application/json' }

/**
 * A queue's tasks in claim order as a JSON array, read a page at a time: stored payloads and
 * results spliced in as stored (store/queue.ts tasksJson), never parsed and serialized again,
 * and a long listing streamed, other requests answered between its pages. Each page is read
 * on its own, as the keyset of claim order goes on from the last task sent.
 */
async function taskListing(ctx: Ctx, queue: string, status: TaskStatus | undefined, limit = Infinity): Promise<Response> {
  let left = limit
  let after: ClaimCursor | null = null
  /** The next page's elements, or null when the listing has ended. */
  const page = async (): Promise<string | null> => {
    if (left <= 0) return null
    const n = Math.min(LISTING_PAGE, left)
    const tasks = await ctx.store.queue.listStored(queue, status, after, n)
    left = tasks.length < n ? 0 : left - n
    after = tasks.at(-1) ?? null
    return tasks.length ? tasksJson(await withNotes(ctx.store.queue, tasks.map(hideClaim))) : null
  }
  const first = await page()
  if (left <= 0) return new Response(`[${first ?? ''}]`, { headers: JSON_TYPE })
  const encoder = new TextEncoder()
  const body = new ReadableStream<Uint8Array>({
    start: (c) => c.enqueue(encoder.encode(`[${first}`)),
    async pull(c) {
      await new Promise((resolve) => setImmediate(resolve)) // a turn of the event loop between pages
      const next = await page()
      if (next === null) {
        c.enqueue(encoder.encode(']'))
        c.close()
      } else c.enqueue(encoder.encode(`,${next}`))
    },
  })
  return new Response(body, { headers: JSON_TYPE })
}

/**
 * Who may cancel or retry this task (access.md: an agent token may not cancel or retry
 * a task that an instance of another token has claimed). The service runs it inside the
 * unit, on the task as stored, before anything is checked or changed; it throws to refuse.
 */
const mayCancelOrRetry =
  (ctx: Ctx, request: Request): TaskGuard =>
  async (_tx, task) => {
    const { role, tokenId } = credentialFor(request)
    if (role === 'admin' || !task.claimed_by) return
    // Which token registered an instance never changes: read outside the unit.
    const boundTo = await ctx.store.instances.tokenIdOf(task.claimed_by)
    if (boundTo !== undefined && boundTo !== tokenId)
      throw forbidden(`task ${task.id} is claimed by instance ${task.claimed_by}, registered with another token: ask its agent, or a person with the admin token`)
  }

const QueueParams = t.Object({ queue: t.String() })
const ClaimId = t.String({ description: 'from the claim answer; another one is 409 claim lost' })
/** The claim_id the examples show (a claim answers a fresh UUID). */
const EXAMPLE_CLAIM = '5f0c2a1e-8b7d-4c3a-9e21-6d4f0b8a7c15'
const VisibilityMs = (description: string) => t.Integer({ description, ...checks({ minimum: TTL_MIN_MS, maximum: TTL_MAX_MS }) })
const TAGS = ['tasks']

const CreateBody = t.Object(
  {
    title: t.String({ description: 'required', ...checks({ minLength: 1, maxLength: MAX_TITLE }) }),
    payload: t.Optional(t.Any({ description: 'any JSON value (the whole body at most 256 KiB)' })),
    priority: t.Optional(t.Integer({ description: 'higher first', ...checks({ minimum: -MAX_PRIORITY, maximum: MAX_PRIORITY, default: 0 }) })),
    depends_on: t.Optional(t.Array(t.Integer(), { description: 'ids of tasks of this queue; blocked until all are done', ...checks({ maxItems: MAX_LIST }) })),
    requires: t.Optional(t.Array(t.String(), { description: 'capabilities the claimer must have (all of them)', ...checks({ maxItems: MAX_LIST }) })),
    max_attempts: t.Optional(t.Integer({ description: 'claims before the task fails', ...checks({ minimum: 1, maximum: MAX_ATTEMPTS, default: DEFAULT_MAX_ATTEMPTS }) })),
    dedupe_key: t.Optional(t.String({ description: 'an unfinished task of the queue with this key is returned instead (200)' })),
    project: t.Optional(t.String({ description: 'the project of paths (alone: recorded only)' })),
    paths: t.Optional(
      t.Array(t.String(), {
        description: 'globs relative to the project root, as for reservations (needs project): a claim takes them as an exclusive reservation',
      }),
    ),
  },
  {
    examples: [
      { title: 'invoice PDFs', payload: { order: 42 }, priority: 0, requires: ['ts'], max_attempts: DEFAULT_MAX_ATTEMPTS, project: 'shop', paths: ['src/billing/**'] },
    ],
  },
)
const ClaimBody = t.Optional(
  t.Object(
    {
      wait_ms: t.Optional(t.Integer({ description: 'hold up to this long for a claimable task', ...checks({ minimum: 0, maximum: WAIT_MAX_MS, default: 0 }) })),
      visibility_ms: t.Optional(VisibilityMs('requeue (reason timeout) unless acked or extended in time; default: no timeout')),
    },
    { examples: [{ wait_ms: 0, visibility_ms: 600_000 }] },
  ),
)
const AckBody = t.Object(
  { claim_id: ClaimId, result: t.Optional(t.Any({ description: 'any JSON value, stored (the whole body at most 256 KiB)' })) },
  { examples: [{ claim_id: EXAMPLE_CLAIM, result: { pr: 42 } }] },
)

const CREATE = 'task.create'
const CLAIM = 'task.claim'
const ACK = 'task.ack'

/** A create: 201 the new task, or 200 the unfinished one of the queue with the same dedupe_key (the audit entry says so). */
async function addTask(ctx: Ctx, request: Request, queue: string, body: CreateInput, audit: AuditScope) {
  const { task, created } = await createTask(ctx, audit, await optionalHolderId(ctx, request), queue, body)
  if (!created) noteAudit(request, `deduplicated: task ${task.id}`)
  return { task, status: created ? 201 : 200 }
}
type CreateInput = Parameters<typeof createTask>[4]

/**
 * The claimer of a claim, ack, nack or extend: its id is all these calls need (the unit that
 * heartbeats it refuses, 403, an instance gone meanwhile), so a token known here is not read again.
 */
const claimer = (ctx: Ctx, request: Request): Promise<Holder> => readerOf(ctx, request)

/** A claim: the task, or null (204) when none was claimable by the end of wait_ms. */
const claimFor = async (ctx: Ctx, request: Request, queue: string, body: { wait_ms?: unknown; visibility_ms?: unknown } | null | undefined, audit: AuditScope) =>
  claimTask(ctx, audit, await claimer(ctx, request), queue, body ?? {}, heldUntil(ctx, request))

export function queueRoutes(ctx: Ctx) {
  /** cancel and retry: anyone's call (an instance token is optional), through one service helper each. */
  const byHand =
    (change: (ctx: Ctx, audit: AuditScope | undefined, caller: Instance | null, id: number, guard: TaskGuard) => Promise<ShownTask>) =>
    async ({ request, params, audit }: { request: Request; params: { id: string }; audit?: AuditScope }) =>
      change(ctx, audit, await optionalHolder(ctx, request), taskId(params.id), mayCancelOrRetry(ctx, request))

  /** ack, nack and extend: the holder's call on its claim, through one service helper each. */
  const onClaim =
    <B extends { claim_id: string }>(change: (ctx: Ctx, audit: AuditScope | undefined, holder: Holder, id: number, body: B) => Promise<ShownTask>) =>
    async ({ request, params, body, audit }: { request: Request; params: { id: string }; body: B; audit?: AuditScope }) =>
      change(ctx, audit, await claimer(ctx, request), taskId(params.id), body)

  return audited(ctx)
    .use(bodyLimits)
    .post(
      '/api/queues/:queue/tasks',
      async ({ request, params, body, set, audit }) => {
        const { task, status } = await addTask(ctx, request, params.queue, body, audit)
        set.status = status
        return task
      },
      {
        params: QueueParams,
        body: CreateBody,
        response: { 200: TaskSchema, 201: TaskSchema },
        maxBody: MAX_TASK_BODY,
        audit: CREATE,
        detail: { summary: 'Add a task (201); with dedupe_key an unfinished duplicate is returned (200)', tags: TAGS },
      },
    )
    .post(
      '/api/queues/:queue/claim',
      async ({ request, params, body, audit, status }) => (await claimFor(ctx, request, params.queue, body, audit)) ?? status(204, undefined),
      {
        params: QueueParams,
        body: ClaimBody,
        response: { 200: TaskSchema, 204: t.Void({ description: 'nothing claimable by the end of wait_ms' }) },
        audit: CLAIM,
        detail: { summary: 'Claim the first claimable task (priority, then creation order); X-Instance-Token required', tags: TAGS, security: [{ instanceToken: [] }] },
      },
    )
    .post('/api/tasks/:id/ack', onClaim(ackTask), {
      params: IdParams,
      body: AckBody,
      response: { 200: TaskSchema },
      maxBody: MAX_TASK_BODY,
      audit: ACK,
      detail: { summary: 'Finish a claimed task: done, with its result', tags: TAGS },
    })
    .post('/api/tasks/:id/nack', onClaim(nackTask), {
      params: IdParams,
      body: t.Object(
        {
          claim_id: ClaimId,
          error: t.Optional(t.String({ description: 'stored as last_error', ...checks({ maxLength: MAX_ERROR }) })),
          delay_ms: t.Optional(t.Integer({ description: 'not claimable again before this long', ...checks({ minimum: 0, maximum: TTL_MAX_MS, default: 0 }) })),
        },
        { examples: [{ claim_id: EXAMPLE_CLAIM, error: 'tests fail on CI', delay_ms: 5000 }] },
      ),
      response: { 200: TaskSchema },
      audit: 'task.nack',
      detail: { summary: 'Give a claimed task back: ready again, or failed when its attempts are spent', tags: TAGS },
    })
    .post('/api/tasks/:id/extend', onClaim(extendTask), {
      params: IdParams,
      body: t.Object({ claim_id: ClaimId, visibility_ms: VisibilityMs('visible_until = now + this') }, { examples: [{ claim_id: EXAMPLE_CLAIM, visibility_ms: 600_000 }] }),
      response: { 200: TaskSchema },
      audit: 'task.extend',
      detail: { summary: 'Push back the visibility timeout of a claim', tags: TAGS },
    })
    .post(
      '/api/tasks/:id/notes',
      async ({ request, params, body, audit, set }) => {
        const holder = await holderOf(ctx, request)
        const note = await noteTask(ctx, audit, holder, taskId(params.id), body)
        set.status = 201
        return note
      },
      {
        params: IdParams,
        body: t.Object(
          { text: t.String({ description: '1 … 16 KiB of UTF-8: what the next attempt should know', ...checks({ minLength: 1 }) }) },
          { examples: [{ text: 'totals are computed twice, in cart.ts and invoice.ts' }] },
        ),
        response: { 201: NoteSchema },
        audit: 'task.note',
        detail: {
          summary: 'Leave a note on a task for its next attempt; X-Instance-Token required',
          tags: TAGS,
          security: [{ instanceToken: [] }],
        },
      },
    )
    .get(
      '/api/tasks/:id',
      async ({ request, params }) => {
        const id = taskId(params.id)
        await readerHeartbeat(ctx, await caller(ctx, request))
        const task = await ctx.store.queue.get(id)
        if (!task) throw notFound('task not found')
        return (await withNotes(ctx.store.queue, [hideClaim(task)]))[0]!
      },
      { params: IdParams, response: { 200: TaskSchema }, detail: { summary: 'One task', tags: TAGS } },
    )
    .delete('/api/tasks/:id', byHand(cancelTask), {
      params: IdParams,
      response: { 200: TaskSchema },
      audit: 'task.cancel',
      detail: { summary: 'Cancel a task (a live claim ends; dependents fail); a done task is 409', tags: TAGS },
    })
    .post('/api/tasks/:id/retry', byHand(retryTask), {
      params: IdParams,
      response: { 200: TaskSchema },
      audit: 'task.retry',
      detail: {
        summary: 'Run a failed or cancelled task again: ready, attempts 0, no claim; any other status is 409',
        description:
          'last_error stays until a later attempt replaces it; event task.retried carries previous_status, previous_attempts and ' +
          'last_error. A task with a dependency that is not done yet comes back blocked; one whose dependency failed or was ' +
          'cancelled is 409 (retry the dependency first). Claims held with wait_ms on the queue take it at once.',
        tags: TAGS,
      },
    })
    .get(
      '/api/queues',
      async ({ request }) => {
        await readerHeartbeat(ctx, await caller(ctx, request))
        return ctx.store.queue.queues()
      },
      {
        response: {
          200: t.Array(
            t.Object({
              queue: t.String(),
              counts: t.Object({
                blocked: t.Integer(),
                ready: t.Integer(),
                claimed: t.Integer(),
                done: t.Integer(),
                failed: t.Integer(),
                cancelled: t.Integer(),
              }),
            }),
          ),
        },
        detail: { summary: 'Every queue that has tasks, with counts per status', tags: TAGS },
      },
    )
    .get(
      '/api/queues/:queue/tasks',
      async ({ request, params, query }) => {
        const queue = checkQueue(params.queue)
        const status = enumParam(query.status, 'status', TASK_STATUSES, undefined)
        const limit = query.limit === undefined ? undefined : intParam(query.limit, 'limit', 0, 1)
        await readerHeartbeat(ctx, await caller(ctx, request))
        return taskListing(ctx, queue, status, limit)
      },
      {
        params: QueueParams,
        query: t.Object({
          status: t.Optional(t.String({ description: TASK_STATUSES.join(' | '), ...checks({ enum: TASK_STATUSES }) })),
          limit: IntQuery('at most this many (default: all)', { minimum: 1 }),
        }),
        response: { 200: t.Array(TaskSchema) },
        detail: { summary: "A queue's tasks in claim order (priority, then creation)", tags: TAGS },
      },
    )
}

/**
 * The three calls of every task cycle (create, claim, ack) on Bun's own router (http/api.ts
 * FastRoute), for plain requests (no query string): the bodies read and checked as the
 * routes above check them (bodyReader), the same services, answers, errors and audit.
 */
export function queueFastRoutes(ctx: Ctx): FastRoute[] {
  const createBody = bodyReader(CreateBody)
  const claimBody = bodyReader(ClaimBody)
  const ackBody = bodyReader(AckBody)
  // The answer as the framework sends it: TaskSchema's fields, in its order.
  const shown = (getSchemaValidator(TaskSchema, { normalize: true }) as unknown as { Clean(task: ShownTask): unknown }).Clean
  const json = (task: ShownTask, status = 200) => Response.json(shown(task), { status })
  /** The path parameter after `/api/<collection>/`, decoded as the router decodes it. */
  const param = (path: string) => {
    const raw = path.split('/')[3]!
    try {
      return decodeURIComponent(raw)
    } catch {
      return raw
    }
  }
  return [
    {
      method: 'POST',
      pattern: '/api/queues/:queue/tasks',
      handle: (request, path) =>
        auditedAnswer(ctx, request, CREATE, async (scope) => {
          const { task, status } = await addTask(ctx, request, param(path), await createBody(request), scope)
          if (status === 200) await auditLeftover(ctx, request, CREATE, status)
          return json(task, status)
        }),
    },
    {
      method: 'POST',
      pattern: '/api/queues/:queue/claim',
      handle: (request, path) =>
        auditedAnswer(ctx, request, CLAIM, async (scope) => {
          const task = await claimFor(ctx, request, param(path), await claimBody(request), scope)
          if (task) return json(task)
          await auditLeftover(ctx, request, CLAIM, 204)
          return new Response(null, { status: 204 })
        }),
    },
    {
      method: 'POST',
      pattern: '/api/tasks/:id/ack',
      handle: (request, path) =>
        auditedAnswer(ctx, request, ACK, async (scope) => {
          // The body first, as the framework checks it before the handler runs.
          const body = await ackBody(request)
          return json(await ackTask(ctx, scope, await claimer(ctx, request), taskId(param(path)), body))
        }),
    },
  ]
}

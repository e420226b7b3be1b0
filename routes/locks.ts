// /api/locks: named mutexes and counting semaphores held by instances.
import { t } from 'elysia'
import { Type } from '@sinclair/typebox'
import { invalid } from '../lib/errors'
import type { Ctx } from '../services/context'
import { TTL_MAX_MS, TTL_MIN_MS, WAIT_MAX_MS, reasonParam, readerHeartbeat, ttlParam, waitMsParam, REASON_MAX } from '../services/holders'
import { assertForce, caller, heldUntil, holderIdOf } from '../http/caller'
import { LIMIT_MAX, acquireLock, forceReleaseLock, getLock, listLocks, releaseLock } from '../services/locks'
import { audited, auditedAnswer } from '../http/audit'
import type { AuditScope } from '../services/audit'
import type { FastRoute } from '../http/api'
import { readOptionalObject } from '../http/body'
import { keyParam } from '../http/documents'
import { ForceQuery, Nullable, checks } from '../http/models'
import { isSet } from '../http/params'

// TypeBox's own Integer in answers, not Elysia's string-or-integer transform: an answer schema
// with a transform is encoded by the uncompiled Value.Encode on every call.
const HolderSchema = t.Object({
  instance_id: t.String(),
  instance_name: t.String(),
  instance_status: t.String({ description: 'active, stale, or gone' }),
  fence: Type.Integer(),
  reason: Nullable(t.String()),
  acquired_at: t.String(),
  expires_at: Nullable(t.String()),
})
const LockSchema = t.Object({ name: t.String(), limit: Type.Integer(), holders: t.Array(HolderSchema) })
const GrantSchema = t.Object({
  name: t.String(),
  instance_id: t.String(),
  fence: Type.Integer(),
  limit: Type.Integer(),
  reason: Nullable(t.String()),
  acquired_at: t.String(),
  expires_at: Nullable(t.String({ description: 'RFC 3339; null without ttl_ms' })),
})
const AcquireBody = t.Object(
  {
    ttl_ms: t.Optional(t.Integer({ description: 'released (reason expired) within 1 s after; default: held until released', ...checks({ minimum: TTL_MIN_MS, maximum: TTL_MAX_MS }) })),
    wait_ms: t.Optional(t.Integer({ description: 'wait in line up to this long for a free slot', ...checks({ minimum: 0, maximum: WAIT_MAX_MS, default: 0 }) })),
    // No default in the document: left out, a renewal or a later holder takes the lock's limit as it is.
    limit: t.Optional(t.Integer({ description: 'holders at once (1 for a new lock); set by the first grant', ...checks({ minimum: 1, maximum: LIMIT_MAX }) })),
    reason: t.Optional(t.String({ description: 'why, for the people and agents who find it held', ...checks({ maxLength: REASON_MAX }) })),
  },
  { examples: [{ ttl_ms: 60_000, wait_ms: 0, reason: 'running the migration' }] },
)

function limitParam(limit: unknown): number | undefined {
  if (limit === undefined || limit === null) return undefined
  if (typeof limit !== 'number' || !Number.isInteger(limit) || limit < 1 || limit > LIMIT_MAX)
    throw invalid(`invalid limit: expected an integer from 1 to ${LIMIT_MAX}`)
  return limit
}

const ACQUIRE = 'lock.acquire'
const RELEASE = 'lock.release'
const PREFIX = '/api/locks/'

const released = (name: string) => ({ name, released: true as const })

/** A lock PUT from its request, its optional body read here: the route's handler and the fast route's. */
async function acquireFromRequest(ctx: Ctx, request: Request, name: string, audit: AuditScope) {
  const b = await readOptionalObject(request)
  const options = {
    ttl: ttlParam(b.ttl_ms),
    waitMs: waitMsParam(b.wait_ms),
    limit: limitParam(b.limit),
    reason: reasonParam(b.reason),
    signal: request.signal,
    until: heldUntil(ctx, request),
  }
  const g = await acquireLock(ctx, audit, await holderIdOf(ctx, request), name, options)
  // In the order GrantSchema documents, by either way in.
  return { name: g.name, instance_id: g.instance_id, fence: g.fence, limit: g.limit, reason: g.reason, acquired_at: g.acquired_at, expires_at: g.expires_at }
}

/**
 * A holder's plain acquire and release of /api/locks/<name> (no query string) on Bun's
 * own router (http/api.ts FastRoute): the two requests of every lock round trip,
 * answered as the routes below answer them, audit included. `?force=1` is the full route's.
 */
export function locksFastRoutes(ctx: Ctx): FastRoute[] {
  const nameOf = (path: string) => keyParam(path.slice(PREFIX.length), 'name')
  return [
    {
      method: 'PUT',
      pattern: '/api/locks/*',
      handle: (request, path) => auditedAnswer(ctx, request, ACQUIRE, async (scope) => Response.json(await acquireFromRequest(ctx, request, nameOf(path), scope))),
    },
    {
      method: 'DELETE',
      pattern: '/api/locks/*',
      handle: (request, path) =>
        auditedAnswer(ctx, request, RELEASE, async (scope) => {
          const name = nameOf(path)
          await releaseLock(ctx, scope, await holderIdOf(ctx, request), name)
          return Response.json(released(name))
        }),
    },
  ]
}

export function locksRoutes(ctx: Ctx) {
  return audited(ctx)
    .get('/api/locks', async ({ query, request }) => (await readerHeartbeat(ctx, await caller(ctx, request)), listLocks(ctx, query.prefix || undefined)), {
      query: t.Object({ prefix: t.Optional(t.String({ description: 'only names starting with this' })) }),
      response: { 200: t.Array(LockSchema) },
      detail: { summary: 'Held locks with their holders, by name', tags: ['locks'] },
    })
    .get('/api/locks/*', async ({ params, request }) => (await readerHeartbeat(ctx, await caller(ctx, request)), getLock(ctx, keyParam(params['*'], 'name'))), {
      response: { 200: LockSchema },
      detail: { summary: 'One held lock (404 when nobody holds it)', tags: ['locks'] },
    })
    .put('/api/locks/*', ({ params, request, audit }) => acquireFromRequest(ctx, request, keyParam(params['*'], 'name'), audit), {
      parse: 'none',
      response: { 200: GrantSchema },
      audit: ACQUIRE,
      detail: {
        // Read by the handler (parse: 'none'), so documented here: an optional JSON object.
        requestBody: { required: false, content: { 'application/json': { schema: AcquireBody as {} } } },
        summary: 'Acquire a lock, or renew it when the caller holds it already',
        description:
          'Needs X-Instance-Token. 409 {error: "lock is held", holders} when no slot is free (after wait_ms in line, first come first served).',
        tags: ['locks'],
      },
    })
    .delete(
      '/api/locks/*',
      async ({ params, query, request, audit }) => {
        if (isSet(query.force)) assertForce(request)
        const name = keyParam(params['*'], 'name')
        if (isSet(query.force)) await forceReleaseLock(ctx, audit, name)
        else await releaseLock(ctx, audit, await holderIdOf(ctx, request), name)
        return released(name)
      },
      {
        query: ForceQuery,
        response: { 200: t.Object({ name: t.String(), released: t.Literal(true) }) },
        audit: RELEASE,
        detail: { summary: 'Release a lock (the holder), or every holder with ?force=1', tags: ['locks'] },
      },
    )
}

// /api/locks: named mutexes and counting semaphores held by instances.
import { t } from 'elysia'
import { invalid } from '../lib/errors'
import type { Ctx } from '../services/context'
import { TTL_MAX_MS, TTL_MIN_MS, WAIT_MAX_MS, reasonParam, readerHeartbeat, ttlParam, waitMsParam, REASON_MAX } from '../services/holders'
import { assertForce, caller, holderOf } from '../http/caller'
import { LIMIT_MAX, acquireLock, forceReleaseLock, getLock, listLocks, releaseLock } from '../services/locks'
import { audited } from '../http/audit'
import { keyParam } from '../http/documents'
import { ForceQuery, Nullable, checks } from '../http/models'
import { isSet } from '../http/params'


const HolderSchema = t.Object({
  instance_id: t.String(),
  instance_name: t.String(),
  instance_status: t.String({ description: 'active, stale, or gone' }),
  fence: t.Integer(),
  reason: Nullable(t.String()),
  acquired_at: t.String(),
  expires_at: Nullable(t.String()),
})
const LockSchema = t.Object({ name: t.String(), limit: t.Integer(), holders: t.Array(HolderSchema) })
const GrantSchema = t.Object({
  name: t.String(),
  instance_id: t.String(),
  fence: t.Integer(),
  limit: t.Integer(),
  reason: Nullable(t.String()),
  acquired_at: t.String(),
  expires_at: Nullable(t.String({ description: 'RFC 3339; null without ttl_ms' })),
})
const AcquireBody = t.Optional(
  t.Object(
    {
      ttl_ms: t.Optional(t.Integer({ description: 'released (reason expired) within 1 s after; default: held until released', ...checks({ minimum: TTL_MIN_MS, maximum: TTL_MAX_MS }) })),
      wait_ms: t.Optional(t.Integer({ description: 'wait in line up to this long for a free slot', ...checks({ minimum: 0, maximum: WAIT_MAX_MS, default: 0 }) })),
      // No default in the document: left out, a renewal or a later holder takes the lock's limit as it is.
      limit: t.Optional(t.Integer({ description: 'holders at once (1 for a new lock); set by the first grant', ...checks({ minimum: 1, maximum: LIMIT_MAX }) })),
      reason: t.Optional(t.String({ description: 'why, for the people and agents who find it held', ...checks({ maxLength: REASON_MAX }) })),
    },
    { examples: [{ ttl_ms: 60_000, wait_ms: 0, reason: 'running the migration' }] },
  ),
)

function limitParam(limit: unknown): number | undefined {
  if (limit === undefined || limit === null) return undefined
  if (typeof limit !== 'number' || !Number.isInteger(limit) || limit < 1 || limit > LIMIT_MAX)
    throw invalid(`invalid limit: expected an integer from 1 to ${LIMIT_MAX}`)
  return limit
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
    .put(
      '/api/locks/*',
      async ({ params, body, request, audit }) => {
        const name = keyParam(params['*'], 'name')
        const b = body ?? {}
        const options = {
          ttl: ttlParam(b.ttl_ms),
          waitMs: waitMsParam(b.wait_ms),
          limit: limitParam(b.limit),
          reason: reasonParam(b.reason),
          signal: request.signal,
        }
        return acquireLock(ctx, audit, await holderOf(ctx, request), name, options)
      },
      {
        body: AcquireBody,
        response: { 200: GrantSchema },
        audit: 'lock.acquire',
        detail: {
          summary: 'Acquire a lock, or renew it when the caller holds it already',
          description:
            'Needs X-Instance-Token. 409 {error: "lock is held", holders} when no slot is free (after wait_ms in line, first come first served).',
          tags: ['locks'],
        },
      },
    )
    .delete(
      '/api/locks/*',
      async ({ params, query, request, audit }) => {
        if (isSet(query.force)) assertForce(request)
        const name = keyParam(params['*'], 'name')
        if (isSet(query.force)) await forceReleaseLock(ctx, audit, name)
        else await releaseLock(ctx, audit, await holderOf(ctx, request), name)
        return { name, released: true as const }
      },
      {
        query: ForceQuery,
        response: { 200: t.Object({ name: t.String(), released: t.Literal(true) }) },
        audit: 'lock.release',
        detail: { summary: 'Release a lock (the holder), or every holder with ?force=1', tags: ['locks'] },
      },
    )
}

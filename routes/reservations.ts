// /api/reservations: globs of a project that an instance is editing, and the
// check pre-commit hooks run against them.
import { t } from 'elysia'
import type { Ctx } from '../services/context'
import { TTL_MAX_MS, TTL_MIN_MS, reasonParam, readerHeartbeat, ttlParam, REASON_MAX } from '../services/holders'
import { assertForce, caller, holderOf, optionalHolder } from '../http/caller'
import { MAX_PATHS, checkPaths, checkPathsFree, checkProject, releaseReservation, renewReservation, reserve } from '../services/reservations'
import { invalid, notFound } from '../lib/errors'
import { audited } from '../http/audit'
import { ForceQuery, Nullable, checks } from '../http/models'
import { isSet } from '../http/params'


const ReservationSchema = t.Object({
  id: t.String(),
  project: t.String(),
  instance_id: t.String(),
  paths: t.Array(t.String()),
  exclusive: t.Boolean(),
  fence: t.Integer(),
  reason: Nullable(t.String()),
  created_at: t.String(),
  expires_at: Nullable(t.String()),
})
const ConflictsSchema = t.Object({
  ok: t.Literal(true),
  conflicts: t.Array(t.Any(), { description: 'empty; a conflict is 409 {error, code, conflicts}' }),
})
const IdParams = t.Object({ id: t.String() })
const Paths = t.Array(t.String(), { description: 'globs relative to the project root (picomatch syntax)', ...checks({ minItems: 1, maxItems: MAX_PATHS }) })
const TtlMs = (description: string) => t.Integer({ description, ...checks({ minimum: TTL_MIN_MS, maximum: TTL_MAX_MS }) })
const EXAMPLE = { project: 'shop', paths: ['src/auth/**'] }

export function reservationsRoutes(ctx: Ctx) {
  return audited(ctx)
    .post(
      '/api/reservations',
      async ({ body, request, audit, set }) => {
        const holder = await holderOf(ctx, request)
        if (body.exclusive !== undefined && typeof body.exclusive !== 'boolean') throw invalid('invalid exclusive: expected true or false')
        const input = {
          project: checkProject(body.project),
          paths: checkPaths(body.paths),
          exclusive: body.exclusive ?? true,
          ttl: ttlParam(body.ttl_ms),
          reason: reasonParam(body.reason),
        }
        const r = await reserve(ctx, audit, holder, input)
        set.status = 201
        return r
      },
      {
        body: t.Object(
          {
            project: t.String(),
            paths: Paths,
            exclusive: t.Optional(t.Boolean({ description: 'two shared reservations never conflict', ...checks({ default: true }) })),
            ttl_ms: t.Optional(TtlMs('default: held until released')),
            reason: t.Optional(t.String({ description: 'why, for the people and agents who find it held', ...checks({ maxLength: REASON_MAX }) })),
          },
          { examples: [{ ...EXAMPLE, exclusive: true, ttl_ms: 1_800_000, reason: 'token fix' }] },
        ),
        response: { 201: ReservationSchema },
        audit: 'reservation.create',
        detail: {
          summary: 'Reserve paths of a project, all or nothing',
          description: 'Needs X-Instance-Token. 409 {error: "paths are reserved", conflicts} when any path overlaps another instance\'s reservation (one side exclusive).',
          tags: ['reservations'],
        },
      },
    )
    .post(
      '/api/reservations/check',
      async ({ body, request }) =>
        checkPathsFree(ctx, await optionalHolder(ctx, request), checkProject(body.project), checkPaths(body.paths)),
      {
        body: t.Object({ project: t.String(), paths: Paths }, { examples: [EXAMPLE] }),
        response: { 200: ConflictsSchema },
        detail: {
          summary: 'Would these paths collide with what others hold exclusively? (pre-commit hooks, CI)',
          description: 'With X-Instance-Token the caller\'s own reservations are left out. 409 with conflicts otherwise.',
          tags: ['reservations'],
        },
      },
    )
    .get(
      '/api/reservations',
      async ({ query, request }) => {
        await readerHeartbeat(ctx, await caller(ctx, request))
        return ctx.store.reservations.list({ project: query.project || undefined, instance_id: query.instance_id || undefined })
      },
      {
        query: t.Object({ project: t.Optional(t.String()), instance_id: t.Optional(t.String()) }),
        response: { 200: t.Array(ReservationSchema) },
        detail: { summary: 'Reservations, newest first', tags: ['reservations'] },
      },
    )
    .get(
      '/api/reservations/:id',
      async ({ params, request }) => {
        await readerHeartbeat(ctx, await caller(ctx, request))
        const r = await ctx.store.reservations.get(params.id)
        if (!r) throw notFound('reservation not found')
        return r
      },
      { params: IdParams, response: { 200: ReservationSchema }, detail: { summary: 'One reservation', tags: ['reservations'] } },
    )
    .post(
      '/api/reservations/:id/renew',
      async ({ params, body, request, audit }) => {
        const holder = await holderOf(ctx, request)
        const ttl = ttlParam(body.ttl_ms)
        if (ttl === undefined) throw invalid('ttl_ms is required')
        return renewReservation(ctx, audit, holder, params.id, ttl)
      },
      {
        params: IdParams,
        body: t.Object({ ttl_ms: TtlMs('expires_at = now + ttl_ms') }, { examples: [{ ttl_ms: 1_800_000 }] }),
        response: { 200: ReservationSchema },
        audit: 'reservation.renew',
        detail: { summary: 'Renew a reservation (its holder)', tags: ['reservations'] },
      },
    )
    .delete(
      '/api/reservations/:id',
      async ({ params, query, request, audit }) => {
        if (isSet(query.force)) assertForce(request)
        await releaseReservation(ctx, audit, isSet(query.force) ? null : await holderOf(ctx, request), params.id)
        return { id: params.id, released: true as const }
      },
      {
        params: IdParams,
        query: ForceQuery,
        response: { 200: t.Object({ id: t.String(), released: t.Literal(true) }) },
        audit: 'reservation.release',
        detail: { summary: 'Release a reservation (its holder), or any with ?force=1', tags: ['reservations'] },
      },
    )
}

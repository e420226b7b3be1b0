// /api/audit: read the append-only audit log.
import { t } from 'elysia'
import type { Ctx } from '../services/context'
import { intParam, timeParam } from '../http/params'
import { audited } from '../http/audit'
import { invalid } from '../lib/errors'
import { DEFAULT_LIMIT, IntQuery } from '../http/models'

const AuditEntry = t.Object({
  id: t.Integer(),
  timestamp: t.String(),
  actor: t.String({ description: 'the instance id, else "token:<name>" for an agent or viewer token, else "admin", "anonymous" or "system"' }),
  action: t.String({ description: 'e.g. state.put, lock.acquire' }),
  resource: t.String(),
  detail: t.String(),
  outcome: t.UnionEnum(['success', 'error']),
})
const AuditSummary = t.Object({
  total_entries: t.Integer(),
  action_counts: t.Record(t.String(), t.Integer()),
  outcome_counts: t.Record(t.String(), t.Integer()),
  unique_actors: t.Integer(),
  unique_resources: t.Integer(),
})

/** Entries to skip; beyond 2^53 a number no longer counts entries exactly, so that is 400 too. */
function offsetParam(value: string | undefined): number {
  const n = intParam(value, 'offset', 0)
  if (!Number.isSafeInteger(n)) throw invalid(`invalid offset: expected an integer from 0 to ${Number.MAX_SAFE_INTEGER}`)
  return n
}

export function auditRoutes(ctx: Ctx) {
  return audited(ctx)
    .get(
      '/api/audit',
      ({ query }) =>
        ctx.store.audit.list({
          actor: query.actor || undefined,
          action: query.action || undefined,
          from: timeParam(query.from, 'from'),
          to: timeParam(query.to, 'to'),
          limit: intParam(query.limit, 'limit', DEFAULT_LIMIT, 1),
          offset: offsetParam(query.offset),
        }),
      {
        query: t.Object({
          actor: t.Optional(t.String()),
          action: t.Optional(t.String()),
          from: t.Optional(t.String({ description: 'RFC 3339' })),
          to: t.Optional(t.String({ description: 'RFC 3339' })),
          limit: IntQuery('at most this many', { minimum: 1, default: DEFAULT_LIMIT }),
          offset: IntQuery('entries to skip, newest first (paging)', { minimum: 0, maximum: Number.MAX_SAFE_INTEGER, default: 0 }),
        }),
        response: { 200: t.Array(AuditEntry) },
        detail: { summary: 'Audit entries, newest first', tags: ['audit'] },
      },
    )
    .get(
      '/api/audit/summary',
      ({ query }) => ctx.store.audit.summary(timeParam(query.from, 'from'), timeParam(query.to, 'to')),
      {
        query: t.Object({ from: t.Optional(t.String()), to: t.Optional(t.String()) }),
        response: { 200: AuditSummary },
        detail: { summary: 'Counts by action and outcome', tags: ['audit'] },
      },
    )
}

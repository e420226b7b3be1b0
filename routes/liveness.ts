// /api/liveness/check: runs the liveness check now instead of at the next tick.
import { t } from 'elysia'
import type { Ctx } from '../services/context'
import { checkLiveness } from '../services/instances'
import { audited } from '../http/audit'

export function livenessRoutes(ctx: Ctx) {
  return audited(ctx).post(
    '/api/liveness/check',
    async () => {
      const newly_stale = (await checkLiveness(ctx)).map(({ id, name, status }) => ({ id, name, status }))
      return { checked: true as const, newly_stale, count: newly_stale.length }
    },
    {
      response: {
        200: t.Object({
          checked: t.Literal(true),
          newly_stale: t.Array(t.Object({ id: t.String(), name: t.String(), status: t.String() })),
          count: t.Integer(),
        }),
      },
      detail: { summary: 'Force a liveness check', tags: ['instances'] },
    },
  )
}

// GET /health: liveness of the service itself; never behind auth. GET /livez and
// GET /readyz: the probes an orchestrator asks (Kubernetes, Docker's HEALTHCHECK),
// also open: /livez says the process answers, /readyz that it can serve (the
// database answers, its migrations are done, on PostgreSQL the event feed listens).
import { Elysia, t } from 'elysia'
import type { Ctx } from '../services/context'
import { AppError } from '../lib/errors'
import { formatDuration } from '../lib/time'

const Ok = t.Object({ status: t.Literal('ok') })

export function healthRoutes(startedAt: number) {
  return new Elysia().get('/health', () => ({ status: 'ok', uptime: formatDuration(Date.now() - startedAt) }), {
    response: t.Object({ status: t.String(), uptime: t.String() }),
    detail: { summary: 'Service health (no authentication)', tags: ['health'], security: [] },
  })
}

/** The probes, on the API port only: the dashboard's answer would say nothing of its own. */
export function probeRoutes(ctx: Ctx) {
  return new Elysia()
    .get('/livez', () => ({ status: 'ok' as const }), {
      response: Ok,
      detail: { summary: 'Liveness probe: the process answers (no authentication, touches nothing)', tags: ['health'], security: [] },
    })
    .get(
      '/readyz',
      async () => {
        let reason: string | null
        try {
          reason = await ctx.store.notReady()
        } catch (err) {
          reason = `database unreachable: ${(err as Error).message}`
        }
        // 503 {error, code} like every outage answer: a load balancer sends traffic elsewhere and asks again.
        if (reason) throw new AppError('unavailable', `not ready: ${reason}`)
        return { status: 'ok' as const }
      },
      {
        response: { 200: Ok, 503: t.Object({ error: t.String(), code: t.Integer() }, { description: 'Not ready: the error names what' }) },
        detail: {
          summary: 'Readiness probe (no authentication)',
          description:
            '200 once the database answers, its migrations are done and, on PostgreSQL, the event feed listens; else 503 `{error, code}` naming what is not ready.',
          tags: ['health'],
          security: [],
        },
      },
    )
}

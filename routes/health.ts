// GET /health: liveness of the service itself; never behind auth.
import { Elysia, t } from 'elysia'
import { formatDuration } from '../lib/time'

export function healthRoutes(startedAt: number) {
  return new Elysia().get('/health', () => ({ status: 'ok', uptime: formatDuration(Date.now() - startedAt) }), {
    response: t.Object({ status: t.String(), uptime: t.String() }),
    detail: { summary: 'Service health (no authentication)', tags: ['health'], security: [] },
  })
}

// /api/compliance: run the contract checks now, and read past runs.
import { t } from 'elysia'
import type { Ctx } from '../services/context'
import { runCompliance } from '../services/compliance'
import { intParam } from '../http/params'
import { noteAudit, audited } from '../http/audit'
import { DEFAULT_LIMIT, IntQuery } from '../http/models'

const tags = ['compliance']

const ComplianceRun = t.Object({
  id: t.Integer(),
  instance_id: t.String(),
  project: t.String(),
  contract: t.String(),
  pass: t.Boolean(),
  violations: t.Array(
    t.Object({
      field: t.String(),
      message: t.String(),
      endpoint: t.Optional(t.String({ description: '"METHOD /path", when the violation concerns one' })),
    }),
  ),
  run_at: t.String(),
})

export function complianceRoutes(ctx: Ctx) {
  return audited(ctx)
    .get(
      '/api/compliance/history',
      ({ query }) =>
        ctx.store.compliance.history({
          instance_id: query.instance_id || undefined,
          limit: intParam(query.limit, 'limit', DEFAULT_LIMIT, 1),
        }),
      {
        query: t.Object({
          instance_id: t.Optional(t.String({ description: 'default: all instances' })),
          limit: IntQuery('at most this many', { minimum: 1, default: DEFAULT_LIMIT }),
        }),
        response: { 200: t.Array(ComplianceRun) },
        detail: { summary: 'Compliance runs, newest first', tags },
      },
    )
    .post(
      '/api/compliance/run',
      async ({ request }) => {
        const runs = await runCompliance(ctx)
        noteAudit(request, `${runs.length} runs, ${runs.filter((r) => !r.pass).length} failing`)
        return { checked: true, runs, count: runs.length }
      },
      {
        response: { 200: t.Object({ checked: t.Literal(true), runs: t.Array(ComplianceRun), count: t.Integer() }) },
        audit: 'compliance.run',
        detail: { summary: 'Check every active instance against its project contracts now', tags },
      },
    )
}

// /api/validate: a project's rules (read, replace) and validating content
// against the accepted rules of the project and of _global.
import { t } from 'elysia'
import { ProjectParams } from '../http/models'
import type { Ctx } from '../services/context'
import { replaceRules } from '../services/rules'
import { MAX_VIOLATIONS, SEVERITIES, checkRules } from '../validation/rules'
import { validate } from '../validation/validation'
import { countForCaller } from '../http/caller'
import { audited } from '../http/audit'
import { keyParam } from '../http/documents'
import { RuleList, RuleSchema } from './rules'

const tags = ['validation']

const Validation = t.Object({
  project: t.String(),
  violations: t.Array(
    t.Object({
      rule_id: t.String(),
      severity: t.UnionEnum(SEVERITIES),
      message: t.String(),
      line: t.Optional(t.Integer({ description: '1-based; regex and custom rules only' })),
      match: t.Optional(t.String()),
    }),
  ),
  count: t.Integer({ description: 'every violation found, listed or not' }),
  truncated: t.Optional(t.Literal(true, { description: `more than ${MAX_VIOLATIONS} violations: the rest are not listed` })),
})

export function validateRoutes(ctx: Ctx) {
  return audited(ctx)
    .get(
      '/api/validate/:project/rules',
      async ({ params, query }) => {
        const project = keyParam(params.project, 'project')
        const rules = await ctx.store.rules.list({ project, status: 'accepted' })
        // The same stack filter as validation: that stack's rules plus the universal ones.
        const stack = query.stack?.trim()
        return { project, rules: stack ? rules.filter((r) => !r.stack || r.stack === stack) : rules }
      },
      {
        params: ProjectParams,
        query: t.Object({ stack: t.Optional(t.String({ description: "rules of this stack plus those without a stack" })) }),
        response: { 200: t.Object({ project: t.String(), rules: t.Array(RuleSchema) }) },
        detail: { summary: "The project's accepted rules (not _global's)", tags },
      },
    )
    .put(
      '/api/validate/:project/rules',
      async ({ params, body, audit }) => {
        const project = keyParam(params.project, 'project')
        const rules = checkRules(body, { project, allowEmpty: true })
        return { project, count: await replaceRules(ctx, audit, project, rules) }
      },
      {
        params: ProjectParams,
        body: RuleList('the complete list; any project field is ignored (the path names it)'),
        response: { 200: t.Object({ project: t.String(), count: t.Integer({ description: 'accepted rules now' }) }) },
        audit: 'rules.put',
        detail: {
          summary: "Replace the project's accepted rules (stored as source local)",
          description: 'Atomic: a rule without rule_id or pattern, a duplicate rule_id or a pattern RE2 cannot compile is 400 naming the rule, and nothing changes. Proposed and rejected rules are kept unless a rule of the list has their id.',
          tags,
        },
      },
    )
    .post(
      '/api/validate/:project',
      async ({ params, body, request }) => {
        const project = keyParam(params.project, 'project')
        const rules = await ctx.store.rules.forValidation(project)
        const found = await validate(rules, { content: body.content, filename: body.filename, stack: body.stack?.trim() }, ctx.config.validationTimeoutMs)
        if (found.count) await countForCaller(ctx, request, 'violations', found.count)
        // The violations arrive as JSON text (validation/validation.ts): spliced into the answer as they are.
        const answer = `{"project":${JSON.stringify(project)},"violations":${found.violations},"count":${found.count}${found.truncated ? ',"truncated":true' : ''}}`
        return new Response(answer, { headers: { 'content-type': 'application/json;charset=utf-8' } })
      },
      {
        params: ProjectParams,
        body: t.Object(
          {
            content: t.String({ description: 'the file content (LF, CRLF or CR line breaks)' }),
            filename: t.Optional(t.String({ description: "matched against each rule's applies_to globs (full path or base name)" })),
            stack: t.Optional(t.String({ description: 'rules of another stack are skipped' })),
          },
          { examples: [{ content: '// TODO: totals\nexport const total = 1\n', filename: 'src/cart.ts' }] },
        ),
        // The answer is spliced from JSON text, so this schema documents it and checks nothing.
        response: { 200: Validation },
        detail: {
          summary: 'Validate content against the accepted rules of the project and _global',
          description: `At most ${MAX_VIOLATIONS} violations are listed; \`count\` is the true total and \`truncated: true\` says some were left out. A validation running longer than --validation-timeout (default 10 s) is stopped with 413.`,
          tags,
        },
      },
    )
}

// /api/approvals: agents' permission requests and "needs input" notices, decided by a
// person (the admin token); /api/approval-rules: what decides them first (oversight.md).
// The requests themselves come in through the hook endpoint (routes/hooks.ts).
import { t } from 'elysia'
import type { Ctx } from '../services/context'
import { BATCH_MAX, LIST_DEFAULT, LIST_MAX, STATUSES, decideApproval, decideMany, getApproval, listApprovals } from '../services/approval-decisions'
import { MESSAGE_MAX, createRule, deleteRule, listRules } from '../services/approval-rules'
import { audited } from '../http/audit'
import { IdParams, IntQuery, Nullable, checks } from '../http/models'

const Status = t.Union([t.Literal('pending'), t.Literal('allowed'), t.Literal('denied'), t.Literal('expired'), t.Literal('withdrawn')])
const Behavior = t.Union([t.Literal('allow'), t.Literal('deny')])

const ApprovalSchema = t.Object({
  id: t.String(),
  kind: t.Union([t.Literal('permission'), t.Literal('input')], { description: 'input: the agent waits for its user (cannot be decided)' }),
  agent: t.String({ description: 'the agent whose hook asked: claude-code, codex, copilot-cli, …' }),
  name: t.String({ description: "the agent instance's name" }),
  instance_id: t.String(),
  session_id: t.String(),
  project: t.String(),
  tool: t.String({ description: 'the tool asked for ("" for needs input)' }),
  input: t.Unknown({ description: 'the tool input (at most 16 KB; longer: its JSON text cut, input_truncated true)' }),
  input_truncated: t.Boolean(),
  summary: t.String({ description: 'the command for shell tools, else the file path, else the input as compact JSON; at most 500 characters' }),
  status: Status,
  rule_id: Nullable(t.String()),
  decided_by: Nullable(t.String({ description: '"rule", or the audit actor of the person who decided' })),
  message: Nullable(t.String()),
  created_at: t.String(),
  decided_at: Nullable(t.String()),
  expires_at: Nullable(t.String({ description: 'until when the hook answer waits for a decision' })),
})

const RuleSchema = t.Object({
  id: t.String(),
  tool: t.String(),
  match: t.String(),
  agents: t.String(),
  decision: Behavior,
  message: Nullable(t.String()),
  created_at: t.String(),
})

const Message = t.Optional(t.String({ maxLength: MESSAGE_MAX, description: 'the person\'s words: a denied agent reads them' }))
const Glob = (description: string) => t.Optional(t.String({ minLength: 1, maxLength: 1000, description: `${description}; default *` }))

const DecisionBody = t.Object(
  { behavior: Behavior, message: Message, remember: t.Optional(t.Boolean({ description: 'also add a rule for the same tool, agent name and exact summary' })) },
  { examples: [{ behavior: 'allow' }, { behavior: 'deny', message: 'not on main: use a branch' }] },
)

export function approvalsRoutes(ctx: Ctx) {
  return audited(ctx)
    .get('/api/approvals', ({ query }) => listApprovals(ctx, query), {
      query: t.Object({
        status: t.Optional(t.String({ description: STATUSES.join(' | '), ...checks({ enum: STATUSES }) })),
        name: t.Optional(t.String({ description: "only this agent name's" })),
        limit: IntQuery('at most this many', { minimum: 1, maximum: LIST_MAX, default: LIST_DEFAULT }),
      }),
      response: { 200: t.Array(ApprovalSchema) },
      detail: { summary: 'Approvals, newest first', tags: ['approvals'] },
    })
    .get('/api/approvals/:id', ({ params }) => getApproval(ctx, params.id), {
      params: IdParams,
      response: { 200: ApprovalSchema },
      detail: { summary: 'One approval', tags: ['approvals'] },
    })
    .post('/api/approvals/:id/decision', ({ params, body, audit }) => decideApproval(ctx, audit, params.id, body), {
      params: IdParams,
      body: DecisionBody,
      response: { 200: ApprovalSchema },
      audit: 'approval.decide',
      detail: {
        summary: 'Allow or deny a pending request (admin): its held hook is answered at once, on whichever replica holds it',
        operationId: 'decideApproval',
        description: '409 when it is not pending (its status named) or is a "needs input" notice.',
        tags: ['approvals'],
      },
    })
    .post('/api/approvals/decision', ({ body, audit }) => decideMany(ctx, audit, body), {
      body: t.Object(
        { ids: t.Array(t.String({ minLength: 1 }), { minItems: 1, maxItems: BATCH_MAX }), behavior: Behavior, message: Message },
        { examples: [{ ids: ['0b6f…', '5c1e…'], behavior: 'allow' }] },
      ),
      response: { 200: t.Object({ decided: t.Array(ApprovalSchema), skipped: t.Array(t.Object({ id: t.String(), status: t.String({ description: 'its status, or not_found' }) })) }) },
      audit: 'approval.decide',
      detail: { summary: 'Decide several pending requests at once (admin)', operationId: 'decideApprovals', tags: ['approvals'] },
    })
    .post(
      '/api/approval-rules',
      async ({ body, audit, set }) => {
        const rule = await createRule(ctx, audit, body)
        set.status = 201
        return rule
      },
      {
        body: t.Object(
          {
            tool: Glob('glob on the tool name (Bash, Edit, …)'),
            match: Glob('glob on the summary: * matches any run of characters, slashes and spaces included'),
            agents: Glob("glob on the agent instance's name"),
            decision: Behavior,
            message: Message,
          },
          { examples: [{ tool: 'Bash', match: 'npm test*', decision: 'allow' }, { tool: 'Bash', match: 'git push*', decision: 'deny', message: 'pushes go through review' }] },
        ),
        response: { 201: RuleSchema },
        audit: 'approval.rule.create',
        detail: { summary: 'Add a rule that decides matching requests at once; deny wins (admin)', tags: ['approvals'] },
      },
    )
    .get('/api/approval-rules', () => listRules(ctx), {
      response: { 200: t.Array(RuleSchema) },
      detail: { summary: 'Approval rules, oldest first', tags: ['approvals'] },
    })
    .delete(
      '/api/approval-rules/:id',
      async ({ params, audit, set }) => {
        await deleteRule(ctx, audit, params.id)
        set.status = 204
      },
      {
        params: IdParams,
        response: { 204: t.Void({ description: 'deleted' }) },
        audit: 'approval.rule.delete',
        detail: { summary: 'Delete an approval rule (admin)', tags: ['approvals'] },
      },
    )
}

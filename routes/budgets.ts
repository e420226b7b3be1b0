// /api/budgets: limits on what LLM usage in a scope may cost per window (oversight.md "Budgets").
import { t } from 'elysia'
import type { Ctx } from '../services/context'
import { audited } from '../http/audit'
import { checks } from '../http/models'
import { invalid, notFound } from '../lib/errors'
import { BUDGET_SCOPES, BUDGET_WINDOWS, deleteBudget, putBudget, viewOf } from '../services/budgets'
import type { BudgetSpec } from '../store/budgets'

const ACTIONS = ['warn', 'deny'] as const
const MAX_LIMIT_USD = 1e9
const NAME = /^[A-Za-z0-9._-]{1,100}$/

const tags = ['budgets']

const BudgetSchema = t.Object({
  name: t.String(),
  scope: t.UnionEnum(['agent', 'project', 'task', 'queue', 'all']),
  target: t.String({ description: 'empty for scope all' }),
  limit_usd: t.Number(),
  window: t.UnionEnum(['day', 'week', 'total']),
  action: t.UnionEnum([...ACTIONS]),
  spent_usd: t.Number({ description: 'cost of the usage in scope since window_start' }),
  window_start: t.String({ description: 'start of the current window: UTC midnight (day), Monday UTC midnight (week), the epoch (total)' }),
  created_at: t.String(),
  updated_at: t.String(),
})

const Params = t.Object({ name: t.String({ description: '1 … 100 of A-Z a-z 0-9 . _ -' }) })

function nameOf(raw: string): string {
  const name = decodeURIComponent(raw)
  if (!NAME.test(name)) throw invalid('invalid budget name: 1 … 100 characters of A-Z a-z 0-9 . _ -')
  return name
}

function specOf(name: string, body: Record<string, unknown>): BudgetSpec {
  const { scope, target, limit_usd, window, action } = body
  const oneOf = (field: string, v: unknown, allowed: readonly string[]) => {
    if (typeof v !== 'string' || !allowed.includes(v)) throw invalid(`invalid ${field}: expected one of ${allowed.join(', ')}`)
    return v
  }
  const s = oneOf('scope', scope, BUDGET_SCOPES) as BudgetSpec['scope']
  let tgt = ''
  if (s !== 'all') {
    if (typeof target !== 'string' || !target.trim() || target.length > 1000) throw invalid(`target is required for scope ${s}: ${s === 'task' ? 'a task id' : `a${s === 'agent' ? 'n agent' : s === 'project' ? ' project' : ' queue'} name`} (1 … 1000 characters)`)
    tgt = target.trim()
    if (s === 'task' && !/^[1-9]\d{0,15}$/.test(tgt)) throw invalid('invalid target: a task id (a positive integer) for scope task')
  }
  if (typeof limit_usd !== 'number' || !Number.isFinite(limit_usd) || limit_usd <= 0 || limit_usd > MAX_LIMIT_USD)
    throw invalid(`invalid limit_usd: a number > 0 and at most ${MAX_LIMIT_USD}`)
  return {
    name,
    scope: s,
    target: tgt,
    limit_usd,
    window: oneOf('window', window, BUDGET_WINDOWS) as BudgetSpec['window'],
    action: oneOf('action', action, ACTIONS) as BudgetSpec['action'],
  }
}

export function budgetsRoutes(ctx: Ctx) {
  return audited(ctx)
    .get('/api/budgets', async () => (await ctx.store.budgets.list()).map(viewOf), {
      response: { 200: t.Array(BudgetSchema) },
      detail: { summary: 'Every budget, with what its current window has spent', tags },
    })
    .get(
      '/api/budgets/:name',
      async ({ params }) => {
        const name = nameOf(params.name)
        const b = await ctx.store.budgets.get(name)
        if (!b) throw notFound(`budget ${name} not found`)
        return viewOf(b)
      },
      { params: Params, response: { 200: BudgetSchema }, detail: { summary: 'One budget, with what its current window has spent', tags } },
    )
    .put(
      '/api/budgets/:name',
      async ({ params, body, audit, set }) => {
        const { created, budget } = await putBudget(ctx, audit, specOf(nameOf(params.name), body as Record<string, unknown>))
        set.status = created ? 201 : 200
        return budget
      },
      {
        params: Params,
        body: t.Object(
          {
            scope: t.String({ ...checks({ enum: BUDGET_SCOPES }) }),
            target: t.Optional(t.String({ description: 'an agent name, project, task id or queue; ignored for scope all' })),
            limit_usd: t.Number({ description: '> 0', ...checks({ maximum: MAX_LIMIT_USD }) }),
            window: t.String({ ...checks({ enum: BUDGET_WINDOWS }) }),
            action: t.String({ ...checks({ enum: ACTIONS }) }),
          },
          { examples: [{ scope: 'agent', target: 'ada', limit_usd: 20, window: 'day', action: 'deny' }] },
        ),
        response: { 200: BudgetSchema, 201: BudgetSchema },
        audit: 'budget.put',
        detail: {
          summary: 'Create (201) or replace (200) a budget (admin only)',
          description:
            'At 80% of limit_usd the event budget.warning, at 100% budget.exceeded (each once per window). An exceeded warn budget adds a line to the next hook context of each session in its scope; a deny budget denies their PreToolUse and makes claims 409. Raising the limit or a new window lifts it.',
          tags,
        },
      },
    )
    .delete(
      '/api/budgets/:name',
      async ({ params, audit, set }) => {
        await deleteBudget(ctx, audit, nameOf(params.name))
        set.status = 204
      },
      { params: Params, response: { 204: t.Void() }, audit: 'budget.delete', detail: { summary: 'Delete a budget (admin only)', tags } },
    )
}

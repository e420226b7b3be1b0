// /api/rules: the rule lifecycle — agents propose (learned, proposed), people
// accept or reject; export and import move accepted rules between servers.
import { t } from 'elysia'
import { invalid } from '../lib/errors'
import type { Ctx } from '../services/context'
import { MATCH_TYPES, SEVERITIES, SOURCES, STATUSES, checkRule, checkRules, type Source } from '../validation/rules'
import type { AuditScope } from '../services/audit'
import { decideRule, deleteRule, importRules, proposeRule, putRule } from '../services/rules'
import { enumParam } from '../http/params'
import { audited } from '../http/audit'
import { keyParam } from '../http/documents'
import { Deleted, checks } from '../http/models'

const tags = ['rules']

/** A rule the examples propose, accept and put: valid as it stands (checkRule). */
const EXAMPLE_RULE = {
  project: 'shop',
  rule_id: 'no-todo',
  pattern: 'TODO',
  severity: 'warning',
  match_type: 'regex',
  message: 'TODO left in the code',
  applies_to: ['*.ts'],
  stack: '',
  context: 'unfinished work slips into releases',
} as const

const RuleFields = {
  project: t.Optional(t.String({ description: 'required in propose and import; _global applies to every project' })),
  rule_id: t.String({ description: 'unique within the project' }),
  pattern: t.String({ description: 'RE2 regex (no backreferences or lookaround), or a custom check name' }),
  severity: t.Optional(t.String({ description: 'default error', ...checks({ enum: SEVERITIES, default: 'error' }) })),
  match_type: t.Optional(t.String({ description: 'default regex', ...checks({ enum: MATCH_TYPES, default: 'regex' }) })),
  message: t.Optional(t.String({ description: 'default: generated from the pattern' })),
  applies_to: t.Optional(t.Array(t.String(), { description: 'filename globs, default ["*"]' })),
  stack: t.Optional(t.String({ description: 'empty: every stack' })),
  proposed_by: t.Optional(t.String()),
  context: t.Optional(t.String()),
}

/** One rule in a request body; checkRule (validation/rules.ts) applies the rest (non-empty, enums, RE2 syntax). */
export const RuleBody = t.Object(RuleFields, { examples: [EXAMPLE_RULE] })

/** A stored rule, as every rule listing answers it. */
export const RuleSchema = t.Object({
  project: t.String(),
  rule_id: t.String(),
  severity: t.UnionEnum(SEVERITIES),
  match_type: t.UnionEnum(MATCH_TYPES),
  pattern: t.String(),
  message: t.String(),
  applies_to: t.Array(t.String()),
  stack: t.String(),
  source: t.UnionEnum(SOURCES),
  status: t.UnionEnum(STATUSES),
  proposed_by: t.String(),
  context: t.String(),
  created_at: t.String(),
  updated_at: t.String(),
})
const Decision = <S extends (typeof STATUSES)[number]>(status: S) => t.Object({ project: t.String(), rule_id: t.String(), status: t.Literal(status) })
const Decided = t.Object({ project: t.String(), rule_id: t.String(), status: t.UnionEnum(['accepted', 'rejected']) })

/**
 * The body of a route taking a list of rules: accepted as is (Kind Unknown) and
 * checked by checkRules, whose messages name the rule's index ("rule 2: pattern
 * is required"); the array schema it carries (under allOf: a top-level type would
 * make Elysia coerce an object body into an array) is for the OpenAPI document only.
 */
export const RuleList = (description: string) => t.Unknown({ allOf: [t.Array(RuleBody)], description, examples: [[EXAMPLE_RULE]] })

const DecisionParams = t.Object({ project: t.String(), ruleID: t.String() })

/** PUT /api/rules/{project}/{ruleID}: one rule; the path names it, so project and rule_id in the body are optional. */
const OneRuleBody = t.Object(
  {
    ...RuleFields,
    rule_id: t.Optional(t.String({ description: 'when given, must equal the path' })),
    source: t.Optional(t.String({ description: 'local, learned or external; default: kept, or local for a new rule', ...checks({ enum: SOURCES }) })),
    status: t.Optional(t.String({ description: 'accepted, proposed or rejected; default: kept, or accepted for a new rule', ...checks({ enum: STATUSES }) })),
  },
  { examples: [{ pattern: EXAMPLE_RULE.pattern, severity: EXAMPLE_RULE.severity, message: EXAMPLE_RULE.message, applies_to: EXAMPLE_RULE.applies_to }] },
)

function listParam<T extends string>(value: string | undefined, name: string, allowed: readonly T[], def: T[]): T[] {
  if (value === undefined || value.trim() === '') return def
  const items = [...new Set(value.split(',').map((s) => s.trim()).filter(Boolean))]
  for (const item of items) if (!allowed.includes(item as T)) throw invalid(`invalid ${name}: "${item}" (expected ${allowed.join(', ')})`)
  return items as T[]
}

export function rulesRoutes(ctx: Ctx) {
  /** accept and reject: one transition out of proposed. */
  const decide =
    (verdict: 'accepted' | 'rejected') =>
    async ({ params, audit }: { params: { project: string; ruleID: string }; audit: AuditScope }) => {
      const rule = await decideRule(ctx, audit, keyParam(params.project, 'project'), keyParam(params.ruleID, 'rule id'), verdict)
      return { project: rule.project, rule_id: rule.rule_id, status: verdict }
    }

  return audited(ctx)
    .get(
      '/api/rules',
      ({ query }) => {
        const status = enumParam(query.status, 'status', STATUSES, undefined)
        return ctx.store.rules.list({ status, project: query.project || undefined })
      },
      {
        query: t.Object({
          status: t.Optional(t.String({ description: 'accepted, proposed or rejected', ...checks({ enum: STATUSES }) })),
          project: t.Optional(t.String()),
        }),
        response: { 200: t.Array(RuleSchema) },
        detail: { summary: 'Every rule of every source and status (filterable), by project and rule_id', tags },
      },
    )
    .post(
      '/api/rules/propose',
      async ({ body, audit }) => {
        const rule = await proposeRule(ctx, audit, checkRule(body))
        return { project: rule.project, rule_id: rule.rule_id, status: 'proposed' as const }
      },
      {
        body: RuleBody,
        response: { 200: Decision('proposed') },
        audit: 'rule.propose',
        detail: {
          summary: 'Propose a rule (source learned, status proposed: it does not fire until accepted)',
          description: "A rejected rule of that rule_id is replaced by the new proposal (back to proposed); 409 when the project has that rule_id in any other status. proposed_by defaults to the caller's instance (X-Instance-Token).",
          tags,
        },
      },
    )
    .post('/api/rules/:project/:ruleID/accept', decide('accepted'), {
      params: DecisionParams,
      response: { 200: Decided },
      audit: 'rule.accept',
      detail: { summary: 'Accept a proposed rule; 404 when missing or not proposed', tags },
    })
    .post('/api/rules/:project/:ruleID/reject', decide('rejected'), {
      params: DecisionParams,
      response: { 200: Decided },
      audit: 'rule.reject',
      detail: { summary: 'Reject a proposed rule (kept, never fires); 404 when missing or not proposed', tags },
    })
    .put(
      '/api/rules/:project/:ruleID',
      async ({ params, body, audit }) => {
        const project = keyParam(params.project, 'project')
        const ruleId = keyParam(params.ruleID, 'rule id')
        if (body.rule_id !== undefined && body.rule_id.trim() !== ruleId) throw invalid(`rule_id "${body.rule_id}" does not match the path (${ruleId})`)
        const given = {
          source: enumParam(body.source, 'source', SOURCES, undefined),
          status: enumParam(body.status, 'status', STATUSES, undefined),
        }
        const draft = checkRule({ ...body, rule_id: ruleId }, { project })
        return putRule(ctx, audit, draft, given)
      },
      {
        params: DecisionParams,
        body: OneRuleBody,
        response: { 200: RuleSchema },
        audit: 'rule.put',
        detail: {
          summary: 'Create or replace one rule of a project, leaving its other rules alone',
          description: 'A new rule is source local, status accepted; an existing one keeps its source, status, proposed_by and context unless the body names them. 400 on a bad rule (as the list PUT, e.g. a pattern RE2 cannot compile) and nothing changes.',
          tags,
        },
      },
    )
    .delete(
      '/api/rules/:project/:ruleID',
      async ({ params, audit }) => {
        const rule = await deleteRule(ctx, audit, keyParam(params.project, 'project'), keyParam(params.ruleID, 'rule id'))
        return { deleted: `${rule.project}/${rule.rule_id}` }
      },
      {
        params: DecisionParams,
        response: { 200: Deleted },
        audit: 'rule.delete',
        detail: { summary: 'Delete one rule, whatever its source and status; 404 when missing', tags },
      },
    )
    .get(
      '/api/rules/export',
      ({ query }) => ctx.store.rules.export(listParam<Source>(query.source, 'source', SOURCES, ['local', 'learned'])),
      {
        query: t.Object({ source: t.Optional(t.String({ description: 'comma-separated: local, learned, external; default local,learned' })) }),
        response: { 200: t.Array(RuleSchema) },
        detail: { summary: 'Accepted rules of the given sources', tags },
      },
    )
    .post(
      '/api/rules/import',
      async ({ body, audit }) => {
        if (Array.isArray(body) && body.length === 0) throw invalid('rules array is empty')
        return { imported: await importRules(ctx, audit, checkRules(body)) }
      },
      {
        body: RuleList('each rule names its project; source and status in the objects are ignored'),
        response: { 200: t.Object({ imported: t.Integer({ description: 'rules stored' }) }) },
        audit: 'rules.import',
        detail: {
          summary: 'Upsert rules by project + rule_id as source external, status accepted',
          description: 'All or nothing: one bad rule is 400 naming it, and nothing is stored.',
          tags,
        },
      },
    )
}

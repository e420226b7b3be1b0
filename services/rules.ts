// Rule use cases: propose, accept/reject, replace a project's list, import. Each
// commits with its rule.* event and audit entry.
import type { Ctx } from './context'
import type { Rule, RuleDraft, Source, Status } from '../validation/rules'
import { recordAudit, type AuditScope } from './audit'
import type { Tx } from '../store'

const SOURCE = 'rules'

export function proposeRule(ctx: Ctx, scope: AuditScope | undefined, draft: RuleDraft): Promise<Rule> {
  if (!draft.proposed_by) draft.proposed_by = scope?.instanceId ?? ''
  return ctx.store.write(async (tx) => {
    const rule = await tx.rules.propose(draft)
    await tx.emit('rule.proposed', rule, SOURCE)
    await recordAudit(tx, scope, `${rule.project}/${rule.rule_id}`)
    return rule
  })
}

/** proposed → accepted or rejected. */
export function decideRule(ctx: Ctx, scope: AuditScope | undefined, project: string, ruleId: string, verdict: 'accepted' | 'rejected'): Promise<Rule> {
  return ctx.store.write(async (tx) => {
    const rule = await tx.rules.decide(project, ruleId, verdict)
    await tx.emit(`rule.${verdict}`, rule, SOURCE)
    await recordAudit(tx, scope)
    return rule
  })
}

/** Creates or replaces one rule, leaving the project's other rules (and their provenance) alone. */
export function putRule(ctx: Ctx, scope: AuditScope | undefined, draft: RuleDraft, given: { source?: Source; status?: Status }): Promise<Rule> {
  return ctx.store.write(async (tx) => {
    const { rule, created } = await tx.rules.put(draft, given)
    await tx.emit(created ? 'rule.created' : 'rule.updated', rule, SOURCE)
    await recordAudit(tx, scope, `${created ? 'created' : 'updated'} (${rule.source}, ${rule.status})`)
    return rule
  })
}

/** Deletes one rule, whatever its status. */
export function deleteRule(ctx: Ctx, scope: AuditScope | undefined, project: string, ruleId: string): Promise<Rule> {
  return ctx.store.write(async (tx) => {
    const rule = await tx.rules.remove(project, ruleId)
    await tx.emit('rule.deleted', rule, SOURCE)
    await recordAudit(tx, scope, `${rule.source}, ${rule.status}`)
    return rule
  })
}

/** The project's accepted rules become exactly `rules` (rules.replaced). */
export function replaceRules(ctx: Ctx, scope: AuditScope | undefined, project: string, rules: RuleDraft[]): Promise<number> {
  return ctx.store.write(async (tx) => {
    const count = await tx.rules.replace(project, rules)
    await tx.emit('rules.replaced', { project, count, rule_ids: rules.map((r) => r.rule_id) }, SOURCE)
    await recordAudit(tx, scope, `${count} rules`)
    return count
  })
}

/** Imports rules as external and accepted, inside the caller's unit (import route, template apply). */
export async function importRulesIn(tx: Tx, rules: RuleDraft[]): Promise<number> {
  const count = await tx.rules.import(rules)
  const projects = [...new Set(rules.map((r) => r.project))]
  await tx.emit('rules.imported', { projects, count, rule_ids: rules.map((r) => `${r.project}/${r.rule_id}`) }, SOURCE)
  return count
}

export function importRules(ctx: Ctx, scope: AuditScope | undefined, rules: RuleDraft[]): Promise<number> {
  return ctx.store.write(async (tx) => {
    const count = await importRulesIn(tx, rules)
    await recordAudit(tx, scope, `${count} rules`)
    return count
  })
}

// Approval rules (oversight.md): allow or deny a request before a person is asked, by
// globs on the tool name, the agent's name and the summary; when rules disagree, deny
// wins. Made and deleted by the admin, each with its audit entry.
import type { Ctx } from './context'
import type { Tx } from '../store'
import type { ApprovalRule } from '../store/approvals'
import { invalid, notFound } from '../lib/errors'
import { nowIso } from '../lib/time'
import { recordAudit, type AuditScope } from './audit'

export const MESSAGE_MAX = 2000
export const BEHAVIORS = ['allow', 'deny'] as const
export type Behavior = (typeof BEHAVIORS)[number]

const globCache = new Map<string, RegExp>()

/** A rule's glob: `*` any run of characters (slashes and spaces too), `?` one, `\` makes the next one literal. */
export function globMatches(pattern: string, text: string): boolean {
  if (pattern === '*') return true
  let re = globCache.get(pattern)
  if (!re) {
    let src = ''
    for (let i = 0; i < pattern.length; i++) {
      const c = pattern[i]
      if (c === '\\' && i + 1 < pattern.length) src += escapeRe(pattern[++i])
      else if (c === '*') src += '[\\s\\S]*'
      else if (c === '?') src += '[\\s\\S]'
      else src += escapeRe(c)
    }
    re = new RegExp(`^${src}$`)
    if (globCache.size > 1024) globCache.clear()
    globCache.set(pattern, re)
  }
  return re.test(text)
}
const escapeRe = (c: string) => c.replace(/[.*+?^${}()|[\]\\/-]/g, '\\$&')
/** `text` as a glob matching itself only (a remembered decision's summary). */
export const literalGlob = (text: string) => text.replace(/[\\*?]/g, '\\$&')

/** The rule that decides a request: any matching deny beats every allow; null when none matches. */
export function ruleFor(rules: readonly ApprovalRule[], tool: string, name: string, summary: string): ApprovalRule | null {
  let allow: ApprovalRule | null = null
  for (const r of rules) {
    if (!globMatches(r.tool, tool) || !globMatches(r.agents, name) || !globMatches(r.match, summary)) continue
    if (r.decision === 'deny') return r
    allow ??= r
  }
  return allow
}

export interface RuleInput {
  tool?: unknown
  match?: unknown
  agents?: unknown
  decision?: unknown
  message?: unknown
}

const globField = (name: string, v: unknown): string => {
  if (v === undefined || v === null) return '*'
  if (typeof v !== 'string' || v === '' || v.length > 1000) throw invalid(`invalid ${name}: expected a glob of 1 to 1000 characters (default *)`)
  return v
}
export const messageField = (v: unknown): string | null => {
  if (v === undefined || v === null || v === '') return null
  if (typeof v !== 'string' || v.length > MESSAGE_MAX) throw invalid(`invalid message: expected at most ${MESSAGE_MAX} characters`)
  return v
}
export const behaviorField = (v: unknown): Behavior => {
  if (v !== 'allow' && v !== 'deny') throw invalid('invalid behavior: expected "allow" or "deny"')
  return v
}

export async function addRule(tx: Tx, r: Omit<ApprovalRule, 'id' | 'created_at'>): Promise<ApprovalRule> {
  const rule: ApprovalRule = { id: crypto.randomUUID(), ...r, created_at: nowIso() }
  await tx.approvals.addRule(rule)
  return rule
}
export const describeRule = (r: ApprovalRule) => `${r.decision} tool ${r.tool}, agents ${r.agents}, match ${r.match}`

/** POST /api/approval-rules: 201's body. */
export function createRule(ctx: Ctx, scope: AuditScope | undefined, input: RuleInput): Promise<ApprovalRule> {
  if (input.decision !== 'allow' && input.decision !== 'deny') throw invalid('invalid decision: expected "allow" or "deny"')
  const r = {
    tool: globField('tool', input.tool),
    match: globField('match', input.match),
    agents: globField('agents', input.agents),
    decision: input.decision as Behavior,
    message: messageField(input.message),
  }
  return ctx.store.write(async (tx) => {
    const rule = await addRule(tx, r)
    await recordAudit(tx, scope, `${rule.id}: ${describeRule(rule)}`)
    return rule
  })
}

/** DELETE /api/approval-rules/{id}: 404 when unknown. */
export function deleteRule(ctx: Ctx, scope: AuditScope | undefined, id: string): Promise<void> {
  return ctx.store.write(async (tx) => {
    if (!(await tx.approvals.deleteRule(id))) throw notFound(`approval rule ${id} not found`)
    await recordAudit(tx, scope, id)
  })
}

export const listRules = (ctx: Ctx) => ctx.store.approvals.rules()

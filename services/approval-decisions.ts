// Decisions on approvals (oversight.md): a person (the admin token) allows or denies a
// pending request, one or several in one unit, optionally remembered as a rule; each
// decision commits with its event, which answers the held hook wherever it is held.
import type { Ctx } from './context'
import type { Tx } from '../store'
import type { Approval, ApprovalStatus } from '../store/approvals'
import { conflict, invalid, notFound } from '../lib/errors'
import { nowIso } from '../lib/time'
import { recordAudit, type AuditScope } from './audit'
import { settle } from './approvals'
import { addRule, behaviorField, describeRule, literalGlob, messageField, type Behavior } from './approval-rules'

export const LIST_DEFAULT = 100
export const LIST_MAX = 1000
export const BATCH_MAX = 1000
export const STATUSES: readonly ApprovalStatus[] = ['pending', 'allowed', 'denied', 'expired', 'withdrawn']

export interface DecisionInput {
  behavior?: unknown
  message?: unknown
  remember?: unknown
}

/** Why `a` cannot be decided now, or null. A pending request whose holder went away (its wait long over) expires here. */
function refusal(a: Approval): string | null {
  if (a.kind === 'input') return `approval ${a.id} is a "needs input" notice from ${a.name}: it cannot be allowed or denied; send the agent a message instead`
  if (a.status !== 'pending') return `approval ${a.id} is ${a.status}${a.decided_by ? ` (by ${a.decided_by})` : ''}: only a pending one can be decided`
  return null
}
/** A request's wait is over this long before a decision is refused as too late (its holder went away). */
const OVERDUE_AFTER_MS = 1000
const overdue = (a: Approval) => a.status === 'pending' && a.expires_at !== null && Date.parse(a.expires_at) + OVERDUE_AFTER_MS < Date.now()

/** Decides one pending approval in `tx`: the approval, or why not. */
async function decideIn(tx: Tx, id: string, behavior: Behavior, message: string | null, by: string): Promise<{ decided: Approval } | { status: string; why: string }> {
  // The common case in one statement: a pending request within its wait (and a second of grace).
  const decidableFrom = new Date(Date.now() - OVERDUE_AFTER_MS).toISOString()
  const decided = await settle(tx, id, { status: behavior === 'allow' ? 'allowed' : 'denied', decided_by: by, message, at: nowIso() }, decidableFrom)
  if (decided) return { decided }
  let a = await tx.approvals.get(id)
  if (!a) return { status: 'not_found', why: `approval ${id} not found` }
  if (overdue(a)) a = (await settle(tx, id, { status: 'expired', at: nowIso() })) ?? a
  return { status: a.status, why: refusal(a) ?? `approval ${id} was decided meanwhile` }
}

/** POST /api/approvals/{id}/decision. 404 unknown, 409 not pending (its status named), 400 another behavior. */
export async function decideApproval(ctx: Ctx, scope: AuditScope | undefined, id: string, input: DecisionInput): Promise<Approval> {
  const behavior = behaviorField(input.behavior)
  const message = messageField(input.message)
  if (input.remember !== undefined && typeof input.remember !== 'boolean') throw invalid('invalid remember: expected true or false')
  const by = scope?.actor ?? 'anonymous'
  // An overdue request expires in the unit even though the answer is 409: the unit returns, then the error is thrown.
  const r = await ctx.store.write(async (tx) => {
    const r = await decideIn(tx, id, behavior, message, by)
    if (!('decided' in r)) return r
    const a = r.decided
    let detail = `${behavior} ${a.id} (${a.name}: ${a.tool} ${a.summary.slice(0, 200)})`
    if (input.remember === true) {
      const rule = await addRule(tx, { tool: literalGlob(a.tool), agents: literalGlob(a.name), match: literalGlob(a.summary), decision: behavior, message })
      await tx.audit.append({ actor: by, action: 'approval.rule.create', resource: `approval-rules/${rule.id}`, detail: describeRule(rule), outcome: 'success' })
      detail += `, remembered as rule ${rule.id}`
    }
    await recordAudit(tx, scope, detail)
    return r
  })
  if ('decided' in r) return r.decided
  if (r.status === 'not_found') throw notFound(r.why)
  throw conflict(r.why, { status: r.status })
}

export interface BatchInput extends DecisionInput {
  ids?: unknown
}

/** POST /api/approvals/decision: each pending one decided, the others skipped with their status. */
export async function decideMany(ctx: Ctx, scope: AuditScope | undefined, input: BatchInput) {
  const ids = input.ids
  if (!Array.isArray(ids) || ids.length === 0 || ids.length > BATCH_MAX || !ids.every((i) => typeof i === 'string' && i !== ''))
    throw invalid(`invalid ids: expected 1 to ${BATCH_MAX} approval ids`)
  const behavior = behaviorField(input.behavior)
  const message = messageField(input.message)
  const by = scope?.actor ?? 'anonymous'
  return ctx.store.write(async (tx) => {
    const decided: Approval[] = []
    const skipped: { id: string; status: string }[] = []
    for (const id of new Set(ids as string[])) {
      const r = await decideIn(tx, id, behavior, message, by)
      if ('decided' in r) decided.push(r.decided)
      else skipped.push({ id, status: r.status })
    }
    await recordAudit(tx, scope, `${behavior} ${decided.length}: ${decided.map((a) => a.id).join(', ')}${skipped.length ? `; skipped ${skipped.length}` : ''}`)
    return { decided, skipped }
  })
}


export interface ListInput {
  status?: string
  name?: string
  limit?: string | number
}

export function listApprovals(ctx: Ctx, q: ListInput): Promise<Approval[]> {
  const limit = q.limit === undefined ? LIST_DEFAULT : Number(q.limit)
  if (!Number.isInteger(limit) || limit < 1 || limit > LIST_MAX) throw invalid(`invalid limit: expected an integer from 1 to ${LIST_MAX}`)
  if (q.status !== undefined && !STATUSES.includes(q.status as ApprovalStatus)) throw invalid(`invalid status: expected one of ${STATUSES.join(', ')}`)
  return ctx.store.approvals.list({ status: q.status as ApprovalStatus | undefined, name: q.name || undefined, limit })
}

export async function getApproval(ctx: Ctx, id: string): Promise<Approval> {
  const a = await ctx.store.approvals.get(id)
  if (!a) throw notFound(`approval ${id} not found`)
  return a
}

/** For the wait header's description and `muster init`. */

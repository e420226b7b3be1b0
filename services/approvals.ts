// Approvals (oversight.md): an agent's PermissionRequest hook becomes one row a person
// decides from the dashboard, the CLI or a phone; rules decide first (deny wins). The
// hook's answer is held until the committing decision's `approval.decided` event reaches
// this replica (through the bus: on PostgreSQL every replica's feed carries it), until the
// wait runs out (expired: `{}`, the agent asks at its terminal) or until the agent hangs
// up (withdrawn). No polling: one waiter per held request, woken by the event.
import type { Ctx } from './context'
import type { Bus } from './bus'
import type { Tx } from '../store'
import type { Approval, ApprovalRule, ApprovalStatus, Outcome } from '../store/approvals'
import type { HookAgent } from '../store/sessions'
import { Waiters } from '../lib/waiters'
import { conflict, invalid, notFound } from '../lib/errors'
import { formatDuration, nowIso, parseDuration } from '../lib/time'
import { recordAudit, type AuditScope } from './audit'
import { openSession, type HookEvent, type HookHeaders, type Session } from './hook-session'

export const WAIT_DEFAULT_MS = 5 * 60_000
export const WAIT_MAX_MS = 10 * 60_000
export const SUMMARY_MAX = 500
export const INPUT_MAX = 16 * 1024
export const MESSAGE_MAX = 2000
export const LIST_DEFAULT = 100
export const LIST_MAX = 1000
export const BATCH_MAX = 1000
export const STATUSES: readonly ApprovalStatus[] = ['pending', 'allowed', 'denied', 'expired', 'withdrawn']
export const BEHAVIORS = ['allow', 'deny'] as const
export type Behavior = (typeof BEHAVIORS)[number]
const SOURCE = 'approvals'
/** Topics whose event ends a held request (each carries the approval's id). */
const ENDING = new Set(['approval.decided', 'approval.expired', 'approval.withdrawn'])

/**
 * What each server keeps for approvals: the held hook answers by approval id, woken by the
 * events that end them whichever replica committed them; and which sessions have a pending
 * "needs input" notice, so a hook event of any other session (nearly all) ends none without
 * a read. Both follow the bus. The sessions are read once on first use (notices made before
 * this process started); a notice made on another replica is known once its event arrives.
 */
export class ApprovalsMemory {
  readonly waiters: Waiters
  private inputs = new Set<string>()
  private loaded: Promise<void> | null = null

  constructor(bus: Bus, shutdown: AbortSignal) {
    this.waiters = new Waiters(shutdown)
    bus.listen((event) => {
      if (!event.topic.startsWith('approval.')) return
      const data = event.data as { id?: unknown; kind?: unknown; status?: unknown; session_id?: unknown }
      if (ENDING.has(event.topic) && typeof data.id === 'string') this.waiters.wake(data.id)
      if (event.topic === 'approval.requested' && data.kind === 'input' && data.status === 'pending' && typeof data.session_id === 'string')
        this.inputs.add(data.session_id)
    })
  }

  /** Whether `sessionId` may have a pending "needs input" notice (a false yes costs one read). */
  async mayWaitForInput(ctx: Ctx, sessionId: string): Promise<boolean> {
    this.loaded ??= ctx.store.approvals.pendingInputSessions().then((ids) => ids.forEach((id) => this.inputs.add(id)))
    await this.loaded
    return this.inputs.has(sessionId)
  }

  /** The session's notices were ended (or there were none). */
  inputsEnded(sessionId: string): void {
    this.inputs.delete(sessionId)
  }
}

/** X-Muster-Approval-Wait: how long a PermissionRequest's answer may wait (400 outside 1s … 10m). */
export function approvalWait(header: string | null): number | undefined {
  const v = header?.trim()
  if (!v) return undefined
  const ms = parseDuration(v)
  if (ms === null || ms < 1000 || ms > WAIT_MAX_MS) throw invalid(`invalid X-Muster-Approval-Wait: expected a duration from 1s to 10m, like 5m (got "${v}")`)
  return ms
}

// ---- rules -----------------------------------------------------------------------

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
const literalGlob = (text: string) => text.replace(/[\\*?]/g, '\\$&')

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
const messageField = (v: unknown): string | null => {
  if (v === undefined || v === null || v === '') return null
  if (typeof v !== 'string' || v.length > MESSAGE_MAX) throw invalid(`invalid message: expected at most ${MESSAGE_MAX} characters`)
  return v
}
const behaviorField = (v: unknown): Behavior => {
  if (v !== 'allow' && v !== 'deny') throw invalid('invalid behavior: expected "allow" or "deny"')
  return v
}

async function addRule(tx: Tx, r: Omit<ApprovalRule, 'id' | 'created_at'>): Promise<ApprovalRule> {
  const rule: ApprovalRule = { id: crypto.randomUUID(), ...r, created_at: nowIso() }
  await tx.approvals.addRule(rule)
  return rule
}
const describeRule = (r: ApprovalRule) => `${r.decision} tool ${r.tool}, agents ${r.agents}, match ${r.match}`

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

// ---- requests --------------------------------------------------------------------

/** What a person reads first: the command for shell tools, else the file path, else the input as compact JSON. */
export function summaryOf(input: unknown): string {
  const o = input && typeof input === 'object' && !Array.isArray(input) ? (input as Record<string, unknown>) : null
  const command = o?.command
  let text: string
  if (typeof command === 'string') text = command
  else if (Array.isArray(command) && command.every((c) => typeof c === 'string')) text = command.join(' ')
  else {
    const path = o?.file_path ?? o?.path ?? o?.notebook_path
    text = typeof path === 'string' ? path : JSON.stringify(input ?? null) ?? ''
  }
  return text.length > SUMMARY_MAX ? text.slice(0, SUMMARY_MAX) : text
}

/** The input as kept: itself up to INPUT_MAX of JSON, else its JSON text cut there. */
function keptInput(input: unknown): { input: unknown; input_truncated: boolean } {
  const json = JSON.stringify(input ?? null)
  if (json.length <= INPUT_MAX) return { input: input ?? null, input_truncated: false }
  return { input: json.slice(0, INPUT_MAX), input_truncated: true }
}

/** The approval as events carry it: without its input. */
export const announced = ({ input: _i, ...rest }: Approval) => rest

function newApproval(id: string, session: Session, agent: HookAgent, kind: Approval['kind'], tool: string, input: unknown, summary: string, waitMs: number | null): Approval {
  const now = Date.now()
  return {
    id,
    kind,
    agent,
    name: session.instance.name,
    instance_id: session.instance.id,
    session_id: session.row.session_id,
    project: session.row.project,
    tool,
    ...keptInput(input),
    summary,
    status: 'pending',
    rule_id: null,
    decided_by: null,
    message: null,
    created_at: new Date(now).toISOString(),
    decided_at: null,
    expires_at: waitMs === null ? null : new Date(now + waitMs).toISOString(),
  }
}

/** The hook's answer in the agent's shape (Claude Code and Codex read the same one); `{}` unless decided. */
export function hookAnswer(a: Approval): Record<string, unknown> {
  if (a.status === 'allowed') return { hookSpecificOutput: { hookEventName: 'PermissionRequest', decision: { behavior: 'allow' } } }
  if (a.status !== 'denied') return {}
  const who = a.decided_by === 'rule' ? `a Muster approval rule (${a.rule_id})` : `${a.decided_by} in Muster`
  const words = a.message ? `: "${a.message}"` : ''
  const message = `${a.tool} was denied by ${who}${words}. Do not try it another way; go on without it, or ask the person why.`
  return { hookSpecificOutput: { hookEventName: 'PermissionRequest', decision: { behavior: 'deny', message } } }
}

/** Ends a pending approval in `tx` with its event; null when it was no longer pending. */
async function settle(tx: Tx, id: string, o: Outcome): Promise<Approval | null> {
  const done = await tx.approvals.settle(id, o)
  if (!done) return null
  if (o.status === 'allowed' || o.status === 'denied')
    await tx.emit('approval.decided', { id, behavior: o.status === 'allowed' ? 'allow' : 'deny', decided_by: done.decided_by, rule_id: done.rule_id }, SOURCE)
  else await tx.emit(`approval.${o.status}`, announced(done), SOURCE)
  return done
}

/**
 * A PermissionRequest: the approval is made (and decided by a rule when one matches) in
 * the event's unit, with its session; then the answer waits for its decision. The waiter
 * is registered before the unit, so a decision committed right after it still wakes it.
 */
export async function requestPermission(ctx: Ctx, agent: HookAgent, event: HookEvent, headers: HookHeaders): Promise<Record<string, unknown>> {
  const waitMs = headers.approvalWaitMs ?? WAIT_DEFAULT_MS
  const tool = typeof event.tool_name === 'string' ? event.tool_name : ''
  const summary = summaryOf(event.tool_input)
  const id = crypto.randomUUID()
  const wait = ctx.approvals.waiters.wait(id, waitMs)
  const { approval, beat } = await ctx.store.write(async (tx) => {
    const session = await openSession(tx, agent, event, headers)
    const a = newApproval(id, session, agent, 'permission', tool, event.tool_input, summary, waitMs)
    await tx.approvals.create(a)
    await tx.emit('approval.requested', announced(a), SOURCE)
    const rule = ruleFor(await tx.approvals.rules(), tool, a.name, summary)
    const approval = rule
      ? (await settle(tx, a.id, { status: rule.decision === 'allow' ? 'allowed' : 'denied', rule_id: rule.id, decided_by: 'rule', message: rule.message, at: nowIso() }))!
      : a
    return { approval, beat: session.throttledBeat ? session.instance.id : null }
  }).catch((err) => {
    wait.cancel()
    throw err
  })
  if (beat) ctx.heartbeats.seen(ctx, beat)
  if (approval.status !== 'pending') {
    wait.cancel()
    return hookAnswer(approval)
  }
  const signal = headers.signal
  const hangUp = () => wait.cancel()
  signal?.addEventListener('abort', hangUp, { once: true })
  if (signal?.aborted) hangUp()
  try {
    const reason = await wait.done
    if (reason === 'woken') {
      const now = await ctx.store.approvals.get(id)
      if (now && now.status !== 'pending') return hookAnswer(now)
    }
    // Hung up, out of time, or the server stops: the approval ends here, unless a decision got in first.
    const status = signal?.aborted ? 'withdrawn' : 'expired'
    const ended = await ctx.store.write(async (tx) => (await settle(tx, id, { status, at: nowIso() })) ?? (await tx.approvals.get(id))!)
    return hookAnswer(ended)
  } finally {
    signal?.removeEventListener('abort', hangUp)
  }
}

/** Claude Code's Notification that the agent waits for the user (not a permission prompt: PermissionRequest covers those). */
function waitsForInput(event: HookEvent): string | null {
  const message = typeof event.message === 'string' ? event.message : ''
  const type = typeof event.notification_type === 'string' ? event.notification_type : ''
  if (type === 'idle_prompt' || type === 'elicitation_dialog' || (!type && /waiting for your input/i.test(message))) return message || 'waiting for your input'
  return null
}

/** A Notification (in its event's unit): a "needs input" approval when the agent waits for the user. */
export async function noteNotification(tx: Tx, agent: HookAgent, session: Session, event: HookEvent): Promise<void> {
  const message = waitsForInput(event)
  if (message === null) return
  const a = newApproval(crypto.randomUUID(), session, agent, 'input', '', null, message.slice(0, SUMMARY_MAX), null)
  await tx.approvals.create(a)
  await tx.emit('approval.requested', announced(a), SOURCE)
}

/** Any event of a session ends its pending "needs input" (withdrawn): the agent went on. Nothing to read for a session without one. */
export async function withdrawInputs(ctx: Ctx, sessionId: string): Promise<void> {
  if (!(await ctx.approvals.mayWaitForInput(ctx, sessionId))) return
  await ctx.store.write(async (tx) => {
    for (const id of await tx.approvals.pendingInputs(sessionId)) await settle(tx, id, { status: 'withdrawn', at: nowIso() })
  })
  ctx.approvals.inputsEnded(sessionId)
}

/**
 * Expires the pending requests whose wait ended more than OVERDUE_GRACE_MS ago: their
 * holder went away (a replica stopped or crashed) without ending them. The holder of a
 * live request ends it itself at expires_at. Returns how many.
 */
export async function expireOverdue(ctx: Ctx): Promise<number> {
  const before = new Date(Date.now() - OVERDUE_GRACE_MS).toISOString()
  return ctx.store.write(async (tx) => {
    let n = 0
    for (const id of await tx.approvals.overdue(before, 500)) if (await settle(tx, id, { status: 'expired', at: nowIso() })) n++
    return n
  })
}
export const OVERDUE_GRACE_MS = 5000

// ---- decisions -------------------------------------------------------------------

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
const overdue = (a: Approval) => a.status === 'pending' && a.expires_at !== null && Date.parse(a.expires_at) + 1000 < Date.now()

/** Decides one pending approval in `tx`: the approval, or why not. */
async function decideIn(tx: Tx, id: string, behavior: Behavior, message: string | null, by: string): Promise<{ decided: Approval } | { status: string; why: string }> {
  let a = await tx.approvals.get(id)
  if (!a) return { status: 'not_found', why: `approval ${id} not found` }
  if (overdue(a)) a = (await settle(tx, id, { status: 'expired', at: nowIso() })) ?? a
  const why = refusal(a)
  if (why) return { status: a.status, why }
  const decided = await settle(tx, id, { status: behavior === 'allow' ? 'allowed' : 'denied', decided_by: by, message, at: nowIso() })
  return decided ? { decided } : { status: 'decided', why: `approval ${id} was decided meanwhile` }
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

// ---- reads -----------------------------------------------------------------------

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
export const WAIT_DEFAULT = formatDuration(WAIT_DEFAULT_MS)

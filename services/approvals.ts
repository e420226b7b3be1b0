// Approvals (oversight.md): an agent's PermissionRequest hook becomes one row a person
// decides from the dashboard, the CLI or a phone; rules decide first (deny wins,
// services/approval-rules.ts). The hook's answer is held until the committing decision's
// `approval.decided` event reaches this replica (through the bus: on PostgreSQL every
// replica's feed carries it), until the wait runs out (expired: `{}`, the agent asks at its
// terminal) or until the agent hangs up (withdrawn). No polling: one waiter per held
// request, woken by the event. Decisions: services/approval-decisions.ts.
import type { Ctx } from './context'
import type { Bus } from './bus'
import type { Tx } from '../store'
import type { Approval, Outcome } from '../store/approvals'
import type { HookAgent } from '../store/sessions'
import { Waiters } from '../lib/waiters'
import { invalid } from '../lib/errors'
import { nowIso, parseDuration } from '../lib/time'
import { openSession, type HookHeaders, type Session } from './hooks/session'
import type { CoreAnswer, CoreEvent } from './hooks/types'
import { throwIfEnded } from './credentials'
import { ruleFor } from './approval-rules'

export const WAIT_DEFAULT_MS = 5 * 60_000
export const WAIT_MAX_MS = 10 * 60_000
export const SUMMARY_MAX = 500
export const INPUT_MAX = 16 * 1024
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
    // A failed read (the database away) is tried again by the next event, not remembered.
    this.loaded ??= ctx.store.approvals.pendingInputSessions().then(
      (ids) => ids.forEach((id) => this.inputs.add(id)),
      (err) => {
        this.loaded = null
        throw err
      },
    )
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

/** The hook's answer (the agent's adapter says it in the agent's shape): no opinion unless decided. */
export function hookAnswer(a: Approval): CoreAnswer {
  if (a.status === 'allowed') return { kind: 'decision', allow: true }
  if (a.status !== 'denied') return { kind: 'none' }
  const who = a.decided_by === 'rule' ? `a Muster approval rule (${a.rule_id})` : `${a.decided_by} in Muster`
  const words = a.message ? `: "${a.message}"` : ''
  const message = `${a.tool} was denied by ${who}${words}. Do not try it another way; go on without it, or ask the person why.`
  return { kind: 'decision', allow: false, message }
}

/** Ends a pending approval in `tx` with its event; null when it was no longer pending. */
export async function settle(tx: Tx, id: string, o: Outcome, decidableFrom?: string): Promise<Approval | null> {
  const done = await tx.approvals.settle(id, o, decidableFrom)
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
export async function requestPermission(ctx: Ctx, agent: HookAgent, event: CoreEvent, headers: HookHeaders): Promise<CoreAnswer> {
  const waitMs = headers.approvalWaitMs ?? WAIT_DEFAULT_MS
  const tool = event.tool?.name ?? ''
  const input = event.tool?.input
  const summary = summaryOf(input)
  const id = crypto.randomUUID()
  const wait = ctx.approvals.waiters.wait(id, waitMs, headers.until)
  const { approval, beat } = await ctx.store.write(async (tx) => {
    const session = await openSession(tx, agent, event, headers)
    const a = newApproval(id, session, agent, 'permission', tool, input, summary, waitMs)
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
    // Hung up, token ended, out of time, or the server stops: the approval ends here, unless a decision got in first.
    const status = signal?.aborted || reason === 'ended' ? 'withdrawn' : 'expired'
    const ended = await ctx.store.write(async (tx) => (await settle(tx, id, { status, at: nowIso() })) ?? (await tx.approvals.get(id))!)
    if (ended.status === 'withdrawn') throwIfEnded(headers.until)
    return hookAnswer(ended)
  } finally {
    signal?.removeEventListener('abort', hangUp)
  }
}

/** A Notification (in its event's unit): a "needs input" approval when the agent waits for the user. */
export async function noteNotification(tx: Tx, agent: HookAgent, session: Session, event: CoreEvent): Promise<void> {
  const message = event.waitingFor
  if (message === undefined) return
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

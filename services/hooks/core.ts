// The hook core: one agent event (a CoreEvent, made by the agent's adapter in
// services/hooks/agents) answered with a CoreAnswer the adapter says in the agent's own
// shape. An event that changes something runs in ONE unit: the session opened (or
// registered) with its heartbeat, and the event's own work (edit decision, messages
// shown, deregistration). A pre-tool event that changes nothing (most of them) is answered
// from committed reads without a unit, so decisions run side by side instead of queueing
// for the single writer. The core never says `allow` by itself: that would skip the user's
// own permission rules; `none` means "no opinion". Only a permission request that a person
// (or their rule) allowed in Muster is answered allow.
import type { Ctx } from '../context'
import type { HookAgent, LiveSession } from '../../store/sessions'
import { editTargets, literalPattern, writesFiles, type EditTargets } from './paths'
import type { CoreAnswer, CoreEvent } from './types'
import { log } from '../../obs/log'
import { decideEdit, planEdit, writes } from './edits'
import { finishBriefing, newMessages, startBriefing } from './briefing'
import { assertSessionOwner, endSession, openSession, type HookHeaders, type Session } from './session'
import type { Tx } from '../../store'
import { budgetDenial, pendingWarnings, warningLines } from '../budgets'
import { noteNotification, requestPermission, withdrawInputs } from '../approvals'

/**
 * Who a SessionStart or SessionEnd acted as, for `muster hook` on the agent's machine (sent
 * as response headers, never in the answer the model reads): SessionStart gives the token
 * the agent's shell commands act with; SessionEnd says whether the instance is held.
 */
export interface HookIdentity {
  instanceId: string
  name: string
  sessionId: string
  token?: string
  held?: boolean
}

export interface CoreResult {
  answer: CoreAnswer
  identity?: HookIdentity
}

const NONE: CoreAnswer = { kind: 'none' }
const context = (text: string): CoreAnswer => ({ kind: 'context', text })
const deny = (reason: string): CoreAnswer => ({ kind: 'deny', reason })
const joined = (...parts: (string | null)[]) => parts.filter(Boolean).join('\n\n')

/** The root-relative files a pre-tool call writes and the paths it only checks (none for a call that writes no files), or why they are not checked. */
function filesOf(event: CoreEvent, root: string): EditTargets {
  if (!writesFiles(event.tool)) return { files: [], checked: [], named: 0, problem: null }
  return editTargets(event.tool, root, event.cwd || root)
}

const anything = (t: EditTargets) => t.files.length > 0 || t.checked.length > 0

/**
 * A call whose files break a reservation's limits is left to the agent (no opinion, never a
 * deny: the limits are the server's, not the file's owner's), and said so: an edit.unchecked
 * event and a log line, naming the session, the tool and the limit (never the token).
 */
async function unchecked(tx: Tx, session: Session, tool: string, edited: EditTargets): Promise<CoreAnswer> {
  const data = { session_id: session.row.session_id, instance_id: session.instance.id, tool, files: edited.named, problem: edited.problem }
  await tx.emit('edit.unchecked', data, 'hooks')
  log.warn({ ...data, instance_name: session.instance.name, project: session.row.project }, 'hook edit not checked: its paths break the reservation limits')
  return NONE
}

/** The events whose only work is showing new messages. */
const SHOWING = new Set<CoreEvent['kind']>(['post-tool', 'prompt', 'stop'])

/**
 * An event that changes nothing, decided on committed reads with no unit at all: a
 * PreToolUse of another tool, of a file nothing of another instance holds exclusively or
 * of an edit-reserve file whose reservation is fresh; a PostToolUse, UserPromptSubmit or
 * Stop with no message to show. `{}`, its heartbeat the throttled one every call with an
 * instance token counts as. Null when the event needs its unit (a new or ended session,
 * a denial to record, a reservation to grant or renew, messages to mark shown).
 */
async function withoutWrites(ctx: Ctx, event: CoreEvent, headers: HookHeaders, live: LiveSession | null): Promise<CoreAnswer | null> {
  const kind = event.kind
  if (kind !== 'pre-tool' && !SHOWING.has(kind)) return null
  if (!live) return null
  const { row, instance } = live
  // A deny budget over its limit stops every tool call of the sessions in its scope (services/budgets.ts).
  const denied = kind === 'pre-tool' ? await budgetDenial(ctx, instance, row.project) : null
  if (denied) return deny(denied)
  if (kind !== 'pre-tool' && kind !== 'stop' && (await pendingWarnings(ctx, instance, row.project, row.session_id)).length) return null
  if (kind === 'pre-tool') {
    const t = filesOf(event, row.root)
    if (t.problem) return null
    if (anything(t) && writes(await planEdit(ctx.store.reservations, row.project, instance.id, t.files.map(literalPattern), headers.reserveMs, t.checked.map((c) => c.pattern)))) return null
  } else if (!(kind === 'stop' && event.stopActive) && (await ctx.store.messages.unshown(instance.name, row.session_id, 1)).length) return null
  ctx.heartbeats.seen(ctx, instance.id)
  return NONE
}

export async function handleCore(ctx: Ctx, agent: HookAgent, event: CoreEvent, headers: HookHeaders): Promise<CoreResult> {
  const kind = event.kind
  // The session and its instance as committed: whose they are, and whether the event can be answered without a unit.
  const live = await ctx.store.sessions.live(event.sessionId)
  assertSessionOwner(live, headers)
  // Approvals (services/approvals.ts): any event ends the session's "needs input"; a permission request waits for its decision.
  await withdrawInputs(ctx, event.sessionId)
  if (kind === 'permission') return { answer: await requestPermission(ctx, agent, event, headers) }
  const quick = await withoutWrites(ctx, event, headers, live)
  if (quick) return { answer: quick }
  // The end of a session that has ended: the same end through a second hook (Cursor runs
  // Claude Code's hooks beside its own). Registering its instance again only to deregister
  // it would make a ghost instance: there is nothing to end.
  if (kind === 'session-end' && (await ctx.store.sessions.get(event.sessionId))?.ended_at) return { answer: NONE }
  if (kind === 'session-start') {
    const { session, budget } = await ctx.store.write(async (tx) => {
      const session = await openSession(tx, agent, event, headers)
      return { session, budget: await startBriefing(tx, session) }
    })
    const { row, instance } = session
    const identity = { instanceId: instance.id, name: row.name, sessionId: row.session_id, token: row.token }
    return { answer: context(await finishBriefing(ctx.store, budget, session)), identity }
  }
  let beat: string | null = null
  let identity: HookIdentity | undefined
  const answer = await ctx.store.write(async (tx): Promise<CoreAnswer> => {
    const session = await openSession(tx, agent, event, headers)
    if (session.throttledBeat) beat = session.instance.id
    switch (kind) {
      case 'pre-tool': {
        const denied = await budgetDenial(ctx, session.instance, session.row.project)
        if (denied) return deny(denied)
        const edited = filesOf(event, session.row.root)
        if (edited.problem) return unchecked(tx, session, event.tool?.name ?? '', edited)
        if (!anything(edited)) return NONE
        const decision = await decideEdit(tx, session, edited.files, headers.reserveMs, edited.checked)
        return decision.denied ? deny(decision.reason) : NONE
      }
      case 'post-tool':
      case 'prompt': {
        const text = joined(await warningLines(ctx, tx, session.instance, session.row.project, session.row.session_id), await newMessages(tx, session))
        return text ? context(text) : NONE
      }
      case 'stop': {
        if (event.stopActive) return NONE
        const text = await newMessages(tx, session)
        return text ? context(text) : NONE
      }
      case 'session-end': {
        const held = await endSession(ctx, tx, session, event.reason)
        identity = { instanceId: session.instance.id, name: session.row.name, sessionId: session.row.session_id, held }
        return NONE
      }
      case 'notification':
        await noteNotification(tx, agent, session, event)
        return NONE
      default:
        return NONE
    }
  })
  // After the unit: a session-end's instance is gone by then.
  if (beat && kind !== 'session-end') ctx.heartbeats.seen(ctx, beat)
  return { answer, identity }
}

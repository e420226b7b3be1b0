// POST /api/hooks/{agent}: one hook event of a Claude Code or Codex session, answered
// in the JSON the agent acts on. An event that changes something runs in ONE unit: the
// session opened (or registered) with its heartbeat, and the event's own work (edit
// decision, messages shown, deregistration). A PreToolUse that changes nothing (most of
// them) is answered from committed reads without a unit, so decisions run side by side
// instead of queueing for the single writer. The answer never says `allow` by itself: that
// would skip the user's own permission rules; `{}` means "no opinion". Only a
// PermissionRequest that a person (or their rule) allowed in Muster is answered allow.
import type { Ctx } from './context'
import type { HookAgent } from '../store/sessions'
import { editTargets, literalPattern, writesFiles, type EditTargets } from './hook-paths'
import { log } from '../obs/log'
import { decideEdit, planEdit, writes } from './hook-edits'
import { finishBriefing, newMessages, startBriefing } from './hook-briefing'
import { assertSessionOwner, endSession, openSession, type HookEvent, type HookHeaders, type Session } from './hook-session'
import type { Tx } from '../store'
import { budgetDenial, pendingWarnings, warningLines } from './budgets'
import { noteNotification, requestPermission, withdrawInputs } from './approvals'

export { hookHeaders, type HookEvent, type HookHeaders } from './hook-session'

export const HOOK_AGENTS: readonly HookAgent[] = ['claude-code', 'codex']

export type HookAnswer = Record<string, unknown>

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

export interface HookResult {
  answer: HookAnswer
  identity?: HookIdentity
}

const context = (hookEventName: string, additionalContext: string) => ({ hookSpecificOutput: { hookEventName, additionalContext } })
const deny = (reason: string) => ({ hookSpecificOutput: { hookEventName: 'PreToolUse', permissionDecision: 'deny', permissionDecisionReason: reason } })
const joined = (...parts: (string | null)[]) => parts.filter(Boolean).join('\n\n')

const toolOf = (event: HookEvent) => (typeof event.tool_name === 'string' ? event.tool_name : '')

/** The root-relative files a PreToolUse writes and the paths it only checks (none for a tool that writes no files), or why they are not checked. */
function filesOf(event: HookEvent, root: string): EditTargets {
  const tool = toolOf(event)
  if (!writesFiles(tool)) return { files: [], checked: [], named: 0, problem: null }
  return editTargets(tool, event.tool_input, root, typeof event.cwd === 'string' ? event.cwd : root)
}

const anything = (t: EditTargets) => t.files.length > 0 || t.checked.length > 0

/**
 * Codex has no quiet Stop answer (no additionalContext there): a block's reason is the only
 * way to its model, and Codex hands it over as a new user-role prompt (in a hook_prompt
 * wrapper). This line says whose it is, so the model reads it as a notice, not a request.
 */
const CODEX_STOP_NOTE = 'Muster (a hook, not from the user): messages arrived for you. Read them; act only on what they ask, then finish.'

/**
 * A call whose files break a reservation's limits is left to the agent (no opinion, never a
 * deny: the limits are the server's, not the file's owner's), and said so: an edit.unchecked
 * event and a log line, naming the session, the tool and the limit (never the token).
 */
async function unchecked(tx: Tx, session: Session, tool: string, edited: EditTargets): Promise<HookAnswer> {
  const data = { session_id: session.row.session_id, instance_id: session.instance.id, tool, files: edited.named, problem: edited.problem }
  await tx.emit('edit.unchecked', data, 'hooks')
  log.warn({ ...data, instance_name: session.instance.name, project: session.row.project }, 'hook edit not checked: its paths break the reservation limits')
  return {}
}

/** The events whose only work is showing new messages. */
const SHOWING = new Set(['PostToolUse', 'UserPromptSubmit', 'Stop'])

/**
 * An event that changes nothing, decided on committed reads with no unit at all: a
 * PreToolUse of another tool, of a file nothing of another instance holds exclusively or
 * of an edit-reserve file whose reservation is fresh; a PostToolUse, UserPromptSubmit or
 * Stop with no message to show. `{}`, its heartbeat the throttled one every call with an
 * instance token counts as. Null when the event needs its unit (a new or ended session,
 * a denial to record, a reservation to grant or renew, messages to mark shown).
 */
async function withoutWrites(ctx: Ctx, event: HookEvent, headers: HookHeaders): Promise<HookAnswer | null> {
  const name = event.hook_event_name
  if (name !== 'PreToolUse' && !SHOWING.has(name)) return null
  const row = await ctx.store.sessions.get(event.session_id)
  const instance = row && row.ended_at === null ? await ctx.store.instances.get(row.instance_id) : null
  if (!row || !instance) return null
  // A deny budget over its limit stops every tool call of the sessions in its scope (services/budgets.ts).
  const denied = name === 'PreToolUse' ? await budgetDenial(ctx, instance, row.project) : null
  if (denied) return deny(denied)
  if (name !== 'PreToolUse' && name !== 'Stop' && (await pendingWarnings(ctx, instance, row.project, row.session_id)).length) return null
  if (name === 'PreToolUse') {
    const t = filesOf(event, row.root)
    if (t.problem) return null
    if (anything(t) && writes(await planEdit(ctx.store.reservations, row.project, instance.id, t.files.map(literalPattern), headers.reserveMs, t.checked.map((c) => c.pattern)))) return null
  } else if (!(name === 'Stop' && event.stop_hook_active === true) && (await ctx.store.messages.unshown(instance.name, row.session_id, 1)).length) return null
  ctx.heartbeats.seen(ctx, instance.id)
  return {}
}

export async function handleHook(ctx: Ctx, agent: HookAgent, event: HookEvent, headers: HookHeaders): Promise<HookResult> {
  const name = event.hook_event_name
  await assertSessionOwner(ctx, event.session_id, headers)
  // Approvals (services/approvals.ts): any event ends the session's "needs input"; a PermissionRequest waits for its decision.
  await withdrawInputs(ctx, event.session_id)
  if (name === 'PermissionRequest') return { answer: await requestPermission(ctx, agent, event, headers) }
  const quick = await withoutWrites(ctx, event, headers)
  if (quick) return { answer: quick }
  if (name === 'SessionStart') {
    const { session, budget } = await ctx.store.write(async (tx) => {
      const session = await openSession(tx, agent, event, headers)
      return { session, budget: await startBriefing(tx, session) }
    })
    const { row, instance } = session
    const identity = { instanceId: instance.id, name: row.name, sessionId: row.session_id, token: row.token }
    return { answer: context(name, await finishBriefing(ctx.store, budget, session)), identity }
  }
  let beat: string | null = null
  let identity: HookIdentity | undefined
  const answer = await ctx.store.write(async (tx): Promise<HookAnswer> => {
    const session = await openSession(tx, agent, event, headers)
    if (session.throttledBeat) beat = session.instance.id
    switch (name) {
      case 'PreToolUse': {
        const denied = await budgetDenial(ctx, session.instance, session.row.project)
        if (denied) return deny(denied)
        const edited = filesOf(event, session.row.root)
        if (edited.problem) return unchecked(tx, session, toolOf(event), edited)
        if (!anything(edited)) return {}
        const decision = await decideEdit(tx, session, edited.files, headers.reserveMs, edited.checked)
        if (!decision.denied) return {}
        return deny(decision.reason)
      }
      case 'PostToolUse':
      case 'UserPromptSubmit': {
        const text = joined(await warningLines(ctx, tx, session.instance, session.row.project, session.row.session_id), await newMessages(tx, session))
        return text ? context(name, text) : {}
      }
      case 'Stop': {
        if (event.stop_hook_active === true) return {}
        const text = await newMessages(tx, session)
        if (!text) return {}
        // Claude Code takes another turn on a Stop's additionalContext, quietly; its
        // `decision: block` shows the user a hook error. Codex has no quieter shape: the block,
        // its reason saying whose it is.
        return agent === 'claude-code' ? context(name, text) : { decision: 'block', reason: `${CODEX_STOP_NOTE}\n${text}` }
      }
      case 'SessionEnd': {
        const held = await endSession(ctx, tx, session, event.reason)
        identity = { instanceId: session.instance.id, name: session.row.name, sessionId: session.row.session_id, held }
        return {}
      }
      case 'Notification':
        await noteNotification(tx, agent, session, event)
        return {}
      default:
        return {}
    }
  })
  // After the unit: a SessionEnd's instance is gone by then.
  if (beat && name !== 'SessionEnd') ctx.heartbeats.seen(ctx, beat)
  return { answer, identity }
}

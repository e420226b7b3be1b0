// POST /api/hooks/{agent}: one hook event of a Claude Code or Codex session, answered
// in the JSON the agent acts on. Each event runs in ONE unit: the session opened (or
// registered) with its heartbeat, and the event's own work (edit decision, messages
// shown, deregistration). The answer never says `allow`: that would skip the user's own
// permission rules; `{}` means "no opinion".
import type { Ctx } from './context'
import type { HookAgent } from '../store/sessions'
import { editedFiles, writesFiles } from './hook-paths'
import { decideEdit } from './hook-edits'
import { finishBriefing, newMessages, startBriefing } from './hook-briefing'
import { endSession, openSession, type HookEvent, type HookHeaders } from './hook-session'

export { hookHeaders, type HookEvent, type HookHeaders } from './hook-session'

export const HOOK_AGENTS: readonly HookAgent[] = ['claude-code', 'codex']

export type HookAnswer = Record<string, unknown>

const context = (hookEventName: string, additionalContext: string) => ({ hookSpecificOutput: { hookEventName, additionalContext } })

export async function handleHook(ctx: Ctx, agent: HookAgent, event: HookEvent, headers: HookHeaders): Promise<HookAnswer> {
  const name = event.hook_event_name
  if (name === 'SessionStart') {
    const { session, budget } = await ctx.store.write(async (tx) => {
      const session = await openSession(tx, agent, event, headers)
      return { session, budget: await startBriefing(tx, session) }
    })
    const [instances, reservations] = await Promise.all([
      ctx.store.instances.list({}),
      ctx.store.reservations.list({ project: session.row.project }),
    ])
    return context(name, finishBriefing(budget, session, { instances, reservations }))
  }
  return ctx.store.write(async (tx): Promise<HookAnswer> => {
    const session = await openSession(tx, agent, event, headers)
    switch (name) {
      case 'PreToolUse': {
        const tool = typeof event.tool_name === 'string' ? event.tool_name : ''
        if (!writesFiles(tool)) return {}
        const cwd = typeof event.cwd === 'string' ? event.cwd : session.row.root
        const files = editedFiles(tool, event.tool_input, session.row.root, cwd)
        if (!files.length) return {}
        const decision = await decideEdit(tx, session, files, headers.reserveMs)
        if (!decision.denied) return {}
        return { hookSpecificOutput: { hookEventName: name, permissionDecision: 'deny', permissionDecisionReason: decision.reason } }
      }
      case 'PostToolUse':
      case 'UserPromptSubmit': {
        const text = await newMessages(tx, session)
        return text ? context(name, text) : {}
      }
      case 'Stop': {
        if (event.stop_hook_active === true) return {}
        const text = await newMessages(tx, session)
        return text ? { decision: 'block', reason: text } : {}
      }
      case 'SessionEnd':
        await endSession(ctx, tx, session)
        return {}
      default:
        return {}
    }
  })
}

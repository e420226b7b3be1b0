// Gemini CLI's hooks (docs/hooks/reference.md of google-gemini/gemini-cli, 0.61): command
// hooks in .gemini/settings.json get the event as JSON on stdin (session_id, cwd,
// hook_event_name, and per event tool_name/tool_input, prompt, source, reason, …) and
// answer JSON on stdout. BeforeTool's `decision: "deny"` blocks the call and its `reason`
// goes to the model as the tool's error; SessionStart, BeforeAgent and AfterTool take
// `hookSpecificOutput.additionalContext` (before the prompt, after the prompt, after the
// tool's result); AfterAgent's deny sends its reason to the model as a new prompt. Gemini
// CLI has no hook that decides a permission: its Notification only tells.
import { resolve, sep } from 'node:path'
import { invalid } from '../../../lib/errors'
import type { CoreAnswer, CoreEvent, HookAdapter, HookAnswer, HookKind, ToolCall } from '../types'
import { requiredId, stopNotice, text } from './fields'

const KINDS: Record<string, HookKind> = {
  SessionStart: 'session-start',
  SessionEnd: 'session-end',
  BeforeTool: 'pre-tool',
  AfterTool: 'post-tool',
  BeforeAgent: 'prompt',
  AfterAgent: 'stop',
  Notification: 'notification',
}

/** The built-in tools that write files, and the input field naming the file (packages/core/src/tools). */
const FILE_TOOLS: Record<string, string> = { write_file: 'file_path', replace: 'file_path' }
const SHELL_TOOL = 'run_shell_command'

const str = (v: unknown) => (typeof v === 'string' && v !== '' ? v : undefined)

function toolOf(body: Record<string, unknown>, cwd: string | undefined): { tool: ToolCall; cwd?: string } {
  const name = str(body.tool_name)
  if (!name) throw invalid(`a Gemini CLI ${body.hook_event_name} event needs tool_name (the tool about to run, e.g. write_file)`)
  const input = body.tool_input && typeof body.tool_input === 'object' && !Array.isArray(body.tool_input) ? (body.tool_input as Record<string, unknown>) : {}
  const tool: ToolCall = { name, input }
  const field = FILE_TOOLS[name]
  if (field) {
    const file = str(input[field])
    if (file) tool.files = [file]
  } else if (name === SHELL_TOOL && str(input.command)) {
    tool.shell = input.command as string
    // The command runs in dir_path (relative to the project root) when the model names one. A
    // directory outside the project is left alone: the event's cwd must stay inside its root.
    const dir = str(input.dir_path)
    const at = dir && cwd ? resolve(cwd, dir) : undefined
    if (at && cwd && (at === resolve(cwd) || at.startsWith(resolve(cwd) + sep))) return { tool, cwd: at }
  }
  return { tool }
}

export const geminiCli: HookAdapter = {
  agent: 'gemini-cli',
  parse(body) {
    const sessionId = requiredId(body, 'session_id')
    const name = requiredId(body, 'hook_event_name')
    const kind = KINDS[name] ?? 'other'
    const cwd = text(body, 'cwd')
    const event: CoreEvent = { kind, name, sessionId, cwd, raw: body }
    if (kind === 'pre-tool' || kind === 'post-tool') {
      const t = toolOf(body, cwd)
      event.tool = t.tool
      if (kind === 'pre-tool' && t.cwd) event.cwd = t.cwd
    }
    if (kind === 'session-start') event.source = text(body, 'source')
    if (kind === 'session-end') event.reason = text(body, 'reason')
    if (kind === 'stop') event.stopActive = body.stop_hook_active === true
    // Gemini CLI has no hook that decides a permission: its ToolPermission notice is a person's to answer.
    if (kind === 'notification' && text(body, 'notification_type') === 'ToolPermission') event.waitingFor = text(body, 'message') || 'a tool waits for confirmation'
    return event
  },
  answer(event, out: CoreAnswer): HookAnswer {
    switch (out.kind) {
      case 'deny':
        // BeforeTool: the call does not run, the reason is the tool's error the model reads.
        return { decision: 'deny', reason: out.reason }
      case 'context':
        // AfterAgent has no quiet answer: a deny's reason reaches the model as a new prompt.
        if (event.kind === 'stop') return { decision: 'deny', reason: stopNotice(out.text) }
        if (event.kind === 'session-start' || event.kind === 'prompt' || event.kind === 'post-tool') return { hookSpecificOutput: { hookEventName: event.name, additionalContext: out.text } }
        return { systemMessage: out.text }
      default:
        // No permission hook in Gemini CLI: a decision has nowhere to go; `{}` is "no opinion".
        return {}
    }
  },
}

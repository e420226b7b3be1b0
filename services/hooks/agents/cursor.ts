// Cursor (`muster hook cursor` command hooks in .cursor/hooks.json). Every event carries
// {conversation_id, generation_id, model, hook_event_name, cursor_version, workspace_roots,
// user_email, transcript_path} and its own fields (cursor.com/docs/agent/hooks). The
// conversation is the session: sessionStart/sessionEnd's `session_id` is the same id, and the
// other events carry only `conversation_id`, so that is the one read.
//
// Cursor also runs Claude Code's hooks from .claude/settings.json ("third-party hooks", under
// Claude's event names) with its own payloads: those reach /api/hooks/claude-code (or codex)
// and are handed here (`isCursorEvent`), so a conversation is one session whichever hooks
// fire, and the answer carries Cursor's fields and Claude's both.
//
// Answers: preToolUse and beforeShellExecution {permission: "deny", user_message,
// agent_message}; sessionStart and postToolUse {additional_context}; stop {followup_message}
// (Cursor submits it as the next user message). beforeSubmitPrompt cannot add context: it
// only counts as a heartbeat, so messages wait for a postToolUse or stop that can show them.
import type { CoreAnswer, CoreEvent, HookAdapter, HookAnswer, HookKind, ToolCall } from '../types'
import { invalid } from '../../../lib/errors'
import { fileOf, MAX_ID, objectOf, requiredId, stopNotice, text } from './fields'

const KINDS: Record<string, HookKind> = {
  sessionStart: 'session-start',
  sessionEnd: 'session-end',
  preToolUse: 'pre-tool',
  beforeShellExecution: 'pre-tool',
  postToolUse: 'post-tool',
  stop: 'stop',
  // Claude's names, as Cursor runs Claude Code's hooks under them.
  SessionStart: 'session-start',
  SessionEnd: 'session-end',
  PreToolUse: 'pre-tool',
  PostToolUse: 'post-tool',
  Stop: 'stop',
}

/** Cursor's tools that write a file (and Claude's names for them): the file is `file_path` (`path`, `target_file` in some versions). */
const FILE_TOOLS = new Set(['Write', 'Edit', 'MultiEdit', 'StrReplace', 'Delete', 'NotebookEdit', 'edit_file', 'delete_file'])
const SHELL_TOOLS = new Set(['Shell', 'Bash', 'run_terminal_cmd'])

/** A payload Cursor sent, whichever hooks it ran: its own fields are there. */
export const isCursorEvent = (body: Record<string, unknown>) =>
  typeof body.cursor_version === 'string' || (typeof body.conversation_id === 'string' && Array.isArray(body.workspace_roots))

export function cursorToolCall(name: string, raw: unknown): ToolCall {
  const input = objectOf(raw)
  const call: ToolCall = { name, input }
  if (FILE_TOOLS.has(name)) call.files = fileOf(input, 'file_path', 'path', 'target_file', 'notebook_path')
  else if (SHELL_TOOLS.has(name) && typeof input.command === 'string') call.shell = input.command
  else if (name === 'ApplyPatch' || name === 'apply_patch') call.patch = raw ?? ''
  return call
}

/** The conversation id: `conversation_id`, else (a sessionStart/sessionEnd without it) `session_id`. */
function sessionOf(body: Record<string, unknown>): string {
  if (body.conversation_id !== undefined) return requiredId(body, 'conversation_id')
  if (body.session_id !== undefined) return requiredId(body, 'session_id')
  throw invalid('conversation_id is required: a non-empty string, as Cursor sends it')
}

function parse(body: Record<string, unknown>): CoreEvent {
  const sessionId = sessionOf(body)
  const name = requiredId(body, 'hook_event_name')
  const roots = Array.isArray(body.workspace_roots) ? body.workspace_roots.filter((r): r is string => typeof r === 'string' && r !== '' && r.length <= 4 * MAX_ID) : []
  const cwd = text(body, 'cwd') || roots[0]
  const toolName = text(body, 'tool_name')
  let tool: ToolCall | undefined
  if (name === 'beforeShellExecution') tool = { name: 'Shell', input: { command: body.command }, shell: text(body, 'command') ?? '' }
  else if (toolName !== undefined && name !== 'beforeMCPExecution' && name !== 'afterMCPExecution') tool = cursorToolCall(toolName, body.tool_input)
  const loops = typeof body.loop_count === 'number' ? body.loop_count : 0
  return {
    kind: KINDS[name] ?? 'other',
    name,
    sessionId,
    cwd,
    tool,
    reason: text(body, 'reason'),
    // A stop that Cursor runs again after our followup_message: never follow up twice in a row.
    stopActive: loops > 0 || body.stop_hook_active === true,
    raw: body,
  }
}

/** Claude's event names: a Claude Code hook Cursor ran, which may read Claude's answer fields. */
const CLAUDE_NAMES = new Set(['SessionStart', 'SessionEnd', 'PreToolUse', 'PostToolUse', 'Stop', 'UserPromptSubmit'])

function answer(event: CoreEvent, out: CoreAnswer): HookAnswer {
  const claude = CLAUDE_NAMES.has(event.name)
  switch (out.kind) {
    case 'deny': {
      const own = { permission: 'deny', user_message: out.reason, agent_message: out.reason }
      return claude ? { ...own, hookSpecificOutput: { hookEventName: 'PreToolUse', permissionDecision: 'deny', permissionDecisionReason: out.reason } } : own
    }
    case 'context': {
      if (event.kind === 'stop') return { followup_message: stopNotice(out.text) }
      const own = { additional_context: out.text }
      return claude ? { ...own, hookSpecificOutput: { hookEventName: event.name, additionalContext: out.text } } : own
    }
    default:
      return {}
  }
}

export const cursor: HookAdapter = { agent: 'cursor', parse, answer }

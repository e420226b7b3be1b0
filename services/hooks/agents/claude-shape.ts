// Claude Code's hook protocol, which Codex follows: the event {session_id, hook_event_name,
// cwd, tool_name, tool_input, source, reason, stop_hook_active, message, notification_type}
// on stdin (or as an http hook's body), and the answer in `hookSpecificOutput`. The two
// adapters (claude-code.ts, codex.ts) share it and differ only where the agents do.
import type { CoreAnswer, CoreEvent, HookAnswer, HookKind, ToolCall } from '../types'
import { requiredId, text } from './fields'

const KINDS: Record<string, HookKind> = {
  SessionStart: 'session-start',
  SessionEnd: 'session-end',
  PreToolUse: 'pre-tool',
  PostToolUse: 'post-tool',
  UserPromptSubmit: 'prompt',
  Stop: 'stop',
  PermissionRequest: 'permission',
  Notification: 'notification',
}

/** Claude Code's edit tools (`MultiEdit` for the versions that had it, and Codex's aliases): the file is `file_path` (`path` from Copilot CLI). */
const FILE_PATH_TOOLS = new Set(['Write', 'Edit', 'MultiEdit'])
/**
 * Shell tools: Claude Code's `Bash`; Codex sends each of its shell tools (`shell`,
 * `shell_command`, `exec_command`, `local_shell`) to hooks as `Bash` with `{command}`,
 * and the others are kept for the Codex versions that sent their own names.
 */
const SHELL_TOOLS = new Set(['Bash', 'shell', 'shell_command', 'exec_command', 'local_shell', 'container.exec'])

/** The command text of a shell tool's input: `command` (a string, or Codex's argv), or `cmd` (Codex's exec_command). */
function shellCommand(input: Record<string, unknown>): string | string[] | undefined {
  const command = input.command ?? input.cmd
  if (typeof command === 'string') return command
  if (Array.isArray(command) && command.every((a) => typeof a === 'string')) return command as string[]
  return undefined
}

/** What a Claude-shaped tool call writes: Write/Edit (file_path), NotebookEdit (notebook_path), apply_patch (the envelope), a shell tool's command. */
export function claudeToolCall(name: string, input: unknown): ToolCall {
  const call: ToolCall = { name, input }
  const fields = input && typeof input === 'object' ? (input as Record<string, unknown>) : {}
  const one = (v: unknown) => (typeof v === 'string' && v.trim() !== '' ? [v] : [])
  // Copilot CLI sends its own edits to Claude-shaped hooks as Edit/Write with its own `path` field.
  if (FILE_PATH_TOOLS.has(name)) call.files = one(fields.file_path ?? fields.path)
  else if (name === 'NotebookEdit') call.files = one(fields.notebook_path)
  else if (name === 'apply_patch') call.patch = input ?? ''
  else if (SHELL_TOOLS.has(name)) call.shell = shellCommand(fields)
  return call
}

/**
 * Claude Code's Notification that the agent waits for the user: an idle prompt or a question
 * (elicitation); not a permission prompt, which its PermissionRequest hook covers.
 */
function claudeWaitingFor(body: Record<string, unknown>): string | undefined {
  const message = text(body, 'message') ?? ''
  const type = text(body, 'notification_type') ?? ''
  if (type === 'idle_prompt' || type === 'elicitation_dialog' || (!type && /waiting for your input/i.test(message))) return message || 'waiting for your input'
  return undefined
}

export function parseClaudeShape(body: Record<string, unknown>): CoreEvent {
  const sessionId = requiredId(body, 'session_id')
  const name = requiredId(body, 'hook_event_name')
  const tool = text(body, 'tool_name')
  return {
    kind: KINDS[name] ?? 'other',
    name,
    sessionId,
    cwd: text(body, 'cwd'),
    tool: tool === undefined ? undefined : claudeToolCall(tool, body.tool_input),
    source: text(body, 'source'),
    reason: text(body, 'reason'),
    stopActive: body.stop_hook_active === true,
    waitingFor: name === 'Notification' ? claudeWaitingFor(body) : undefined,
    raw: body,
  }
}

/** The core's answer in `hookSpecificOutput`; a stop's context as `stop` says it (the agents differ there). */
export function answerClaudeShape(event: CoreEvent, out: CoreAnswer, stop: (text: string) => HookAnswer): HookAnswer {
  switch (out.kind) {
    case 'none':
      return {}
    case 'deny':
      return { hookSpecificOutput: { hookEventName: 'PreToolUse', permissionDecision: 'deny', permissionDecisionReason: out.reason } }
    case 'context':
      return event.kind === 'stop' ? stop(out.text) : { hookSpecificOutput: { hookEventName: event.name, additionalContext: out.text } }
    case 'decision':
      return {
        hookSpecificOutput: { hookEventName: 'PermissionRequest', decision: out.allow ? { behavior: 'allow' } : { behavior: 'deny', message: out.message } },
      }
  }
}

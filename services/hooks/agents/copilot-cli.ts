// GitHub Copilot CLI (`muster hook copilot-cli <event>` command hooks in
// .github/hooks/muster.json). Its own events are camelCase and name no event: {sessionId,
// timestamp, cwd, …} plus the event's fields (toolName/toolArgs, prompt, source, reason,
// stopReason); the hook's command line names the event, which `muster hook` adds as
// `hookName` (Copilot sends that field itself with permissionRequest). Configured with
// Claude Code's PascalCase names, or read from .claude/settings.json (Copilot runs those
// too), it sends Claude's shape with the same session id: read here as Claude's.
// Answers: preToolUse {permissionDecision: "deny", permissionDecisionReason}; sessionStart,
// userPromptSubmitted and postToolUse {additionalContext}; agentStop {decision: "block", reason};
// permissionRequest {behavior: "allow" | "deny", message} (checked against Copilot 1.0.102).
import type { CoreAnswer, CoreEvent, HookAdapter, HookAnswer, HookKind, ToolCall } from '../types'
import { invalid } from '../../../lib/errors'
import { answerClaudeShape, parseClaudeShape } from './claude-shape'
import { fileOf, objectOf, requiredId, stopNotice, text } from './fields'

const KINDS: Record<string, HookKind> = {
  sessionStart: 'session-start',
  sessionEnd: 'session-end',
  preToolUse: 'pre-tool',
  postToolUse: 'post-tool',
  userPromptSubmitted: 'prompt',
  agentStop: 'stop',
  permissionRequest: 'permission',
}

/** Copilot's file tools (`create` {path, file_text}, `edit` {path, old_str, new_str}), and the names its Claude-shaped events use. */
const FILE_TOOLS = new Set(['create', 'edit', 'str_replace_editor', 'write', 'Write', 'Edit', 'MultiEdit'])
const SHELL_TOOLS = new Set(['bash', 'powershell', 'Bash', 'PowerShell'])

/** What a Copilot tool call writes: a file tool's `path` (or `file_path`), apply_patch's envelope (any string in its input), a shell's command. */
export function copilotToolCall(name: string, raw: unknown): ToolCall {
  // toolArgs: an object in Copilot 1.0.102, a JSON string in its docs.
  const input = objectOf(raw)
  const call: ToolCall = { name, input }
  if (FILE_TOOLS.has(name)) call.files = fileOf(input, 'path', 'file_path')
  else if (name === 'apply_patch') call.patch = raw ?? ''
  else if (SHELL_TOOLS.has(name) && typeof input.command === 'string') call.shell = input.command
  return call
}

/** Copilot's own (camelCase) event. */
function parseOwn(body: Record<string, unknown>): CoreEvent {
  const name = text(body, 'hookName')
  if (name === undefined || name.trim() === '') throw invalid('hookName is required: Copilot CLI names no event, so the hook must (`muster hook copilot-cli <event>` adds it)')
  const sessionId = requiredId(body, 'sessionId')
  const tool = text(body, 'toolName')
  return {
    kind: KINDS[name] ?? 'other',
    name,
    sessionId,
    cwd: text(body, 'cwd'),
    tool: tool === undefined ? undefined : copilotToolCall(tool, body.toolArgs ?? body.toolInput),
    source: text(body, 'source'),
    reason: text(body, 'reason'),
    stopActive: body.stop_hook_active === true || body.stopHookActive === true,
    raw: body,
  }
}

const claudeFormat = (event: CoreEvent) => typeof event.raw.hook_event_name === 'string' && event.raw.hookName === undefined

function answer(event: CoreEvent, out: CoreAnswer): HookAnswer {
  const stop = (t: string) => ({ decision: 'block', reason: stopNotice(t) })
  if (claudeFormat(event)) return answerClaudeShape(event, out, stop)
  switch (out.kind) {
    case 'deny':
      return { permissionDecision: 'deny', permissionDecisionReason: out.reason }
    case 'context':
      // agentStop has no additionalContext: a block's reason is the agent's next prompt.
      return event.kind === 'stop' ? stop(out.text) : { additionalContext: out.text }
    case 'decision':
      // permissionRequest (opt-in: docs/agents/copilot-cli.md): what a person or their rule decided in Muster.
      return out.allow ? { behavior: 'allow' } : { behavior: 'deny', message: out.message ?? 'denied in Muster' }
    default:
      // No opinion: Copilot goes on (a permission request: it asks its user, or denies in -p mode).
      return {}
  }
}

export const copilotCli: HookAdapter = {
  agent: 'copilot-cli',
  // Claude's shape reads Copilot's `path` for Edit/Write too (claude-shape.ts).
  parse: (body) => (typeof body.hook_event_name === 'string' && body.hookName === undefined ? parseClaudeShape(body) : parseOwn(body)),
  answer,
}

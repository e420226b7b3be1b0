// OpenCode runs plugins, not hook commands: `muster init opencode` writes one
// (.opencode/plugin/muster.ts, from cli/init/opencode-plugin.ts) that sends each of its
// events through `muster hook opencode`. The event shape is the plugin's, named after
// OpenCode's own hooks and events (docs/agents/opencode.md):
//   {hook_event_name, session_id, cwd, source?, reason?, prompt?, tool_name?, tool_input?,
//    call_id?, stop_hook_active?}
// and the answer is what the plugin acts on: {} (no opinion), {decision: "deny", reason}
// (it throws, so the tool never runs and OpenCode hands the reason to the model as the
// tool's error), {context} (text for the model: a part of the user's message, the end of a
// tool's output, or one more prompt at session.idle), or {decision: "allow"} for a
// permission a person granted in Muster.
import { isAbsolute, resolve } from 'node:path'
import type { CoreAnswer, CoreEvent, HookAdapter, HookAnswer, HookKind, ToolCall } from '../types'
import { requiredId, text } from './fields'

const KINDS: Record<string, HookKind> = {
  'session.created': 'session-start',
  'chat.message': 'prompt',
  'tool.execute.before': 'pre-tool',
  'tool.execute.after': 'post-tool',
  'session.idle': 'stop',
  'session.deleted': 'session-end',
  // The plugin's dispose: OpenCode shuts down (`opencode run` done, the TUI closed).
  dispose: 'session-end',
}

/** OpenCode's tools that write the file named `filePath` (multiedit in the versions that had it). */
const FILE_PATH_TOOLS = new Set(['write', 'edit', 'multiedit'])

/** What an OpenCode tool call writes: write/edit (filePath), apply_patch (patchText, the envelope Codex uses), bash (command). */
export function opencodeToolCall(name: string, input: unknown): ToolCall {
  const call: ToolCall = { name, input }
  const fields = input && typeof input === 'object' ? (input as Record<string, unknown>) : {}
  if (FILE_PATH_TOOLS.has(name)) call.files = typeof fields.filePath === 'string' && fields.filePath.trim() !== '' ? [fields.filePath] : []
  else if (name === 'apply_patch') call.patch = typeof fields.patchText === 'string' ? fields.patchText : (input ?? '')
  else if (name === 'bash' && typeof fields.command === 'string') call.shell = fields.command
  return call
}

/** Where a call's relative paths are taken from: bash's `workdir` (absolute, or from the session's directory), else the session's directory. */
function cwdOf(cwd: string | undefined, input: unknown): string | undefined {
  const workdir = input && typeof input === 'object' ? (input as Record<string, unknown>).workdir : undefined
  if (typeof workdir !== 'string' || workdir.trim() === '') return cwd
  return isAbsolute(workdir) ? workdir : cwd ? resolve(cwd, workdir) : undefined
}

export function parseOpencode(body: Record<string, unknown>): CoreEvent {
  const sessionId = requiredId(body, 'session_id')
  const name = requiredId(body, 'hook_event_name')
  const kind = KINDS[name] ?? 'other'
  const tool = text(body, 'tool_name')
  const cwd = text(body, 'cwd')
  return {
    kind,
    name,
    sessionId,
    cwd: tool === undefined ? cwd : cwdOf(cwd, body.tool_input),
    tool: tool === undefined ? undefined : opencodeToolCall(tool, body.tool_input),
    source: kind === 'session-start' ? (text(body, 'source') ?? 'startup') : undefined,
    reason: text(body, 'reason') ?? (name === 'session.deleted' ? 'deleted' : name === 'dispose' ? 'exit' : undefined),
    stopActive: body.stop_hook_active === true,
    raw: body,
  }
}

export function answerOpencode(_event: CoreEvent, out: CoreAnswer): HookAnswer {
  switch (out.kind) {
    case 'none':
      return {}
    case 'deny':
      return { decision: 'deny', reason: out.reason }
    case 'context':
      return { context: out.text }
    case 'decision':
      return out.allow ? { decision: 'allow' } : { decision: 'deny', reason: out.message ?? 'denied in Muster' }
  }
}

export const opencode: HookAdapter = { agent: 'opencode', parse: parseOpencode, answer: answerOpencode }

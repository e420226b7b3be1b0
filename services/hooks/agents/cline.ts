// Cline: hook files in .clinerules/hooks/ (named by event: TaskStart, PostToolUse, …) run
// `muster hook cline`, and a plugin (.cline/plugins/muster.js, both written by `muster init
// cline`) posts the same events for a run's start and a tool call. The event carries `taskId`
// (with the CLI's `sessionContext.rootSessionId`, the session), `hookName`, `workspaceRoots`
// and per-event data; the answer is `{cancel, contextModification,
// errorMessage}`. Two generations send it:
// - the Cline CLI 3.x (the SDK, @cline/core's hook-file-hooks): hookName is the SDK's own
//   (`agent_start`, `tool_call`, …) and the tool call comes whole in `tool_call.input`;
// - the VS Code extension's hook factory: hookName is the file's (`TaskStart`, `PreToolUse`, …)
//   and only `preToolUse.parameters` (every value a string) says the input.
// Cline's own tools: `editor` {path}, `apply_patch` {input}, `run_commands` {commands}; and the
// extension's older `write_to_file` / `replace_in_file` {path}, `execute_command` {command}.
import type { CoreAnswer, CoreEvent, HookAdapter, HookAnswer, HookKind, ToolCall } from '../types'
import { requiredId, text } from './fields'

type Json = Record<string, unknown>

/** Each event by both its names (the SDK's, the hook file's), with its kind and, for a start or end, the word the core keeps. */
const EVENTS: Record<string, { kind: HookKind; word?: string }> = {
  // Cline drops what a start or prompt hook file prints (the CLI runs them detached): `muster
  // init cline` writes none, and its plugin posts agent_start itself and keeps the briefing.
  agent_start: { kind: 'session-start', word: 'startup' },
  TaskStart: { kind: 'session-start', word: 'startup' },
  agent_resume: { kind: 'session-start', word: 'resume' },
  TaskResume: { kind: 'session-start', word: 'resume' },
  prompt_submit: { kind: 'prompt' },
  UserPromptSubmit: { kind: 'prompt' },
  tool_call: { kind: 'pre-tool' },
  PreToolUse: { kind: 'pre-tool' },
  tool_result: { kind: 'post-tool' },
  PostToolUse: { kind: 'post-tool' },
  // A task that ends, however it ends, ends its session: `cline "…"` exits after it.
  agent_end: { kind: 'session-end', word: 'complete' },
  TaskComplete: { kind: 'session-end', word: 'complete' },
  agent_abort: { kind: 'session-end', word: 'cancel' },
  TaskCancel: { kind: 'session-end', word: 'cancel' },
  agent_error: { kind: 'session-end', word: 'error' },
  TaskError: { kind: 'session-end', word: 'error' },
  session_shutdown: { kind: 'session-end', word: 'shutdown' },
  SessionShutdown: { kind: 'session-end', word: 'shutdown' },
}

/** Tools whose `path` is the one file they write. */
const PATH_TOOLS = new Set(['editor', 'write_to_file', 'replace_in_file', 'new_file'])
/** Shell tools: the SDK's `run_commands`, the extension's `execute_command`. */
const SHELL_TOOLS = new Set(['run_commands', 'execute_command'])

const object = (v: unknown): Json | undefined => (v && typeof v === 'object' && !Array.isArray(v) ? (v as Json) : undefined)

/** A value the extension sent as a string that holds JSON (`preToolUse.parameters` stringifies arrays and objects). */
function unstring(v: unknown): unknown {
  if (typeof v !== 'string' || !/^\s*[[{]/.test(v)) return v
  try {
    return JSON.parse(v)
  } catch {
    return v
  }
}

const quote = (arg: string) => (/^[\w@%+=:,./-]+$/.test(arg) ? arg : `'${arg.replaceAll("'", `'\\''`)}'`)

/** One command of run_commands: a string, or `{command, args}` (run without a shell: quoted into one). */
function commandText(entry: unknown): string | null {
  if (typeof entry === 'string') return entry
  const e = object(entry)
  if (!e || typeof e.command !== 'string') return null
  const args = Array.isArray(e.args) ? e.args.filter((a): a is string => typeof a === 'string') : []
  return [e.command, ...args.map(quote)].join(' ')
}

/**
 * The shell script a shell tool runs: run_commands takes `{commands: [...]}` and the looser
 * shapes its schema accepts (a string, a list, `{command}`, `{cmd}`); several commands are
 * read as one script, a line each.
 */
function shellScript(input: unknown): string | undefined {
  const i = object(input)
  const value = i ? unstring(i.commands ?? i.command ?? i.cmd) : input
  const list = Array.isArray(value) ? value : [value]
  const lines = list.map(unstring).map(commandText).filter((l): l is string => l !== null)
  return lines.length ? lines.join('\n') : undefined
}

/** What a Cline tool call writes, read from its input. */
export function clineToolCall(name: string, input: unknown): ToolCall {
  const call: ToolCall = { name, input }
  const fields = object(input) ?? {}
  if (PATH_TOOLS.has(name)) call.files = typeof fields.path === 'string' && fields.path.trim() !== '' ? [fields.path] : []
  else if (name === 'apply_patch') call.patch = typeof input === 'string' ? input : typeof fields.input === 'string' ? fields.input : (input ?? '')
  else if (SHELL_TOOLS.has(name)) call.shell = shellScript(input)
  return call
}

/** The tool call of a pre- or post-tool event: the SDK's whole input, else the extension's string parameters. */
function toolOf(body: Json, kind: HookKind): ToolCall | undefined {
  const whole = object(kind === 'pre-tool' ? body.tool_call : body.tool_result)
  const data = object(kind === 'pre-tool' ? body.preToolUse : body.postToolUse)
  const name = text(whole ?? {}, 'name') ?? text(data ?? {}, 'toolName')
  if (name === undefined) return undefined
  if (whole && 'input' in whole) return clineToolCall(name, whole.input)
  const params = object(data?.parameters) ?? {}
  return clineToolCall(name, Object.fromEntries(Object.entries(params).map(([k, v]) => [k, k === 'path' || k === 'input' || k === 'command' ? v : unstring(v)])))
}

/** The directory the task runs in: its first workspace root (the SDK's workspaceInfo as a fallback). */
function cwdOf(body: Json): string | undefined {
  const roots = Array.isArray(body.workspaceRoots) ? body.workspaceRoots : []
  const first = roots.find((r) => typeof r === 'string' && r !== '')
  return (first as string | undefined) ?? text(object(body.workspaceInfo) ?? {}, 'rootPath')
}

/**
 * The session: the CLI's own session (`sessionContext.rootSessionId`, what `cline history`
 * lists), shared by the task's agent and the sub-agents it spawns (each with a `taskId` of its
 * own); the VS Code extension sends none: its `taskId`.
 */
function sessionOf(body: Json): string {
  const taskId = requiredId(body, 'taskId')
  const context = object(body.sessionContext)
  return context && typeof context.rootSessionId === 'string' && context.rootSessionId.trim() !== '' ? requiredId(context, 'rootSessionId') : taskId
}

/** Kinds a sub-agent's event does not have: its start, prompt or end is not the session's. */
const SESSION_KINDS = new Set<HookKind>(['session-start', 'session-end', 'prompt'])

export function parseCline(body: Json): CoreEvent {
  const name = requiredId(body, 'hookName')
  const sessionId = sessionOf(body)
  const known = EVENTS[name]
  const subAgent = typeof body.parent_agent_id === 'string' && body.parent_agent_id !== ''
  const kind = !known || (subAgent && SESSION_KINDS.has(known.kind)) ? 'other' : known.kind
  return {
    kind,
    name,
    sessionId,
    cwd: cwdOf(body),
    tool: kind === 'pre-tool' || kind === 'post-tool' ? toolOf(body, kind) : undefined,
    source: kind === 'session-start' ? known?.word : undefined,
    // Our word, not Cline's free text (an abort's `reason`): the core holds a session ended for `clear` or `resume`.
    reason: kind === 'session-end' ? known?.word : undefined,
    raw: body,
  }
}

/**
 * The core's answer as Cline reads a hook's output: a denied call is `cancel` with the reason
 * as `errorMessage` (the plugin skips just that call and hands the reason to the model; a
 * PreToolUse hook file would cancel the whole task); context is `contextModification`, which
 * Cline adds to the conversation after the tool's result.
 */
export function answerCline(_event: CoreEvent, out: CoreAnswer): HookAnswer {
  switch (out.kind) {
    case 'none':
      return {}
    case 'deny':
      return { cancel: true, errorMessage: out.reason }
    case 'context':
      return { cancel: false, contextModification: out.text }
    case 'decision':
      return out.allow ? {} : { cancel: true, errorMessage: out.message ?? 'Denied in Muster.' }
  }
}

export const cline: HookAdapter = { agent: 'cline', parse: parseCline, answer: answerCline }

// The hook core's own event and answer. Each agent's adapter (services/hooks/agents/*.ts)
// turns the agent's event into a CoreEvent, and the core's CoreAnswer into the JSON that
// agent acts on; the core (services/hooks/core.ts) knows no agent's shapes.
import type { HookHeaders } from './session'

/** What happened in the agent, in the core's terms. */
export type HookKind =
  | 'session-start' // a session begins (or resumes): register, brief
  | 'session-end' // the session is over: deregister (or hold, for /clear and resume)
  | 'pre-tool' // a tool is about to run: a write to a held file is denied
  | 'post-tool' // a tool ran: new messages may be shown
  | 'prompt' // the user sent a prompt: new messages may be shown
  | 'stop' // the model is about to stop: new messages may keep it going
  | 'permission' // the agent asks its user for a permission: an approval in Muster
  | 'notification' // the agent tells its user something (waiting for input: an approval)
  | 'other' // anything else: a heartbeat, no opinion

/** A tool call as the core checks it: what it writes, read by the adapter from the agent's own tool shapes. */
export interface ToolCall {
  /** The agent's own tool name, as shown to people (approvals, audit, logs). */
  name: string
  /** The tool's input as the agent sent it (an approval shows it). */
  input: unknown
  /** Files the call writes, as the agent named them (absolute, or relative to `cwd`). */
  files?: string[]
  /** A shell command the call runs (its writes are read by lib/shell). */
  shell?: string | string[]
  /** An apply_patch call's input: every string in it (to 4 levels deep) is read as the envelope (`*** Update File: …`). */
  patch?: unknown
  /** The call names more files than are read (the adapter stopped): it is not checked. */
  tooMany?: boolean
}

export interface CoreEvent {
  kind: HookKind
  /** The agent's own name of the event (PreToolUse, BeforeTool, preToolUse, …). */
  name: string
  /** The agent's session (conversation, task) id: the hook session. */
  sessionId: string
  /** The directory the agent runs in: relative paths are taken from it, and a new session's root found from it. */
  cwd?: string
  /** pre-tool, post-tool, permission: the call. */
  tool?: ToolCall
  /** session-start: startup | resume | clear | compact (the agent's word). */
  source?: string
  /** session-end: why (clear and resume hold the instance for the next session-start). */
  reason?: string
  /** stop: the agent is already continuing because of a stop answer (never block twice). */
  stopActive?: boolean
  /**
   * notification: what the agent tells its user when it waits for them (an answer, a
   * permission no hook decides): a "needs input" approval. Unset for a notice that asks nothing.
   */
  waitingFor?: string
  /** The event as the agent sent it. */
  raw: Record<string, unknown>
}

/** The core's answer: the adapter says it in the agent's own shape. */
export type CoreAnswer =
  | { kind: 'none' } // no opinion: the agent goes on as it would without Muster
  | { kind: 'deny'; reason: string } // pre-tool: the call must not run; the reason is for the model
  | { kind: 'context'; text: string } // text for the model (briefing, messages, warnings)
  | { kind: 'decision'; allow: boolean; message?: string } // permission: a person (or their rule) decided

/** The adapter's reply: the JSON body the agent reads (the hook command prints it). */
export type HookAnswer = Record<string, unknown>

export interface HookAdapter {
  /** The agent's name in the path: POST /api/hooks/{agent}, `muster hook <agent>`, `muster init <agent>`. */
  agent: string
  /** The agent's event as a CoreEvent; throws `invalid(…)` (400) naming what is missing. */
  parse(body: Record<string, unknown>): CoreEvent
  /** The core's answer to `event`, as the agent acts on it. */
  answer(event: CoreEvent, out: CoreAnswer): HookAnswer
}

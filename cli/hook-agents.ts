// What `muster hook <agent>` reads of each agent's event before forwarding it (the server's
// adapter, services/hooks/agents, reads the rest): the event's name, for how long to wait,
// and the directory the agent runs in, whose git root is the session's root.
type Event = Record<string, unknown>

export interface HookCli {
  eventName(event: Event): string | null
  cwd(event: Event): string | null
  /** Events whose answer waits for a person (an approval): the request may take that long. */
  approvals: readonly string[]
  /** Events the agent gives its hook less time than usual: the whole hook (start-up included) must fit. */
  limits: Readonly<Record<string, number>>
}

const str = (v: unknown) => (typeof v === 'string' && v !== '' ? v : null)

/** Claude Code's event fields, which Codex follows. */
const claudeShaped = (limits: Record<string, number> = {}): HookCli => ({
  eventName: (e) => str(e.hook_event_name),
  cwd: (e) => str(e.cwd),
  approvals: ['PermissionRequest'],
  limits,
})

export const HOOK_CLIS: Readonly<Record<string, HookCli>> = {
  'claude-code': claudeShaped(),
  // Codex kills a SessionEnd hook after 3 s: answer (or give up) well inside that.
  codex: claudeShaped({ SessionEnd: 2000 }),
  // Copilot CLI's own events name no event: the hook's command line does (`muster hook
  // copilot-cli preToolUse`, added as `hookName`); with Claude's event names it sends Claude's shape.
  'copilot-cli': {
    eventName: (e) => str(e.hookName) ?? str(e.hook_event_name),
    cwd: (e) => str(e.cwd),
    approvals: ['permissionRequest', 'PermissionRequest'],
    limits: {},
  },
  // Cursor names the event; a session's events without `cwd` (sessionStart, stop, …) run in its first workspace root.
  cursor: {
    eventName: (e) => str(e.hook_event_name),
    cwd: (e) => str(e.cwd) ?? (Array.isArray(e.workspace_roots) ? str(e.workspace_roots[0]) : null),
    approvals: [],
    limits: {},
  },
}

/**
 * The agent that runs this hook. Copilot CLI also runs the hooks of .claude/settings.json
 * (Claude-shaped events of its own session, under the same session id) and marks what it runs
 * with COPILOT_CLI=1: those go to Copilot's endpoint, so its session is Copilot's whichever
 * hook comes first.
 */
export function runningAgent(agent: string, env: Record<string, string | undefined>): string {
  return agent === 'claude-code' && env.COPILOT_CLI === '1' ? 'copilot-cli' : agent
}

/**
 * The event with its name added as `hookName` when the agent sends none (Copilot CLI's own
 * events: each hook says which it is on its command line). Anything that is not a JSON
 * object, or already names its event, goes as it came.
 */
export function withEventName(text: string, event: string | undefined): string {
  if (!event) return text
  try {
    const body = JSON.parse(text)
    if (!body || typeof body !== 'object' || Array.isArray(body) || body.hookName !== undefined || body.hook_event_name !== undefined) return text
    return JSON.stringify({ hookName: event, ...body })
  } catch {
    return text
  }
}

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
  // Cline names the event `hookName` and the directory its first `workspaceRoots`. Its plugin
  // (which posts these three) fails the whole task when a hook call takes over 3 s: give up
  // on the server after 2 s, start-up included, and let the call run.
  cline: {
    eventName: (e) => str(e.hookName),
    cwd: (e) => (Array.isArray(e.workspaceRoots) ? str(e.workspaceRoots[0]) : null),
    approvals: [],
    limits: { tool_call: 2000, agent_start: 2000, agent_resume: 2000 },
  },
}

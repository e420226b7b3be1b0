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
  /**
   * The hook is a plugin that sets its shell's environment itself (OpenCode's shell.env): the
   * answer also says which instance the session acts as, `muster: {agent, session}` (never
   * the token, which stays in .muster/agents/<agent>.json).
   */
  identityInAnswer?: boolean
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
  // The plugin muster init opencode writes sends Claude-like field names (services/hooks/agents/opencode.ts).
  opencode: { ...claudeShaped(), approvals: [], identityInAnswer: true },
}

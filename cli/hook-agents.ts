// What `muster hook <agent>` reads of each agent's event before forwarding it (the server's
// adapter, services/hooks/agents, reads the rest): the event's name, for how long to wait,
// and the directory the agent runs in, whose git root is the session's root.
import { createHash } from 'node:crypto'
import { readFileSync } from 'node:fs'
import { hostname } from 'node:os'

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
  // Gemini CLI names the event and cwd as Claude Code does, and has no permission hook.
  'gemini-cli': { ...claudeShaped(), approvals: [] },
  // The plugin muster init opencode writes sends Claude-like field names (services/hooks/agents/opencode.ts).
  opencode: { ...claudeShaped(), approvals: [], identityInAnswer: true },
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
 * The event as the server needs it, for an agent whose events leave something out: Copilot
 * CLI's own events name no event (each hook says which on its command line: added as
 * `hookName`, the field Copilot itself sends with permissionRequest), and versions before
 * 1.0.21 carry no session id (the Copilot process that runs the hook stands in for it: a
 * hash of the host, its pid and start time). Anything that is not a JSON object goes as it
 * came, for the server to refuse.
 */
export function completeEvent(agent: string, text: string, named: string | undefined): string {
  if (agent !== 'copilot-cli') return text
  let body: Record<string, unknown>
  try {
    body = JSON.parse(text)
  } catch {
    return text
  }
  if (!body || typeof body !== 'object' || Array.isArray(body) || body.hook_event_name !== undefined) return text
  const out: Record<string, unknown> = { ...body }
  if (named && out.hookName === undefined) out.hookName = named
  if (out.sessionId === undefined && out.session_id === undefined) {
    const running = agentProcess()
    if (running) out.sessionId = running
  }
  return JSON.stringify(out)
}

/** Shells between an agent and the hook command it runs (`sh -c "muster hook …"`). */
const SHELLS = new Set(['sh', 'bash', 'dash', 'zsh', 'fish', 'ksh', 'pwsh', 'powershell', 'env'])

/** pid's name, parent and start time (Linux's /proc), or null where there is none. */
function procStat(pid: number): { comm: string; ppid: number; start: string } | null {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8')
    const close = stat.lastIndexOf(')')
    const fields = stat.slice(close + 2).split(' ')
    return { comm: stat.slice(stat.indexOf('(') + 1, close), ppid: Number(fields[1]), start: fields[19] ?? '' }
  } catch {
    return null
  }
}

/**
 * The agent process that runs this hook, as an id that outlives the hook: the first ancestor
 * that is not a shell, with its start time (a pid is reused; a pid with its start time is not),
 * hashed so its first characters (a session's default name) tell sessions apart. Without
 * /proc, the parent's pid.
 */
export function agentProcess(from = process.ppid): string | null {
  const id = (what: string) => createHash('sha256').update(`${hostname()} ${what}`).digest('hex').slice(0, 32)
  let pid = from
  for (let depth = 0; depth < 8 && pid > 1; depth++) {
    const stat = procStat(pid)
    if (!stat) return depth === 0 ? id(`${from}`) : null
    if (!SHELLS.has(stat.comm)) return id(`${pid} ${stat.start}`)
    pid = stat.ppid
  }
  return null
}

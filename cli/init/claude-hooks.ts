// Claude Code's hook settings ({hooks: {Event: [{matcher, hooks: [{type, command | url, …}]}]}}),
// which Codex's .codex/hooks.json follows: our entries merged in, everyone else's kept.
import { APPROVAL_HOOK_TIMEOUT_S, APPROVAL_WAIT, type InitOptions, type Json } from './files'

/** The environment variables a Claude Code http hook may put in its headers. */
export const HOOK_ENV = ['SERVICE_TOKEN', 'MUSTER_AGENT', 'MUSTER_PROJECT'] as const
const CLAUDE_EVENTS = ['SessionStart', 'PreToolUse', 'PermissionRequest', 'PostToolUse', 'UserPromptSubmit', 'Notification', 'Stop', 'SessionEnd'] as const
// Codex has SessionEnd since 0.145: `codex exec` ending releases the session's files at once.
const CODEX_EVENTS = ['SessionStart', 'PreToolUse', 'PermissionRequest', 'PostToolUse', 'UserPromptSubmit', 'Stop', 'SessionEnd'] as const
/** Codex caps a SessionEnd hook at 3 s (and hashes its trust with the capped value). */
const CODEX_SESSION_END_TIMEOUT = 3
// The shell tools too: a command's writes are read from its text (lib/shell). Codex sends
// every shell tool to hooks as `Bash`.
const EDIT_TOOLS: Record<'claude-code' | 'codex', string> = { 'claude-code': 'Write|Edit|NotebookEdit|Bash', codex: 'apply_patch|Write|Edit|Bash' }
type Hook = Json
export type Group = { matcher?: string; hooks: Hook[] }

/** One of our own hook entries, whichever server or options it was written with. */
export const isOurs = (h: Hook) =>
  (h?.type === 'http' && typeof h.url === 'string' && /\/api\/hooks\/[\w-]+$/.test(h.url)) ||
  (h?.type === 'command' && typeof h.command === 'string' && /^muster hook [\w-]+(\s|$)/.test(h.command))

/**
 * Claude Code runs SessionStart (and SessionEnd) hooks as commands only, not as http
 * hooks: those two run `muster hook claude-code`, which posts the event the same way.
 */
const COMMAND_ONLY = new Set(['SessionStart', 'SessionEnd'])

function ourHook(o: InitOptions, event: string): Hook {
  const approval = event === 'PermissionRequest'
  const timeout = approval ? APPROVAL_HOOK_TIMEOUT_S : 10
  if (o.agent === 'codex' || COMMAND_ONLY.has(event)) {
    const reserve = o.reserve ? ` --reserve ${o.reserve}` : ''
    const wait = approval ? ` --approval-wait ${APPROVAL_WAIT}` : ''
    const commandTimeout = o.agent === 'codex' && event === 'SessionEnd' ? CODEX_SESSION_END_TIMEOUT : timeout
    return { type: 'command', command: `muster hook ${o.agent} --server ${o.server}${reserve}${wait}`, timeout: commandTimeout }
  }
  const headers: Record<string, string> = {
    Authorization: 'Bearer $SERVICE_TOKEN',
    'X-Muster-Agent': '$MUSTER_AGENT',
    'X-Muster-Project': '$MUSTER_PROJECT',
  }
  if (o.reserve) headers['X-Muster-Reserve'] = o.reserve
  if (approval) headers['X-Muster-Approval-Wait'] = APPROVAL_WAIT
  return { type: 'http', url: `${o.server}/api/hooks/claude-code`, headers, allowedEnvVars: [...HOOK_ENV], timeout }
}

/** `settings.hooks` with our entries replaced (other groups and hooks kept where they are). */
export function mergeHooks(settings: Json, o: InitOptions): Json {
  const events = o.agent === 'codex' ? CODEX_EVENTS : CLAUDE_EVENTS
  return withOurHooks(
    settings,
    events.map((event) => {
      const hook = ourHook(o, event)
      return [event, event === 'PreToolUse' ? { matcher: EDIT_TOOLS[o.agent as 'claude-code' | 'codex'], hooks: [hook] } : { hooks: [hook] }]
    }),
  )
}

/**
 * `settings.hooks` (Claude Code's shape, which Codex and Gemini CLI follow) with every one of
 * our entries taken out, then `ours` (event, group) appended: other groups and hooks are kept
 * where they are, so a second run changes nothing.
 */
export function withOurHooks(settings: Json, ours: [string, Group][]): Json {
  const hooks: Json = { ...(settings.hooks ?? {}) }
  for (const [event, groups] of Object.entries(hooks)) {
    if (!Array.isArray(groups)) continue
    const kept: Group[] = []
    for (const g of groups as Group[]) {
      const others = Array.isArray(g?.hooks) ? g.hooks.filter((h) => !isOurs(h)) : null
      if (!others || others.length === g.hooks.length) kept.push(g)
      else if (others.length) kept.push({ ...g, hooks: others })
    }
    hooks[event] = kept
  }
  for (const [event, group] of ours) hooks[event] = [...(Array.isArray(hooks[event]) ? hooks[event] : []), group]
  for (const [event, groups] of Object.entries(hooks)) if (Array.isArray(groups) && groups.length === 0) delete hooks[event]
  return { ...settings, hooks }
}

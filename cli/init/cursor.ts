// `muster init cursor`: Cursor runs the command hooks of .cursor/hooks.json ({version: 1,
// hooks: {event: [{command}]}}), each event's payload on stdin with its name
// (`hook_event_name`), so every hook runs the same `muster hook cursor`. The MCP server goes
// in .cursor/mcp.json (the token read from the environment by Cursor's `${env:…}`
// interpolation, never written), the coordination section in .cursor/rules/muster.mdc (a rule
// Cursor always applies). Each file merged with what is there; a second run changes nothing.
import { join } from 'node:path'
import { guideSection, jsonText, mergeGuide, mergeHookLists, readJson, type FileSpec, type InitOptions, type Json } from './files'

/**
 * sessionStart (register, brief as additional_context), preToolUse (every tool: a Write,
 * Delete or Shell of a held file is denied), postToolUse (new messages as
 * additional_context), stop (new messages as a followup_message), sessionEnd (deregister).
 * beforeSubmitPrompt cannot add context, so it is not wired; beforeShellExecution would check
 * a shell command a second time (preToolUse sees it as `Shell`).
 */
export const CURSOR_EVENTS = ['sessionStart', 'preToolUse', 'postToolUse', 'stop', 'sessionEnd'] as const

export const isOurCursorHook = (h: Json) => typeof h?.command === 'string' && /^muster hook cursor\b/.test(h.command)

function ourHook(o: InitOptions): Json {
  const reserve = o.reserve ? ` --reserve ${o.reserve}` : ''
  return { command: `muster hook cursor --server ${o.server}${reserve}` }
}

/** `config` with our hooks in place of any earlier ones of ours (other hooks and keys kept). */
export const mergeCursorHooks = (config: Json, o: InitOptions): Json => mergeHookLists(config, isOurCursorHook, Object.fromEntries(CURSOR_EVENTS.map((e) => [e, ourHook(o)])))

/** Cursor's MCP entry: the token from the environment Cursor was started in, through its `${env:NAME}` interpolation. */
export function mergeCursorMcp(mcp: Json, server: string): Json {
  const muster = { url: `${server}/mcp`, headers: { Authorization: 'Bearer ${env:SERVICE_TOKEN}' } }
  return { ...mcp, mcpServers: { ...(mcp.mcpServers ?? {}), muster } }
}

const RULE_HEAD = '---\ndescription: How this team of agents coordinates through Muster (reservations, inbox, tasks)\nalwaysApply: true\n---\n\n'

/** The rule file: Cursor's front matter, then the section (kept between its markers on a rerun). */
export function cursorRule(current: string, o: InitOptions): string {
  const body = current.startsWith('---\n') ? current : RULE_HEAD + current
  return mergeGuide(body, guideSection(o))
}

export function cursorFiles(o: InitOptions): FileSpec[] {
  return [
    { path: '.cursor/hooks.json', content: () => jsonText(mergeCursorHooks(readJson(join(o.root, '.cursor/hooks.json')), o)) },
    { path: '.cursor/mcp.json', content: () => jsonText(mergeCursorMcp(readJson(join(o.root, '.cursor/mcp.json')), o.server)) },
    { path: '.cursor/rules/muster.mdc', content: (t) => cursorRule(t, o) },
  ]
}

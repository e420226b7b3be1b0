// Doctor: the hooks of the agents whose config is a flat {version: 1, hooks: {event: [hook]}}
// (Copilot CLI's .github/hooks/muster.json, Cursor's .cursor/hooks.json): each event `muster
// init` wires has our hook, pointing at the CLI's server.
import { COPILOT_EVENTS, COPILOT_HOOKS_FILE, isOurCopilotHook } from '../init/copilot-cli'
import { CURSOR_EVENTS, isOurCursorHook } from '../init/cursor'
import type { DoctorContext, Finding } from './check'

type Hook = Record<string, any>

const AGENTS = [
  { agent: 'copilot-cli', path: COPILOT_HOOKS_FILE, dir: '.github/hooks', events: COPILOT_EVENTS as readonly string[], isOurs: isOurCopilotHook, command: (h: Hook) => String(h.bash ?? h.powershell ?? '') },
  { agent: 'cursor', path: '.cursor/hooks.json', dir: '.cursor', events: CURSOR_EVENTS as readonly string[], isOurs: isOurCursorHook, command: (h: Hook) => String(h.command ?? '') },
]

export interface FlatHookFindings {
  findings: Finding[]
  /** The agents wired here, whose hooks run `muster hook …` (they need muster on PATH). */
  wired: string[]
}

export function flatHookFindings(ctx: DoctorContext): FlatHookFindings {
  const findings: Finding[] = []
  const wired: string[] = []
  const server = ctx.config?.server ?? null
  for (const a of AGENTS) {
    const check = `hooks ${a.agent}`
    const config = ctx.json(a.path)
    if (config === undefined) {
      findings.push({ status: 'fail', check, message: `${a.path} is not a JSON object: ${a.agent} runs none of its hooks`, fix: `fix the file, then \`muster init ${a.agent}\`` })
      continue
    }
    const ours = new Map<string, Hook[]>()
    for (const [event, list] of Object.entries(config?.hooks ?? {}))
      if (Array.isArray(list)) for (const h of list.filter(a.isOurs)) ours.set(event, [...(ours.get(event) ?? []), h])
    if (!ours.size) {
      if (config && ctx.exists(a.dir)) findings.push({ status: 'warn', check, message: `${a.path} has no Muster hooks`, fix: `\`muster init ${a.agent}\`` })
      continue
    }
    wired.push(a.agent)
    const missing = a.events.filter((e) => !ours.has(e))
    if (missing.length) findings.push({ status: 'fail', check, message: `${a.path} lacks ${missing.join(', ')}`, fix: `\`muster init ${a.agent}\` (merges, keeps your other hooks)` })
    else findings.push({ status: 'ok', check, message: `${a.path}: ${[...ours.keys()].join(', ')}` })
    const elsewhere = [...new Set([...ours.values()].flat().map((h) => /--server\s+(\S+)/.exec(a.command(h))?.[1]).filter((s): s is string => !!s && s !== server))]
    if (server && elsewhere.length)
      findings.push({ status: 'warn', check, message: `its hooks point at ${elsewhere.join(', ')} but the CLI at ${server}`, fix: `\`muster init ${a.agent}\` with the server you mean (--server URL)` })
  }
  return { findings, wired }
}

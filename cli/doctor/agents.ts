// Doctor: the hooks of each agent wired in this repository (every event and tool that
// `muster init` wires, pointing at the CLI's server), and `muster` on PATH for the
// command hooks.
import { isOurs, mergeHooks, type InitAgent, type InitOptions } from '../init'
import { mergeGeminiSettings } from '../init/gemini-cli'
import type { Check, DoctorContext, Finding } from './check'
import { clineWired } from './cline'
import { flatHookFindings } from './flat-hooks'
import { opencodeFindings } from './opencode'

// Claude's hook shape (Gemini CLI's settings too); Copilot CLI's and Cursor's flat hook lists: flat-hooks.ts; OpenCode's plugin: opencode.ts.
/** Each agent's hook file, and the settings `muster init` writes there (whose hooks are expected). */
const FILES: Partial<Record<InitAgent, { path: string; dir: string; wired?: (o: InitOptions) => Record<string, any> }>> = {
  'claude-code': { path: '.claude/settings.json', dir: '.claude' },
  codex: { path: '.codex/hooks.json', dir: '.codex' },
  'gemini-cli': { path: '.gemini/settings.json', dir: '.gemini', wired: (o) => mergeGeminiSettings({}, o) },
}

type Group = { matcher?: string; hooks?: Record<string, any>[] }

/** Our hooks in an agent's file, by event, with their matchers. */
function ours(settings: Record<string, any>): Map<string, { matchers: (string | undefined)[]; hooks: Record<string, any>[] }> {
  const found = new Map<string, { matchers: (string | undefined)[]; hooks: Record<string, any>[] }>()
  for (const [event, groups] of Object.entries(settings.hooks ?? {})) {
    if (!Array.isArray(groups)) continue
    for (const g of groups as Group[]) {
      const mine = Array.isArray(g?.hooks) ? g.hooks.filter(isOurs) : []
      if (!mine.length) continue
      const entry = found.get(event) ?? { matchers: [], hooks: [] }
      entry.matchers.push(g.matcher)
      entry.hooks.push(...mine)
      found.set(event, entry)
    }
  }
  return found
}

/** The server a hook of ours points at. */
const serverOf = (h: Record<string, any>) =>
  h.type === 'http' ? String(h.url).replace(/\/api\/hooks\/[\w-]+$/, '') : (/--server\s+(\S+)/.exec(String(h.command))?.[1] ?? null)

function agentFindings(ctx: DoctorContext, agent: InitAgent): Finding[] | null {
  const { path, dir, wired = (o: InitOptions) => mergeHooks({}, o) } = FILES[agent]!
  const settings = ctx.json(path)
  const check = `hooks ${agent}`
  if (settings === undefined) return [{ status: 'fail', check, message: `${path} is not a JSON object: ${agent} runs none of its hooks`, fix: `fix the file, then \`muster init ${agent}\`` }]
  const found = settings ? ours(settings) : new Map()
  if (!found.size) return ctx.exists(dir) ? [{ status: 'warn', check, message: `${path} has no Muster hooks`, fix: `\`muster init ${agent}\`` }] : null
  const server = ctx.config?.server ?? null
  const expected = wired({ agent, root: ctx.root, server: server ?? '' }).hooks as Record<string, Group[]>
  const missing: string[] = []
  for (const [event, groups] of Object.entries(expected)) {
    const have = found.get(event)
    if (!have) {
      missing.push(event)
      continue
    }
    const tools = (groups[0].matcher ?? '').split('|').filter(Boolean)
    const matched = new Set(have.matchers.flatMap((m: string | undefined) => (m ?? '').split('|')))
    const lacking = have.matchers.some((m: string | undefined) => m === undefined || m === '*' || m === '') ? [] : tools.filter((t) => !matched.has(t))
    if (lacking.length) missing.push(`${event} of ${lacking.join(', ')}`)
  }
  const out: Finding[] = []
  if (missing.length) {
    const shell = missing.some((m) => /\bBash\b/.test(m)) ? ' (without Bash, writes through the shell are not checked)' : ''
    out.push({ status: 'fail', check, message: `${path} lacks ${missing.join('; ')}${shell}`, fix: `\`muster init ${agent}\` (merges, keeps your other hooks)` })
  } else out.push({ status: 'ok', check, message: `${path}: ${[...found.keys()].join(', ')}` })
  const elsewhere = [...new Set([...found.values()].flatMap((e) => e.hooks.map(serverOf)).filter((s): s is string => !!s && s !== server))]
  if (server && elsewhere.length)
    out.push({ status: 'warn', check, message: `its hooks point at ${elsewhere.join(', ')} but the CLI at ${server}`, fix: `\`muster init ${agent}\` with the server you mean (--server URL)` })
  return out
}

/** Whether an agent's Muster hooks run `muster …` commands. */
function usesCommands(ctx: DoctorContext, agent: InitAgent): boolean {
  const settings = ctx.json(FILES[agent]!.path)
  if (!settings) return false
  return [...ours(settings).values()].some((e) => e.hooks.some((h: Record<string, any>) => h.type === 'command'))
}

export const agentChecks: Check = (ctx) => {
  const out: Finding[] = []
  for (const agent of Object.keys(FILES) as InitAgent[]) out.push(...(agentFindings(ctx, agent) ?? []))
  const flat = flatHookFindings(ctx)
  out.push(...flat.findings)
  const opencode = opencodeFindings(ctx)
  out.push(...(opencode ?? []))
  if (!out.length && !clineWired(ctx)) out.push({ status: 'warn', check: 'hooks', message: `no agent is wired in ${ctx.root}`, fix: '`muster init <agent>` in the repository (claude-code, codex, gemini-cli, copilot-cli, cursor, opencode, cline)' })
  const commands = [...(Object.keys(FILES) as InitAgent[]).filter((a) => usesCommands(ctx, a)), ...flat.wired, ...(opencode?.some((f) => f.status !== 'fail') ? ['opencode'] : [])]
  const bin = Bun.which('muster', { PATH: ctx.env.PATH ?? '' })
  if (bin) out.push({ status: 'ok', check: 'PATH', message: `muster is ${bin}` })
  else if (commands.length)
    out.push({
      status: 'fail',
      check: 'PATH',
      message: `the ${commands.join(' and ')} hooks run \`muster hook …\` but muster is not on PATH: they fail and the agent goes on uncoordinated`,
      fix: 'put the muster binary on PATH (e.g. a link in /usr/local/bin), in the environment the agent starts from',
    })
  else out.push({ status: 'warn', check: 'PATH', message: 'muster is not on PATH', fix: 'put the muster binary on PATH before wiring an agent (its hooks run it)' })
  return out
}

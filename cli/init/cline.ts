// `muster init cline`: hook files in .clinerules/hooks/ (executables named by Cline's event,
// each running `muster hook cline`), the plugin .cline/plugins/muster.js for what a hook file
// cannot do (skip one tool call, brief the model: cline-plugin.ts), and .clinerules/muster.md,
// a rules file Cline puts in the model's context. Cline reads MCP servers only from the user's
// own settings (~/.cline/data/settings/cline_mcp_settings.json), none from the project: no
// MCP entry is written. The token comes from the environment (SERVICE_TOKEN / MUSTER_TOKEN).
import { existsSync, readFileSync } from 'node:fs'
import { join } from 'node:path'
import { UsageError } from '../output'
import { clinePlugin } from './cline-plugin'
import { guideSection, mergeGuide, type FileSpec, type InitOptions } from './files'

export const CLINE_HOOKS_DIR = '.clinerules/hooks'
export const CLINE_PLUGIN = '.cline/plugins/muster.js'
export const CLINE_RULES = '.clinerules/muster.md'

/**
 * The events a hook file is written for: PostToolUse (its contextModification reaches the
 * model after the tool's result: new messages), and the ways a task ends (its session ends and
 * releases what it held): TaskComplete, TaskError, and SessionShutdown, which the CLI sends when
 * it is interrupted (Ctrl-C) and after a cancelled task's TaskCancel (so no TaskCancel file: one
 * end each). Cline drops what a TaskStart, TaskResume or UserPromptSubmit hook prints, and a
 * PreToolUse hook's cancel stops the whole task: the plugin does those.
 */
export const CLINE_HOOK_EVENTS = ['PostToolUse', 'TaskComplete', 'TaskError', 'SessionShutdown'] as const

/** A line every hook file of ours holds: how a later run knows it. */
const MARK = '# muster: written by `muster init cline`'
/** Names Cline reads a hook from, in the order ours takes the first free one (a file of the user's keeps its name). */
const NAMES = (event: string) => [event, `${event}.sh`, `${event}.bash`]

const isOurs = (path: string) => existsSync(path) && readFileSync(path, 'utf8').includes(MARK)

function command(o: InitOptions): string[] {
  return ['muster', 'hook', 'cline', '--server', o.server, ...(o.reserve ? ['--reserve', o.reserve] : [])]
}

const quote = (arg: string) => (/^[\w@%+=:,./-]+$/.test(arg) ? arg : `'${arg.replaceAll("'", `'\\''`)}'`)

function hookScript(o: InitOptions, event: string): string {
  return [`#!/bin/sh`, MARK, `# Cline's ${event} event, posted to Muster.`, `exec ${command(o).map(quote).join(' ')}`, ''].join('\n')
}

const hookNames = (event: string) => NAMES(event).map((n) => `${CLINE_HOOKS_DIR}/${n}`)

/** Our hook file for `event` under `root` (relative), or null when there is none. */
export const ourHookFile = (root: string, event: string): string | null => hookNames(event).find((p) => isOurs(join(root, p))) ?? null

/** Where our hook file for `event` goes: where it already is, else the first name no file of the user's holds. */
function hookPath(root: string, event: string): string {
  const names = hookNames(event)
  const ours = ourHookFile(root, event)
  if (ours) return ours
  const free = names.find((p) => !existsSync(join(root, p)))
  if (!free) throw new UsageError(`${names.join(', ')} are all files of your own: move one away so Muster's ${event} hook has a name Cline reads`)
  return free
}

/** Cline reads MCP servers from the user's own settings only: what to run, the token left to the shell. */
export const clineMcpNote = (server: string) =>
  `Cline reads MCP servers only from your own settings, not the repository's: to add Muster's, run \`cline mcp add muster --transport streamableHttp --header "Authorization: Bearer $SERVICE_TOKEN" --yes ${server}/mcp\``

export function clineFiles(o: InitOptions): FileSpec[] {
  return [
    ...CLINE_HOOK_EVENTS.map((event) => ({ path: hookPath(o.root, event), content: () => hookScript(o, event), mode: 0o755 })),
    { path: CLINE_PLUGIN, content: () => clinePlugin(command(o)) },
    { path: CLINE_RULES, content: (t: string) => mergeGuide(t, guideSection(o)) },
  ]
}

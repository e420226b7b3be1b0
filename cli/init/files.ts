// What every `muster init <agent>` shares: its options, the planned files, and reading and
// merging the files an agent's configuration lives in (JSON, TOML, the guide section of
// CLAUDE.md / AGENTS.md / GEMINI.md …). One file per agent (cli/init/<agent>.ts) says what
// it writes; cli/init/index.ts plans and writes it.
import { existsSync, readFileSync } from 'node:fs'
import { resolve } from 'node:path'
import { setTomlValue } from '../codex-trust'
import { UsageError } from '../output'

export type InitAgent = 'claude-code' | 'codex' | 'copilot-cli' | 'cursor' | 'gemini-cli' | 'opencode' | 'cline'

export interface InitOptions {
  agent: InitAgent
  /** The repository root the files go in. */
  root: string
  /** The server URL the hooks and MCP entry point at. */
  server: string
  /** Edit-reserve mode: each edited file reserved for this long (a duration like 30m). */
  reserve?: string
  /** The token Codex's telemetry sends (it goes in the user's own Codex config, never the repository). */
  token?: string | null
  /** Codex's home ($CODEX_HOME, default ~/.codex): Codex reads telemetry settings only from there. */
  codexHome?: string
  /** Claude Code's config dir ($CLAUDE_CONFIG_DIR, default ~/.claude): it takes telemetry settings only from the user's settings there. */
  claudeHome?: string
  /** Codex: let the default workspace-write sandbox reach the network (the CLI calls the server). */
  allowNetwork?: boolean
  /** Gemini CLI: trust the repository in the user's own trusted folders (Codex records its trust after writing, cli/codex-trust.ts). */
  trust?: boolean
}

/** One file an agent's init writes: `content` makes the new text from the current one ('' when absent). */
export interface FileSpec {
  /** Relative to the repository root, or absolute (the user's own agent config, outside it). */
  path: string
  content: (current: string) => string
  /** The file's mode when it must be more than a plain file (an executable hook: 0o755). */
  mode?: number
}

export interface PlannedFile {
  path: string
  action: 'create' | 'update' | 'unchanged'
  content: string
  mode?: number
}

/**
 * A PermissionRequest's answer waits for a person in Muster (docs/api/approvals.md): this
 * long, sent as X-Muster-Approval-Wait, and the hook's own timeout is longer, so the agent
 * hears "expired" ({}: it asks at its terminal) rather than cutting the request off.
 */
export const APPROVAL_WAIT = '5m'
export const APPROVAL_HOOK_TIMEOUT_S = 5 * 60 + 30
const BEGIN = '<!-- muster:begin -->'
const END = '<!-- muster:end -->'

export type Json = Record<string, any>

export function readJson(path: string): Json {
  if (!existsSync(path)) return {}
  const text = readFileSync(path, 'utf8')
  if (text.trim() === '') return {}
  let parsed: unknown
  try {
    parsed = JSON.parse(text)
  } catch (err) {
    throw new UsageError(`${path} is not valid JSON (${(err as Error).message}): fix it or move it away, then run init again`)
  }
  if (!parsed || typeof parsed !== 'object' || Array.isArray(parsed)) throw new UsageError(`${path} must hold a JSON object`)
  return parsed as Json
}

export const jsonText = (value: unknown) => JSON.stringify(value, null, 2) + '\n'

/** `text` with the TOML table `header` set to `body` (replaced where it is, else appended). */
export function mergeTomlTable(text: string, header: string, body: string): string {
  const table = `${header}\n${body}`
  const lines = text.split('\n')
  const start = lines.findIndex((l) => l.trim() === header)
  if (start === -1) return (text.trim() === '' ? '' : text.replace(/\n*$/, '\n\n')) + table
  let end = start + 1
  while (end < lines.length && !/^\s*\[/.test(lines[end])) end++
  const before = lines.slice(0, start).join('\n')
  const after = lines.slice(end).join('\n')
  return (before ? `${before}\n` : '') + table + (after.trim() ? `\n${after.replace(/^\n+/, '')}` : '')
}

/** The coordination section of CLAUDE.md / AGENTS.md. */
export function guideSection(o: InitOptions): string {
  const reserving = o.reserve
    ? `Each file you start editing is reserved for you for ${o.reserve} (renewed as you keep editing it).`
    : 'Reserve the files you will work on before editing them: `muster reserve <project> <glob…> --ttl 30m --reason "…"`.'
  return [
    BEGIN,
    '## How this team of agents coordinates (Muster)',
    '',
    `Several agents work in this repository at once, coordinated by the Muster server at ${o.server}.`,
    'Hooks connect each session to it: your session is registered as an instance (the first message of',
    'a session tells you your name), and the `muster` CLI in your shell already acts as it: no `muster register`.',
    '',
    `- **Reservations.** An edit of a file another agent reserved is denied, with who holds it, why and until when. ${reserving}`,
    '  A shell command that writes such a file (`>`, `sed -i`, `tee`, `cp`, `mv`, `rm`, …) is denied the same way.',
    '  Release what you no longer need (`muster release <id>`). Do not work around a denial: ask the holder.',
    '- **Inbox.** Messages from other agents and people are shown to you as they arrive. Ask a holder or a teammate',
    '  with `muster send <name> --subject "…" --body "…"`; acknowledge a message that asks for it with `muster ack <id>`.',
    '- **Tasks.** Take work from the queue with `muster task claim <queue>`: a task that names its files reserves them',
    '  for you. Leave notes for whoever takes it next (`muster task note <id> "…"`), and ack or nack it when done.',
    END,
  ].join('\n')
}

/** `text` with our section replaced between its markers, or appended. */
export function mergeGuide(text: string, section: string): string {
  const start = text.indexOf(BEGIN)
  const end = text.indexOf(END)
  if (start !== -1 && end > start) return text.slice(0, start) + section + text.slice(end + END.length)
  return (text.trim() === '' ? '' : text.replace(/\n*$/, '\n\n')) + section + '\n'
}

/**
 * A `{version: 1, hooks: {event: [hook]}}` config (Copilot CLI's, Cursor's) with our hook for
 * each event of `ours` in place of any earlier one of ours (`isOurs`), other hooks and keys kept.
 */
export function mergeHookLists(config: Json, isOurs: (h: Json) => boolean, ours: Record<string, Json>): Json {
  const hooks: Json = { ...(config.hooks ?? {}) }
  for (const [event, list] of Object.entries(hooks)) {
    if (!Array.isArray(list)) continue
    const kept = list.filter((h) => !isOurs(h))
    if (kept.length) hooks[event] = kept
    else delete hooks[event]
  }
  for (const [event, hook] of Object.entries(ours)) hooks[event] = [...(Array.isArray(hooks[event]) ? hooks[event] : []), hook]
  return { ...config, version: config.version ?? 1, hooks }
}

export const readText = (path: string) => (existsSync(path) ? readFileSync(path, 'utf8') : '')
/** A file of the user's own agent config: an absolute path, outside the repository. */
export const userFile = (dir: string, name: string) => resolve(dir, name)


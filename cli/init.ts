// `muster init claude-code|codex`: wires an agent of the current repository to Muster.
// Claude Code gets http hooks in .claude/settings.json (the server token from the
// environment through allowedEnvVars; SessionStart and SessionEnd as command hooks) and
// the MCP server in .mcp.json; Codex gets command
// hooks running `muster hook codex` in .codex/hooks.json and the MCP server in
// .codex/config.toml (with --allow-network, the sandbox setting that lets the model's shell
// reach the server); both a short CLAUDE.md / AGENTS.md section, and the agent's telemetry
// towards the server in the user's own agent config (the only place each reads it from).
// Each file is merged into what is there (other hooks and settings kept), and a second run writes nothing.
import { chmodSync, existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs'
import { homedir } from 'node:os'
import { dirname, isAbsolute, join, resolve } from 'node:path'
import { setTomlValue } from './codex-trust'
import { UsageError } from './output'
import { copilotFiles } from './init/copilot-cli'
import { cursorFiles } from './init/cursor'

export type InitAgent = 'claude-code' | 'codex'
/** Every agent `muster init` wires: Copilot CLI's and Cursor's files are planned in cli/init/. */
export type WiredAgent = InitAgent | 'copilot-cli' | 'cursor'

export interface InitOptions {
  agent: WiredAgent
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
}

export interface PlannedFile {
  path: string
  action: 'create' | 'update' | 'unchanged'
  content: string
}

/** The environment variables a Claude Code http hook may put in its headers. */
export const HOOK_ENV = ['SERVICE_TOKEN', 'MUSTER_AGENT', 'MUSTER_PROJECT'] as const
const CLAUDE_EVENTS = ['SessionStart', 'PreToolUse', 'PermissionRequest', 'PostToolUse', 'UserPromptSubmit', 'Notification', 'Stop', 'SessionEnd'] as const
// Codex has SessionEnd since 0.145: `codex exec` ending releases the session's files at once.
const CODEX_EVENTS = ['SessionStart', 'PreToolUse', 'PermissionRequest', 'PostToolUse', 'UserPromptSubmit', 'Stop', 'SessionEnd'] as const
/** Codex caps a SessionEnd hook at 3 s (and hashes its trust with the capped value). */
const CODEX_SESSION_END_TIMEOUT = 3
/**
 * A PermissionRequest's answer waits for a person in Muster (docs/api/approvals.md): this
 * long, sent as X-Muster-Approval-Wait, and the hook's own timeout is longer, so the agent
 * hears "expired" ({}: it asks at its terminal) rather than cutting the request off.
 */
export const APPROVAL_WAIT = '5m'
const APPROVAL_HOOK_TIMEOUT_S = 5 * 60 + 30
// The shell tools too: a command's writes are read from its text (lib/shell). Codex sends
// every shell tool to hooks as `Bash`.
const EDIT_TOOLS: Record<InitAgent, string> = { 'claude-code': 'Write|Edit|NotebookEdit|Bash', codex: 'apply_patch|Write|Edit|Bash' }
const BEGIN = '<!-- muster:begin -->'
const END = '<!-- muster:end -->'

type Json = Record<string, any>
type Hook = Json
type Group = { matcher?: string; hooks: Hook[] }

/** One of our own hook entries, whichever server or options it was written with. */
export const isOurs = (h: Hook) =>
  (h?.type === 'http' && typeof h.url === 'string' && /\/api\/hooks\/(claude-code|codex)$/.test(h.url)) ||
  (h?.type === 'command' && typeof h.command === 'string' && /^muster hook (claude-code|codex)\b/.test(h.command))

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

/**
 * Why `init claude-code` must not go on, or null: Claude Code's http hooks can send only
 * `$SERVICE_TOKEN`. A token the CLI found elsewhere (`from`: MUSTER_TOKEN, a settings.json)
 * would reach them as an empty bearer, a 401 that Claude Code treats as non-blocking, and
 * no edit would ever be denied, without a word.
 */
export function hookTokenProblem(from: string | null, env: Record<string, string | undefined> = process.env): string | null {
  if (!from || env.SERVICE_TOKEN) return null
  return `the server token comes from ${from}, but Claude Code's http hooks can read it only from $SERVICE_TOKEN (without it every hook call is refused and no edit is ever denied): set SERVICE_TOKEN to the same token where you start claude, then run init again`
}

/** `settings.hooks` with our entries replaced (other groups and hooks kept where they are). */
export function mergeHooks(settings: Json, o: InitOptions): Json {
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
  const events = o.agent === 'codex' ? CODEX_EVENTS : CLAUDE_EVENTS
  for (const event of events) {
    const hook = ourHook(o, event)
    const group: Group = event === 'PreToolUse' ? { matcher: EDIT_TOOLS[o.agent as InitAgent], hooks: [hook] } : { hooks: [hook] }
    hooks[event] = [...(Array.isArray(hooks[event]) ? hooks[event] : []), group]
  }
  for (const [event, groups] of Object.entries(hooks)) if (Array.isArray(groups) && groups.length === 0) delete hooks[event]
  return { ...settings, hooks }
}

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

/** `text` with the [mcp_servers.muster] table set to ours (replaced where it is, else appended). */
export function mergeCodexConfig(text: string, server: string): string {
  return mergeTomlTable(text, '[mcp_servers.muster]', `url = "${server}/mcp"\nbearer_token_env_var = "SERVICE_TOKEN"\n`)
}

/**
 * Claude Code's telemetry towards the server (oversight.md "Agent telemetry"): OTLP/HTTP
 * JSON logs and metrics, and the headers from a helper command Claude Code runs (`muster
 * otel-headers` prints the token the CLI is configured with), so no token is written
 * anywhere. Claude Code takes these from the user's settings only (a repository may not
 * send its telemetry elsewhere), so they go in ~/.claude/settings.json, not the project's.
 */
export function mergeTelemetry(settings: Json, o: InitOptions): Json {
  const env = {
    ...(settings.env ?? {}),
    CLAUDE_CODE_ENABLE_TELEMETRY: '1',
    OTEL_LOGS_EXPORTER: 'otlp',
    OTEL_METRICS_EXPORTER: 'otlp',
    OTEL_EXPORTER_OTLP_PROTOCOL: 'http/json',
    OTEL_EXPORTER_OTLP_ENDPOINT: o.server,
  }
  return { ...settings, env, otelHeadersHelper: 'muster otel-headers' }
}

const tomlString = (s: string) => JSON.stringify(s)

/**
 * Codex's [otel] table: its log events and metrics as OTLP/HTTP JSON to the server. Codex
 * reads it only from the user's own config ($CODEX_HOME/config.toml), never a project's,
 * so the token it must send is written there and nowhere in the repository.
 */
export function codexOtelTable(server: string, token: string | null | undefined): string {
  const headers = token ? `, headers = { Authorization = ${tomlString(`Bearer ${token}`)} }` : ''
  const exporter = (signal: string) => `{ otlp-http = { endpoint = ${tomlString(`${server}/v1/${signal}`)}, protocol = "json"${headers} } }`
  return `log_user_prompt = false\nexporter = ${exporter('logs')}\nmetrics_exporter = ${exporter('metrics')}\n`
}

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

/**
 * Codex's default `workspace-write` sandbox has no network, so `muster` in the model's shell
 * cannot reach the server (EPERM): this is the setting that opens it, for this project.
 */
export const CODEX_NETWORK_SETTING = '[sandbox_workspace_write] network_access = true'
export const allowSandboxNetwork = (text: string) => setTomlValue(text, '[sandbox_workspace_write]', 'network_access', 'true')

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

const readText = (path: string) => (existsSync(path) ? readFileSync(path, 'utf8') : '')
/** A file of the user's own agent config: an absolute path, outside the repository. */
const userFile = (dir: string, name: string) => resolve(dir, name)

/** What `init` would write, each file merged with what is there now. */
export function planInit(o: InitOptions): PlannedFile[] {
  if (o.reserve !== undefined && !/^\d+(\.\d+)?(ms|s|m|h)$/.test(o.reserve)) throw new UsageError(`invalid --reserve "${o.reserve}": expected a duration like 30m`)
  const files: { path: string; content: (current: string) => string }[] =
    o.agent === 'copilot-cli'
      ? copilotFiles(o)
      : o.agent === 'cursor'
        ? cursorFiles(o)
        : o.agent === 'claude-code'
      ? [
          { path: '.claude/settings.json', content: () => jsonText(mergeHooks(readJson(join(o.root, '.claude/settings.json')), o)) },
          {
            path: '.mcp.json',
            content: () => {
              const mcp = readJson(join(o.root, '.mcp.json'))
              const muster = { type: 'http', url: `${o.server}/mcp`, headers: { Authorization: 'Bearer ${SERVICE_TOKEN:-}' } }
              return jsonText({ ...mcp, mcpServers: { ...(mcp.mcpServers ?? {}), muster } })
            },
          },
          { path: 'CLAUDE.md', content: (t) => mergeGuide(t, guideSection(o)) },
          { path: userFile(o.claudeHome ?? join(homedir(), '.claude'), 'settings.json'), content: (t) => jsonText(mergeTelemetry(t.trim() ? readJson(userFile(o.claudeHome ?? join(homedir(), '.claude'), 'settings.json')) : {}, o)) },
        ]
      : [
          { path: '.codex/hooks.json', content: () => jsonText(mergeHooks(readJson(join(o.root, '.codex/hooks.json')), o)) },
          { path: '.codex/config.toml', content: (t) => (o.allowNetwork ? allowSandboxNetwork(mergeCodexConfig(t, o.server)) : mergeCodexConfig(t, o.server)) },
          { path: 'AGENTS.md', content: (t) => mergeGuide(t, guideSection(o)) },
          { path: userFile(o.codexHome ?? join(homedir(), '.codex'), 'config.toml'), content: (t) => mergeTomlTable(t, '[otel]', codexOtelTable(o.server, o.token)) },
        ]
  return files.map(({ path, content }) => {
    const full = isAbsolute(path) ? path : join(o.root, path)
    const current = readText(full)
    const next = content(current)
    return { path, action: !existsSync(full) ? 'create' : next === current ? 'unchanged' : 'update', content: next }
  })
}

/** Writes the planned files that change. */
export function writeInit(root: string, files: PlannedFile[]): void {
  for (const f of files) {
    if (f.action === 'unchanged') continue
    const full = isAbsolute(f.path) ? f.path : join(root, f.path)
    mkdirSync(dirname(full), { recursive: true })
    // The user's own Codex config may hold the token: readable by its owner only.
    writeFileSync(full, f.content)
    if (isAbsolute(f.path)) chmodSync(full, 0o600)
  }
}

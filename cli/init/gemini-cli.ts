// `muster init gemini-cli`: command hooks running `muster hook gemini-cli` and the MCP
// server in .gemini/settings.json, a GEMINI.md section (the file Gemini CLI loads as the
// project's context), and with --trust the repository in Gemini CLI's own trusted folders
// (~/.gemini/trustedFolders.json): in a folder it does not trust, Gemini CLI runs no project
// hook and its headless mode does not start.
import { homedir } from 'node:os'
import { dirname, join, sep } from 'node:path'
import { withOurHooks, type Group } from './claude-hooks'
import { guideSection, jsonText, mergeGuide, readJson, type FileSpec, type InitOptions, type Json } from './files'

/** The events Muster uses (docs/agents/gemini-cli.md); BeforeTool only for the tools that write. */
const EVENTS = ['SessionStart', 'BeforeAgent', 'BeforeTool', 'AfterTool', 'AfterAgent', 'Notification', 'SessionEnd'] as const
/** Gemini CLI matches a tool hook's matcher as a regular expression on the tool's name. */
const WRITE_TOOLS = '^(write_file|replace|run_shell_command)$'
/** Gemini CLI's hook timeouts are in milliseconds (its default is a minute). */
const TIMEOUT_MS = 10_000

function ourGroups(o: InitOptions): [string, Group][] {
  const reserve = o.reserve ? ` --reserve ${o.reserve}` : ''
  const hook = { type: 'command', name: 'muster', command: `muster hook gemini-cli --server ${o.server}${reserve}`, timeout: TIMEOUT_MS }
  return EVENTS.map((event) => [event, event === 'BeforeTool' ? { matcher: WRITE_TOOLS, hooks: [hook] } : { hooks: [hook] }])
}

/**
 * The project's settings with our hooks and MCP server. Gemini CLI fills `$VAR` in its
 * settings from the environment, so the header names SERVICE_TOKEN and holds no secret.
 */
export function mergeGeminiSettings(settings: Json, o: InitOptions): Json {
  const merged = withOurHooks(settings, ourGroups(o))
  const muster = { httpUrl: `${o.server}/mcp`, headers: { Authorization: 'Bearer $SERVICE_TOKEN' } }
  return { ...merged, mcpServers: { ...(settings.mcpServers ?? {}), muster } }
}

/** Where Gemini CLI keeps the folders its user trusts (its own GEMINI_CLI_TRUSTED_FOLDERS_PATH and GEMINI_CLI_HOME say otherwise). */
export function geminiTrustFile(env: Record<string, string | undefined> = process.env): string {
  if (env.GEMINI_CLI_TRUSTED_FOLDERS_PATH) return env.GEMINI_CLI_TRUSTED_FOLDERS_PATH
  return join(env.GEMINI_CLI_HOME || homedir(), '.gemini', 'trustedFolders.json')
}

export function geminiCliFiles(o: InitOptions): FileSpec[] {
  const files: FileSpec[] = [
    { path: '.gemini/settings.json', content: () => jsonText(mergeGeminiSettings(readJson(join(o.root, '.gemini/settings.json')), o)) },
    { path: 'GEMINI.md', content: (t) => mergeGuide(t, guideSection(o)) },
  ]
  if (o.trust) {
    const file = geminiTrustFile()
    files.push({ path: file, content: () => jsonText({ ...readJson(file), [o.root]: 'TRUST_FOLDER' }) })
  }
  return files
}

/**
 * Whether Gemini CLI trusts `root` already, read as it reads its trust: its environment
 * switch, else the longest rule of its trusted folders that holds `root` (TRUST_PARENT
 * stands for the rule's parent directory; DO_NOT_TRUST says no).
 */
export function geminiTrusts(root: string, env: Record<string, string | undefined> = process.env): boolean {
  if (env.GEMINI_CLI_TRUST_WORKSPACE === 'true') return true
  if (env.GEMINI_CLI_TRUST_WORKSPACE === 'false') return false
  let rules: Json
  try {
    rules = readJson(geminiTrustFile(env))
  } catch {
    return false
  }
  let best: { length: number; level: unknown } | null = null
  for (const [rule, level] of Object.entries(rules)) {
    const dir = level === 'TRUST_PARENT' ? dirname(rule) : rule
    const holds = root === dir || root.startsWith(dir.endsWith(sep) ? dir : dir + sep)
    if (holds && (!best || rule.length > best.length)) best = { length: rule.length, level }
  }
  return best?.level === 'TRUST_FOLDER' || best?.level === 'TRUST_PARENT'
}

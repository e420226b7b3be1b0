// `muster init claude-code`: http hooks in .claude/settings.json (the server token from the
// environment through allowedEnvVars; SessionStart and SessionEnd as command hooks), the MCP
// server in .mcp.json, a CLAUDE.md section, and Claude Code's telemetry towards the server
// in the user's own settings (the only place it reads them from).
import { homedir } from 'node:os'
import { join } from 'node:path'
import { mergeHooks } from './claude-hooks'
import { guideSection, jsonText, mergeGuide, readJson, userFile, type FileSpec, type InitOptions, type Json } from './files'

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

export function claudeCodeFiles(o: InitOptions): FileSpec[] {
  const userSettings = userFile(o.claudeHome ?? join(homedir(), '.claude'), 'settings.json')
  return [
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
    { path: userSettings, content: (t) => jsonText(mergeTelemetry(t.trim() ? readJson(userSettings) : {}, o)) },
  ]
}

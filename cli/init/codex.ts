// `muster init codex`: command hooks running `muster hook codex` in .codex/hooks.json, the
// MCP server in .codex/config.toml (with --allow-network, the sandbox setting that lets the
// model's shell reach the server), an AGENTS.md section, and Codex's telemetry towards the
// server in the user's own $CODEX_HOME/config.toml (the only place Codex reads it from).
import { homedir } from 'node:os'
import { join } from 'node:path'
import { setTomlValue } from '../codex-trust'
import { mergeHooks } from './claude-hooks'
import { guideSection, jsonText, mergeGuide, mergeTomlTable, readJson, userFile, type FileSpec, type InitOptions } from './files'

/** `text` with the [mcp_servers.muster] table set to ours (replaced where it is, else appended). */
export function mergeCodexConfig(text: string, server: string): string {
  return mergeTomlTable(text, '[mcp_servers.muster]', `url = "${server}/mcp"\nbearer_token_env_var = "SERVICE_TOKEN"\n`)
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

/**
 * Codex's default `workspace-write` sandbox has no network, so `muster` in the model's shell
 * cannot reach the server (EPERM): this is the setting that opens it, for this project.
 */
export const CODEX_NETWORK_SETTING = '[sandbox_workspace_write] network_access = true'
export const allowSandboxNetwork = (text: string) => setTomlValue(text, '[sandbox_workspace_write]', 'network_access', 'true')

export function codexFiles(o: InitOptions): FileSpec[] {
  return [
    { path: '.codex/hooks.json', content: () => jsonText(mergeHooks(readJson(join(o.root, '.codex/hooks.json')), o)) },
    { path: '.codex/config.toml', content: (t) => (o.allowNetwork ? allowSandboxNetwork(mergeCodexConfig(t, o.server)) : mergeCodexConfig(t, o.server)) },
    { path: 'AGENTS.md', content: (t) => mergeGuide(t, guideSection(o)) },
    { path: userFile(o.codexHome ?? join(homedir(), '.codex'), 'config.toml'), content: (t) => mergeTomlTable(t, '[otel]', codexOtelTable(o.server, o.token)) },
  ]
}

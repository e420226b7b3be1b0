// `muster init opencode`: OpenCode runs no hook commands, only plugins, so init writes one
// (.opencode/plugin/muster.ts, from cli/init/opencode-plugin.ts) that sends each OpenCode
// event through `muster hook opencode`; the MCP server in opencode.json (the token from
// the environment, `{env:SERVICE_TOKEN}`, never written); and the AGENTS.md section
// OpenCode reads, shared with Codex's (one section, replaced in place).
import { join } from 'node:path'
import { guideSection, jsonText, mergeGuide, readJson, type FileSpec, type InitOptions, type Json } from './files'
import { OPENCODE_PLUGIN_SOURCE } from './opencode-plugin-source'

export const OPENCODE_PLUGIN = '.opencode/plugin/muster.ts'

/** The plugin as written into a repository: the server and edit-reserve mode of this init, nothing secret. */
export function opencodePlugin(o: Pick<InitOptions, 'server' | 'reserve'>): string {
  const header = '// Written by `muster init opencode`: run it again rather than editing this file (it puts this text back).\n'
  return (
    header +
    OPENCODE_PLUGIN_SOURCE.replace("'__MUSTER_SERVER__'", () => JSON.stringify(o.server)).replace("'__MUSTER_RESERVE__'", () => JSON.stringify(o.reserve ?? ''))
  )
}

/** opencode.json with our MCP server set (other servers and settings kept). */
export function mergeOpencodeConfig(config: Json, server: string): Json {
  const muster = { type: 'remote', url: `${server}/mcp`, headers: { Authorization: 'Bearer {env:SERVICE_TOKEN}' }, oauth: false }
  return { $schema: 'https://opencode.ai/config.json', ...config, mcp: { ...(config.mcp ?? {}), muster } }
}

export function opencodeFiles(o: InitOptions): FileSpec[] {
  return [
    { path: OPENCODE_PLUGIN, content: () => opencodePlugin(o) },
    { path: 'opencode.json', content: () => jsonText(mergeOpencodeConfig(readJson(join(o.root, 'opencode.json')), o.server)) },
    { path: 'AGENTS.md', content: (t) => mergeGuide(t, guideSection(o)) },
  ]
}

// `muster init <agent>`: wires an agent of the current repository to Muster. Each agent's
// file (cli/init/<agent>.ts) says what it writes; each file is merged into what is there
// (other hooks and settings kept), and a second run writes nothing.
import { chmodSync, existsSync, mkdirSync, statSync, writeFileSync } from 'node:fs'
import { dirname, isAbsolute, join } from 'node:path'
import { UsageError } from '../output'
import { claudeCodeFiles } from './claude-code'
import { clineFiles } from './cline'
import { codexFiles } from './codex'
import { copilotFiles } from './copilot-cli'
import { cursorFiles } from './cursor'
import { geminiCliFiles } from './gemini-cli'
import { opencodeFiles } from './opencode'
import { readText, type FileSpec, type InitAgent, type InitOptions, type PlannedFile } from './files'

export { APPROVAL_WAIT, type InitAgent, type InitOptions, type PlannedFile } from './files'
export { HOOK_ENV, isOurs, mergeHooks } from './claude-hooks'
export { hookTokenProblem, mergeTelemetry } from './claude-code'
export { allowSandboxNetwork, CODEX_NETWORK_SETTING, codexOtelTable, mergeCodexConfig } from './codex'

/** The files each agent's init writes. */
export const INIT_AGENTS: Record<InitAgent, (o: InitOptions) => FileSpec[]> = {
  'claude-code': claudeCodeFiles,
  codex: codexFiles,
  'copilot-cli': copilotFiles,
  cursor: cursorFiles,
  'gemini-cli': geminiCliFiles,
  opencode: opencodeFiles,
  cline: clineFiles,
}

/** What `init` would write, each file merged with what is there now. */
export function planInit(o: InitOptions): PlannedFile[] {
  if (o.reserve !== undefined && !/^\d+(\.\d+)?(ms|s|m|h)$/.test(o.reserve)) throw new UsageError(`invalid --reserve "${o.reserve}": expected a duration like 30m`)
  return INIT_AGENTS[o.agent](o).map(({ path, content, mode }) => {
    const full = isAbsolute(path) ? path : join(o.root, path)
    const current = readText(full)
    const next = content(current)
    const same = next === current && (mode === undefined || (existsSync(full) && (statSync(full).mode & 0o777) === mode))
    return { path, action: !existsSync(full) ? 'create' : same ? 'unchanged' : 'update', content: next, ...(mode === undefined ? {} : { mode }) }
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
    if (f.mode !== undefined) chmodSync(full, f.mode)
    else if (isAbsolute(f.path)) chmodSync(full, 0o600)
  }
}

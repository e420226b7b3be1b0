// `muster init copilot-cli`: GitHub Copilot CLI runs the command hooks of every
// .github/hooks/*.json of the repository (once the folder is trusted), each hook its own
// {type: "command", bash, powershell, timeoutSec}. Its own events carry no event name, so
// each hook names its event on the command line (`muster hook copilot-cli preToolUse`).
// The file is ours (.github/hooks/muster.json): our hooks are replaced in it, anything else
// in it kept; the coordination section goes in .github/copilot-instructions.md. No token is
// written: `muster hook` reads it from the environment (SERVICE_TOKEN / MUSTER_TOKEN).
import { join } from 'node:path'
import { guideSection, jsonText, mergeGuide, mergeHookLists, readJson, type FileSpec, type InitOptions, type Json } from './files'

export const COPILOT_HOOKS_FILE = '.github/hooks/muster.json'

/**
 * The events Muster uses: sessionStart (register, brief), preToolUse (deny a write of a held
 * file), postToolUse and userPromptSubmitted (new messages as additionalContext), agentStop
 * (new messages keep the agent going), sessionEnd (deregister).
 */
export const COPILOT_EVENTS = ['sessionStart', 'userPromptSubmitted', 'preToolUse', 'postToolUse', 'agentStop', 'sessionEnd'] as const

/** One of our hook entries, whichever server or options it was written with. */
export const isOurCopilotHook = (h: Json) =>
  h?.type === 'command' && [h.bash, h.powershell].some((c) => typeof c === 'string' && /^muster hook copilot-cli\b/.test(c))

function ourHook(o: InitOptions, event: string): Json {
  const reserve = o.reserve ? ` --reserve ${o.reserve}` : ''
  const command = `muster hook copilot-cli ${event} --server ${o.server}${reserve}`
  return { type: 'command', bash: command, powershell: command, timeoutSec: 10 }
}

/** `config` with our hooks in place of any earlier ones of ours (other hooks and keys kept). */
export const mergeCopilotHooks = (config: Json, o: InitOptions): Json =>
  mergeHookLists(config, isOurCopilotHook, Object.fromEntries(COPILOT_EVENTS.map((e) => [e, ourHook(o, e)])))

/** The files of `init copilot-cli`: path (relative to the root) and the new content from the current one. */
export function copilotFiles(o: InitOptions): FileSpec[] {
  return [
    { path: COPILOT_HOOKS_FILE, content: () => jsonText(mergeCopilotHooks(readJson(join(o.root, COPILOT_HOOKS_FILE)), o)) },
    { path: '.github/copilot-instructions.md', content: (t) => mergeGuide(t, guideSection(o)) },
  ]
}

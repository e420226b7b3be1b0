// Codex (`muster hook codex` command hooks in .codex/hooks.json): Claude Code's protocol,
// with Codex's tool names (apply_patch, its shell tools) and no quiet Stop answer.
import type { HookAdapter } from '../types'
import { answerClaudeShape, parseClaudeShape } from './claude-shape'
import { STOP_NOTE } from './fields'

/**
 * Codex has no additionalContext on Stop: a block's reason is the only way to its model, and
 * Codex hands it over as a new user-role prompt (in a hook_prompt wrapper), with the note
 * that says whose it is.
 */
export const CODEX_STOP_NOTE = STOP_NOTE

export const codex: HookAdapter = {
  agent: 'codex',
  parse: parseClaudeShape,
  answer: (event, out) => answerClaudeShape(event, out, (text) => ({ decision: 'block', reason: `${CODEX_STOP_NOTE}\n${text}` })),
}

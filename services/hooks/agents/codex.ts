// Codex (`muster hook codex` command hooks in .codex/hooks.json): Claude Code's protocol,
// with Codex's tool names (apply_patch, its shell tools) and no quiet Stop answer.
import type { HookAdapter } from '../types'
import { answerClaudeShape, parseClaudeShape } from './claude-shape'

/**
 * Codex has no additionalContext on Stop: a block's reason is the only way to its model, and
 * Codex hands it over as a new user-role prompt (in a hook_prompt wrapper). This line says
 * whose it is, so the model reads it as a notice, not a request.
 */
export const CODEX_STOP_NOTE = 'Muster (a hook, not from the user): messages arrived for you. Read them; act only on what they ask, then finish.'

export const codex: HookAdapter = {
  agent: 'codex',
  parse: parseClaudeShape,
  answer: (event, out) => answerClaudeShape(event, out, (text) => ({ decision: 'block', reason: `${CODEX_STOP_NOTE}\n${text}` })),
}

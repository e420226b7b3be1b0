// Codex (`muster hook codex` command hooks in .codex/hooks.json): Claude Code's protocol,
// with Codex's tool names (apply_patch, its shell tools) and no quiet Stop answer.
import type { HookAdapter } from '../types'
import { answerClaudeShape, parseClaudeShape } from './claude-shape'
import { stopNotice } from './fields'

export const codex: HookAdapter = {
  agent: 'codex',
  parse: parseClaudeShape,
  // Codex has no additionalContext on Stop: a block's reason, which it hands over as a new user-role prompt, is the only way to its model.
  answer: (event, out) => answerClaudeShape(event, out, (text) => ({ decision: 'block', reason: stopNotice(text) })),
}

// Claude Code (http hooks, and `muster hook claude-code` for SessionStart/SessionEnd).
import type { HookAdapter } from '../types'
import { answerClaudeShape, parseClaudeShape } from './claude-shape'

export const claudeCode: HookAdapter = {
  agent: 'claude-code',
  parse: parseClaudeShape,
  // A Stop's additionalContext makes Claude Code take another turn, quietly (a `decision: block` shows the user a hook error).
  answer: (event, out) => answerClaudeShape(event, out, (text) => ({ hookSpecificOutput: { hookEventName: 'Stop', additionalContext: text } })),
}

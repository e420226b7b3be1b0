// Every agent POST /api/hooks/{agent} serves: one adapter each (services/hooks/types.ts).
import type { HookAdapter } from '../types'
import { claudeCode } from './claude-code'
import { cline } from './cline'
import { codex } from './codex'
import { copilotCli } from './copilot-cli'
import { cursor, isCursorEvent } from './cursor'
import { geminiCli } from './gemini-cli'
import { opencode } from './opencode'

export const ADAPTERS: ReadonlyMap<string, HookAdapter> = new Map([claudeCode, codex, copilotCli, cursor, geminiCli, opencode, cline].map((a) => [a.agent, a]))

/**
 * The adapter that reads `body`: the path's, except for a Cursor payload posted by the Claude
 * Code (or Codex) hooks Cursor also runs (its third-party hooks): that is the Cursor
 * conversation's event, read and answered as Cursor's, so the conversation stays one session.
 */
export function adapterFor(adapter: HookAdapter, body: Record<string, unknown>): HookAdapter {
  return adapter !== cursor && adapter !== copilotCli && isCursorEvent(body) ? cursor : adapter
}

export const HOOK_AGENTS: readonly string[] = [...ADAPTERS.keys()]

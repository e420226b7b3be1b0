// Every agent POST /api/hooks/{agent} serves: one adapter each (services/hooks/types.ts).
import type { HookAdapter } from '../types'
import { claudeCode } from './claude-code'
import { cline } from './cline'
import { codex } from './codex'

export const ADAPTERS: ReadonlyMap<string, HookAdapter> = new Map([claudeCode, codex, cline].map((a) => [a.agent, a]))

export const HOOK_AGENTS: readonly string[] = [...ADAPTERS.keys()]

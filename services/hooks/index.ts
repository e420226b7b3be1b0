// POST /api/hooks/{agent}: the agent's adapter reads its event, the core answers it, and the
// adapter says the answer in the JSON the agent acts on.
import type { Ctx } from '../context'
import type { HookAgent } from '../../store/sessions'
import { handleCore, type HookIdentity } from './core'
import type { HookHeaders } from './session'
import type { HookAdapter, HookAnswer } from './types'
import { adapterFor } from './agents'

export { ADAPTERS, HOOK_AGENTS } from './agents'
export { hookHeaders, type HookHeaders } from './session'
export type { HookIdentity } from './core'

export interface HookResult {
  answer: HookAnswer
  identity?: HookIdentity
}

export async function handleHook(ctx: Ctx, pathAdapter: HookAdapter, body: Record<string, unknown>, headers: HookHeaders): Promise<HookResult> {
  const adapter = adapterFor(pathAdapter, body)
  const event = adapter.parse(body)
  const { answer, identity } = await handleCore(ctx, adapter.agent as HookAgent, event, headers)
  return { answer: adapter.answer(event, answer), identity }
}

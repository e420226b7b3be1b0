// LLM usage: one record per call, committed with its audit entry.
import type { Ctx } from './context'
import type { LlmUsageInput } from '../store/llm'
import { recordAudit, type AuditScope } from './audit'

export function recordLlmUsage(ctx: Ctx, scope: AuditScope | undefined, u: LlmUsageInput): Promise<number> {
  return ctx.store.write(async (tx) => {
    const id = await tx.llm.record(u)
    await recordAudit(tx, scope, `${u.provider}/${u.model}: ${u.tokens_in ?? 0} in, ${u.tokens_out ?? 0} out, $${u.cost_usd ?? 0}`)
    return id
  })
}

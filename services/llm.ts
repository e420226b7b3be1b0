// LLM usage: one record per call, committed with its audit entry and charged to the
// budgets whose scope it falls in (services/budgets.ts), however it came (REST, OTLP).
import type { Ctx } from './context'
import type { Tx } from '../store'
import type { LlmUsageInput } from '../store/llm'
import type { BudgetRow } from '../store/budgets'
import { recordAudit, type AuditScope } from './audit'
import { chargeBudgets } from './budgets'

/**
 * Records `u` in `tx` and charges it; null when it was recorded before (same OTLP key).
 * `agent` is the name of its instance when the caller knows it (a hook session); `budgets`
 * the unit's budget rows when a batch records many (read once, see chargeBudgets).
 */
export async function recordIn(tx: Tx, u: LlmUsageInput, agent?: string | null, budgets?: BudgetRow[]): Promise<number | null> {
  const id = await tx.llm.record(u)
  if (id === null) return null
  const name = agent !== undefined ? agent : u.instance_id ? ((await tx.instances.get(u.instance_id))?.name ?? null) : null
  await chargeBudgets(tx, { cost_usd: u.cost_usd ?? 0, agent: name, project: u.project ?? '', task_id: u.task_id ?? null, at: u.created_at }, budgets)
  return id
}

export function recordLlmUsage(ctx: Ctx, scope: AuditScope | undefined, u: LlmUsageInput): Promise<number> {
  return ctx.store.write(async (tx) => {
    const id = (await recordIn(tx, u))!
    await recordAudit(tx, scope, `${u.provider}/${u.model}: ${u.tokens_in ?? 0} in, ${u.tokens_out ?? 0} out, $${u.cost_usd ?? 0}`)
    return id
  })
}

// OTLP/HTTP in (oversight.md "Agent telemetry"): each model request an agent's telemetry
// reports becomes an LLM usage record, attributed through the hook session of its session id
// to an instance, a project and the task that instance holds; delta counters add to the
// instance's agent metrics. A batch commits in one unit, with its audit entry.
import type { Ctx } from './context'
import type { LlmPrices } from '../lib/config'
import type { SessionView } from '../store/sessions'
import type { LlmUsageInput } from '../store/llm'
import { counterPoints, requestEvents, type RequestEvent } from './otlp/usage'
import { hourBucket } from './metrics'
import { recordIn } from './llm'
import { recordAudit, type AuditScope } from './audit'

/** Cost of a request the agent did not cost: the price table's, or 0 and unpriced. */
export function priced(prices: LlmPrices, e: Pick<RequestEvent, 'model' | 'tokens_in' | 'tokens_out' | 'cost_usd'>): { cost_usd: number; unpriced: boolean } {
  if (e.cost_usd !== null) return { cost_usd: e.cost_usd, unpriced: false }
  const p = Object.hasOwn(prices, e.model) ? prices[e.model] : undefined
  if (!p) return { cost_usd: 0, unpriced: true }
  return { cost_usd: Math.round(((e.tokens_in * p.in_usd_per_mtok + e.tokens_out * p.out_usd_per_mtok) / 1e6) * 1e9) / 1e9, unpriced: false }
}

interface Attribution {
  session: SessionView | null
  task_id: number | null
}

/** Who each session id is: its hook session, and the one task its instance holds (if exactly one). */
async function attribute(ctx: Ctx, sessions: Iterable<string>): Promise<Map<string, Attribution>> {
  const out = new Map<string, Attribution>()
  for (const id of sessions) {
    const session = await ctx.store.sessions.get(id)
    const claimed = session ? await ctx.store.queue.claimedBy(session.instance_id) : []
    out.set(id, { session, task_id: claimed.length === 1 ? claimed[0]!.id : null })
  }
  return out
}

export async function ingestLogs(ctx: Ctx, audit: AuditScope | undefined, body: Record<string, unknown>): Promise<{ rejected: number; recorded: number; duplicates: number }> {
  const { events, rejected } = requestEvents(body)
  if (!events.length) return { rejected, recorded: 0, duplicates: 0 }
  const who = await attribute(ctx, new Set(events.map((e) => e.session)))
  return ctx.store.write(async (tx) => {
    let recorded = 0
    const budgets = await tx.budgets.list()
    for (const e of events) {
      const { session, task_id } = who.get(e.session)!
      const u: LlmUsageInput = {
        provider: e.provider,
        model: e.model,
        tokens_in: e.tokens_in,
        tokens_out: e.tokens_out,
        ...priced(ctx.config.llmPrices, e),
        session_tag: e.session,
        instance_id: session?.instance_id ?? '',
        project: session?.project ?? '',
        task_id,
        otlp_key: e.key,
        created_at: e.created_at,
      }
      if ((await recordIn(tx, u, session ? session.name : null, budgets)) !== null) recorded++
    }
    await recordAudit(tx, audit, `${recorded} usage records, ${events.length - recorded} already recorded, ${rejected} rejected`)
    return { rejected, recorded, duplicates: events.length - recorded }
  })
}

export async function ingestMetrics(ctx: Ctx, audit: AuditScope | undefined, body: Record<string, unknown>): Promise<{ added: number }> {
  const { points } = counterPoints(body)
  if (!points.length) return { added: 0 }
  const period = hourBucket()
  const sessions = new Map<string, string | null>()
  for (const p of points) if (!sessions.has(p.session)) sessions.set(p.session, (await ctx.store.sessions.get(p.session))?.instance_id ?? null)
  // One row per counter: points of one counter (per token type, say) add up here.
  const merged = new Map<string, { instance_id: string; metric_name: string; metric_value: number; period: string }>()
  for (const p of points) {
    const instance_id = sessions.get(p.session)
    if (!instance_id) continue
    const k = `${instance_id}\u0000${p.name}`
    const row = merged.get(k)
    if (row) row.metric_value += p.value
    else merged.set(k, { instance_id, metric_name: p.name, metric_value: p.value, period })
  }
  const rows = [...merged.values()]
  if (!rows.length) return { added: 0 }
  return ctx.store.write(async (tx) => {
    await tx.metrics.add(rows)
    await recordAudit(tx, audit, `${rows.length} counters`)
    return { added: rows.length }
  })
}

// Budgets (oversight.md "Budgets"): a limit on what LLM usage in a scope may cost per
// window. Usage is charged to every budget whose scope it falls in as it is recorded, in
// the record's unit (with the 80% and 100% events, once per window); the hooks and the
// task claim read the budgets that reached their limit, never the usage itself.
import type { Ctx } from './context'
import type { Tx } from '../store'
import type { Instance } from '../store/instances'
import type { Task } from '../store/queue'
import type { BudgetRow, BudgetScope, BudgetSpec, BudgetWindow } from '../store/budgets'
import { nowIso, nowMs } from '../lib/time'
import { conflict, notFound } from '../lib/errors'
import { recordAudit, type AuditScope } from './audit'
import type { Bus } from './bus'

/** How long a replica answers hooks from the budgets it read as reached, at most (a put or delete through another replica shows after this). */
const REACHED_MAX_AGE_MS = 1000

/**
 * The budgets that reached their limit, as the hooks read them on every tool call: kept in
 * memory for at most REACHED_MAX_AGE_MS, and read again at once after a budget event (a
 * crossing, on any replica) or a put or delete through this server. Most fleets have no
 * budget over its limit, so nearly every hook call reads nothing.
 */
export class ReachedBudgets {
  private rows: Promise<BudgetRow[]> | null = null
  private readAt = 0

  constructor(bus: Bus) {
    bus.listen((event) => {
      if (event.topic.startsWith('budget.')) this.forget()
    })
  }

  forget(): void {
    this.rows = null
  }

  get(reads: { budgets: { reached(): Promise<BudgetRow[]> } }): Promise<BudgetRow[]> {
    const now = Date.now()
    if (!this.rows || now - this.readAt > REACHED_MAX_AGE_MS) {
      this.readAt = now
      // A failed read (the database away) is not kept: the next call reads again.
      const rows = reads.budgets.reached()
      this.rows = rows
      rows.catch(() => this.rows === rows && this.forget())
    }
    return this.rows
  }
}

export const BUDGET_SCOPES: readonly BudgetScope[] = ['agent', 'project', 'task', 'queue', 'all']
export const BUDGET_WINDOWS: readonly BudgetWindow[] = ['day', 'week', 'total']
const WARN_AT = 0.8
const TOTAL_START = '1970-01-01T00:00:00.000Z'

/** Where the window of `window` containing `ms` starts: UTC midnight, Monday UTC midnight, or the epoch. */
export function windowStart(window: BudgetWindow, ms = nowMs()): string {
  if (window === 'total') return TOTAL_START
  const d = new Date(ms)
  d.setUTCHours(0, 0, 0, 0)
  if (window === 'week') d.setUTCDate(d.getUTCDate() - ((d.getUTCDay() + 6) % 7))
  return d.toISOString()
}

/** A budget as the API shows it: what its current window has spent. */
export interface BudgetView extends BudgetSpec {
  spent_usd: number
  window_start: string
  created_at: string
  updated_at: string
}

const round = (usd: number) => Math.round(usd * 1e9) / 1e9

/** The spend of `b` in the current window (0 when its stored spend is of an older one). */
function current(b: BudgetRow, now = nowMs()): { start: string; spent: number } {
  const start = windowStart(b.window, now)
  return { start, spent: b.window_start === start ? b.spent_usd : 0 }
}

export function viewOf(b: BudgetRow): BudgetView {
  const { start, spent } = current(b)
  return {
    name: b.name, scope: b.scope, target: b.target, limit_usd: b.limit_usd, window: b.window, action: b.action,
    spent_usd: round(spent), window_start: start, created_at: b.created_at, updated_at: b.updated_at,
  }
}

const eventOf = (b: BudgetRow, spent: number) => ({ name: b.name, scope: b.scope, target: b.target, limit_usd: b.limit_usd, spent_usd: round(spent) })

/** Sends the 80% and 100% events `b` has not sent in window `start`; the marks to store. */
async function crossings(tx: Tx, b: BudgetRow, start: string, spent: number): Promise<{ warned: string | null; exceeded: string | null }> {
  let warned = b.warned_window === start ? start : null
  let exceeded = b.exceeded_window === start ? start : null
  if (!warned && spent >= WARN_AT * b.limit_usd) {
    await tx.emit('budget.warning', eventOf(b, spent), 'budgets')
    warned = start
  }
  if (!exceeded && spent >= b.limit_usd) {
    await tx.emit('budget.exceeded', eventOf(b, spent), 'budgets')
    exceeded = start
  }
  return { warned, exceeded }
}

/** PUT /api/budgets/{name}: true when new. Spend is summed once here, over the window's usage. */
export async function putBudget(ctx: Ctx, audit: AuditScope | undefined, spec: BudgetSpec): Promise<{ created: boolean; budget: BudgetView }> {
  const done = await ctx.store.write(async (tx) => {
    const old = await tx.budgets.get(spec.name)
    const at = nowIso()
    const start = windowStart(spec.window)
    const sameSpend = old && old.scope === spec.scope && old.target === spec.target && old.window === spec.window
    const spent = sameSpend ? current(old).spent : await tx.budgets.spentSince(spec.scope, spec.target, start)
    // Raising the limit lifts it: the events are sent again for the new limit.
    const fresh = !old || !sameSpend || spec.limit_usd !== old.limit_usd
    const row: BudgetRow = {
      ...spec,
      created_at: old?.created_at ?? at,
      updated_at: at,
      window_start: start,
      spent_usd: spent,
      warned_window: fresh ? null : old.warned_window,
      exceeded_window: fresh ? null : old.exceeded_window,
    }
    const { warned, exceeded } = await crossings(tx, row, start, spent)
    row.warned_window = warned
    row.exceeded_window = exceeded
    await tx.budgets.put(row)
    await recordAudit(tx, audit, `${spec.scope}${spec.scope === 'all' ? '' : ` ${spec.target}`}: $${spec.limit_usd} per ${spec.window}, ${spec.action}`)
    return { created: !old, budget: viewOf(row) }
  })
  ctx.reachedBudgets.forget()
  return done
}

export async function deleteBudget(ctx: Ctx, audit: AuditScope | undefined, name: string): Promise<void> {
  await ctx.store.write(async (tx) => {
    if (!(await tx.budgets.delete(name))) throw notFound(`budget ${name} not found`)
    await recordAudit(tx, audit)
  })
  ctx.reachedBudgets.forget()
}

/** What a usage record is charged by: the keys of every scope it may fall in, and its time. */
export interface Charge {
  cost_usd: number
  agent: string | null
  project: string
  task_id: number | null
  /** The record's created_at (ISO): one from before a budget's current window (a late OTLP batch) is not its spend. */
  at?: string
}

/**
 * Adds a record's cost to each budget whose scope it falls in, in the record's unit.
 * `budgets`: the unit's budget rows read once for a batch of records, kept current here.
 */
export async function chargeBudgets(tx: Tx, charge: Charge, budgets?: BudgetRow[]): Promise<void> {
  if (!(charge.cost_usd > 0)) return
  budgets ??= await tx.budgets.list()
  if (!budgets.length) return
  let queue: string | null | undefined
  const now = nowMs()
  for (const b of budgets) {
    if (b.scope === 'queue' && queue === undefined) queue = charge.task_id === null ? null : ((await tx.queue.get(charge.task_id))?.queue ?? null)
    if (!inScope(b, { agent: charge.agent, project: charge.project, tasks: charge.task_id === null ? [] : [charge.task_id], queues: queue ? [queue] : [] })) continue
    const { start, spent: before } = current(b, now)
    if (charge.at !== undefined && charge.at < start) continue
    const spent = before + charge.cost_usd
    const { warned, exceeded } = await crossings(tx, b, start, spent)
    await tx.budgets.setSpend(b.name, start, spent, warned, exceeded)
    Object.assign(b, { window_start: start, spent_usd: spent, warned_window: warned, exceeded_window: exceeded })
  }
}

/** The keys an instance (or a task) is known by, for matching budgets' scopes. */
interface Keys {
  agent: string | null
  project: string
  tasks: number[]
  queues: string[]
}

function inScope(b: Pick<BudgetRow, 'scope' | 'target'>, k: Keys): boolean {
  switch (b.scope) {
    case 'all':
      return true
    case 'agent':
      return k.agent === b.target
    case 'project':
      return k.project !== '' && k.project === b.target
    case 'task':
      return k.tasks.some((id) => String(id) === b.target)
    case 'queue':
      return k.queues.includes(b.target)
  }
}

/** The budgets that are over their limit in their current window. */
async function overNow(ctx: Ctx): Promise<BudgetRow[]> {
  const now = nowMs()
  return (await ctx.reachedBudgets.get(ctx.store)).filter((b) => current(b, now).spent >= b.limit_usd)
}

/** The over-limit budgets whose scope holds `instance` (working in `project`, with the tasks it has claimed). */
async function overFor(ctx: Ctx, instance: Pick<Instance, 'id' | 'name'>, project: string, action: 'warn' | 'deny'): Promise<BudgetRow[]> {
  const over = (await overNow(ctx)).filter((b) => b.action === action)
  if (!over.length) return []
  let tasks: Task[] = []
  if (over.some((b) => b.scope === 'task' || b.scope === 'queue')) tasks = await ctx.store.queue.claimedBy(instance.id)
  const keys = { agent: instance.name, project, tasks: tasks.map((t) => t.id), queues: tasks.map((t) => t.queue) }
  return over.filter((b) => inScope(b, keys))
}

const usd = (n: number) => `$${n >= 1 ? n.toFixed(2) : n.toFixed(4)}`
const scopeText = (b: BudgetRow) => (b.scope === 'all' ? 'all usage' : `${b.scope} ${b.target}`)
const spentText = (b: BudgetRow) => `${usd(current(b).spent)} spent of ${usd(b.limit_usd)} ${b.window === 'total' ? 'in total' : `this ${b.window}`}`

/** Why a deny budget stops a call: which budget, what was spent, who may raise it. */
export const denialOf = (b: BudgetRow) =>
  `Muster budget "${b.name}" (${scopeText(b)}) is exceeded: ${spentText(b)}. Stop and tell the user; ` +
  `a person with the admin token may raise it (muster budgets set ${b.name} --limit <usd>)` +
  (b.window === 'total' ? '.' : `, or it lifts when the next ${b.window} starts (UTC).`)

/** The deny reason of a PreToolUse of `instance`, or null when no deny budget holds it. */
export async function budgetDenial(ctx: Ctx, instance: Pick<Instance, 'id' | 'name'>, project: string): Promise<string | null> {
  const [b] = await overFor(ctx, instance, project, 'deny')
  return b ? denialOf(b) : null
}

/** The warn budgets over their limit that this session has not been told of yet in their current window. */
export async function pendingWarnings(ctx: Ctx, instance: Pick<Instance, 'id' | 'name'>, project: string, sessionId: string): Promise<BudgetRow[]> {
  const over = await overFor(ctx, instance, project, 'warn')
  const pending: BudgetRow[] = []
  for (const b of over) if (!(await ctx.store.budgets.shown(sessionId, b.name, current(b).start))) pending.push(b)
  return pending
}

/** One context line per warn budget not shown to the session yet, marked shown in `tx`. */
export async function warningLines(ctx: Ctx, tx: Tx, instance: Instance, project: string, sessionId: string): Promise<string> {
  const lines: string[] = []
  for (const b of await pendingWarnings(ctx, instance, project, sessionId)) {
    await tx.budgets.markShown(sessionId, b.name, current(b).start)
    lines.push(`Muster budget "${b.name}" (${scopeText(b)}) is over its limit: ${spentText(b)}. Keep further model calls short, and tell the user if the work needs more.`)
  }
  return lines.join('\n')
}

/**
 * A claim's check, in its unit: 409 naming the budget when a deny budget holds the
 * claimer (by its name, or a task it holds) or `task` (its id, queue or project).
 */
export async function assertClaimAllowed(tx: Tx, claimerOf: () => Promise<Instance | null>, task: Pick<Task, 'id' | 'queue'> & { project?: string | null }): Promise<void> {
  const now = nowMs()
  const over = (await tx.budgets.reached()).filter((b) => b.action === 'deny' && current(b, now).spent >= b.limit_usd)
  if (!over.length) return
  const claimer = await claimerOf()
  const held = claimer && over.some((b) => b.scope === 'task' || b.scope === 'queue') ? await tx.queue.claimedBy(claimer.id) : []
  const byClaimer = { agent: claimer?.name ?? null, project: '', tasks: held.map((t) => t.id), queues: held.map((t) => t.queue) }
  const byTask = { agent: null, project: task.project ?? '', tasks: [task.id], queues: [task.queue] }
  const b = over.find((b) => inScope(b, byClaimer) || inScope(b, byTask))
  if (b) throw conflict(`${denialOf(b)} No task is handed out under it.`, { budget: b.name })
}

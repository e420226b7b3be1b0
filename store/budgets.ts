// Budgets (oversight.md): a limit on what usage in a scope may cost per window. Each row
// keeps what its current window has spent, added to as usage is recorded (services/budgets.ts),
// so deciding a hook call reads these few rows and never sums usage records.
import { stmt, type Dialect, type Runner } from './runner'

export type BudgetScope = 'agent' | 'project' | 'task' | 'queue' | 'all'
export type BudgetWindow = 'day' | 'week' | 'total'
export type BudgetAction = 'warn' | 'deny'

export interface BudgetRow {
  name: string
  scope: BudgetScope
  target: string
  limit_usd: number
  window: BudgetWindow
  action: BudgetAction
  created_at: string
  updated_at: string
  /** The window `spent_usd` was added up in; an older one means nothing spent in the current window yet. */
  window_start: string
  spent_usd: number
  /** The window whose 80% (100%) event was sent, so each is sent once per window. */
  warned_window: string | null
  exceeded_window: string | null
}

export type BudgetSpec = Pick<BudgetRow, 'name' | 'scope' | 'target' | 'limit_usd' | 'window' | 'action'>

export interface BudgetsStore {
  list(): Promise<BudgetRow[]>
  get(name: string): Promise<BudgetRow | null>
  /** The budgets whose stored spend reached their limit (their window may since have ended). */
  reached(): Promise<BudgetRow[]>
  /** Whether `sessionId` was shown the warn line of `budget` for `windowStart`. */
  shown(sessionId: string, budget: string, windowStart: string): Promise<boolean>
}

export interface BudgetsWrites {
  list(): Promise<BudgetRow[]>
  reached(): Promise<BudgetRow[]>
  get(name: string): Promise<BudgetRow | null>
  put(row: BudgetRow): Promise<void>
  delete(name: string): Promise<boolean>
  /** The spend, events sent and window of a budget, after usage was charged to it. */
  setSpend(name: string, windowStart: string, spent: number, warned: string | null, exceeded: string | null): Promise<void>
  /** What usage in `scope`/`target` cost since `from` (a budget's one scan: when it is created or changed). */
  spentSince(scope: BudgetScope, target: string, from: string): Promise<number>
  markShown(sessionId: string, budget: string, windowStart: string): Promise<void>
}

const COLUMNS = `name, scope, target, limit_usd, time_window AS window, action, created_at, updated_at, window_start, spent_usd, warned_window, exceeded_window`
const LIST = stmt<BudgetRow>(`SELECT ${COLUMNS} FROM budgets ORDER BY name`)
const ONE = stmt<BudgetRow>(`SELECT ${COLUMNS} FROM budgets WHERE name = ?`)
const REACHED = stmt<BudgetRow>(`SELECT ${COLUMNS} FROM budgets WHERE spent_usd >= limit_usd ORDER BY name`)
const SHOWN = stmt<{ n: number }>('SELECT 1 AS n FROM budget_shown WHERE session_id = ? AND budget = ? AND window_start = ?')
const PUT = stmt(
  `INSERT INTO budgets (name, scope, target, limit_usd, time_window, action, created_at, updated_at, window_start, spent_usd, warned_window, exceeded_window)
   VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
   ON CONFLICT (name) DO UPDATE SET scope = excluded.scope, target = excluded.target, limit_usd = excluded.limit_usd,
     time_window = excluded.time_window, action = excluded.action, updated_at = excluded.updated_at, window_start = excluded.window_start,
     spent_usd = excluded.spent_usd, warned_window = excluded.warned_window, exceeded_window = excluded.exceeded_window`,
)
const DELETE = stmt('DELETE FROM budgets WHERE name = ?')
const DELETE_SHOWN = stmt('DELETE FROM budget_shown WHERE budget = ?')
const SET_SPEND = stmt('UPDATE budgets SET window_start = ?, spent_usd = ?, warned_window = ?, exceeded_window = ? WHERE name = ?')
const MARK_SHOWN = stmt('INSERT INTO budget_shown (session_id, budget, window_start) VALUES (?, ?, ?) ON CONFLICT DO NOTHING')

/** Which usage records a scope covers, as a condition on llm_usage with one parameter (none for `all`). */
const SCOPE_WHERE: Record<BudgetScope, string> = {
  // An agent's records: those of its instances, live or gone (a hook session keeps the name).
  agent: `instance_id IN (SELECT id FROM instances WHERE name = ? UNION SELECT instance_id FROM hook_sessions WHERE name = ?)`,
  project: 'project = ?',
  task: 'task_id = ?',
  queue: 'task_id IN (SELECT id FROM tasks WHERE queue = ?)',
  all: '1 = 1',
}

const num = (v: unknown) => (typeof v === 'number' ? v : Number(v))
const toRow = (r: BudgetRow): BudgetRow => ({ ...r, limit_usd: num(r.limit_usd), spent_usd: num(r.spent_usd) })

export function budgetsStore(r: Runner): BudgetsStore {
  return {
    list: async () => (await r.all(LIST)).map(toRow),
    get: async (name) => {
      const row = await r.get(ONE, name)
      return row && toRow(row)
    },
    reached: async () => (await r.all(REACHED)).map(toRow),
    shown: async (session, budget, start) => (await r.get(SHOWN, session, budget, start)) !== null,
  }
}

export function budgetsWrites(w: Runner, d: Dialect): BudgetsWrites {
  return {
    list: async () => (await w.all(LIST)).map(toRow),
    reached: async () => (await w.all(REACHED)).map(toRow),
    get: async (name) => {
      const row = await w.get(ONE, name)
      return row && toRow(row)
    },
    put: async (b) =>
      void (await w.run(PUT, b.name, b.scope, b.target, b.limit_usd, b.window, b.action, b.created_at, b.updated_at, b.window_start, b.spent_usd, b.warned_window, b.exceeded_window)),
    delete: async (name) => {
      await w.run(DELETE_SHOWN, name)
      return (await w.run(DELETE, name)) > 0
    },
    setSpend: async (name, start, spent, warned, exceeded) => void (await w.run(SET_SPEND, start, spent, warned, exceeded, name)),
    spentSince: async (scope, target, from) => {
      const args = scope === 'all' ? [] : scope === 'agent' ? [target, target] : scope === 'task' ? [Number(target)] : [target]
      const row = await w.get(stmt<{ s: number }>(`SELECT ${d.total('cost_usd')} AS s FROM llm_usage WHERE created_at >= ? AND ${SCOPE_WHERE[scope]}`), from, ...args)
      return num(row?.s ?? 0)
    },
    markShown: async (session, budget, start) => void (await w.run(MARK_SHOWN, session, budget, start)),
  }
}

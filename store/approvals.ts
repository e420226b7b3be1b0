// Approvals (oversight.md): the permission requests and "needs input" notices of agent
// sessions, one row each, decided by a person or a rule; and the rules that decide them.
// A row moves once from `pending` to allowed, denied, expired or withdrawn: every change
// is an UPDATE … WHERE status = 'pending', so two deciders on two replicas never both win.
import { int, stmt, type Runner } from './runner'

export type ApprovalStatus = 'pending' | 'allowed' | 'denied' | 'expired' | 'withdrawn'
export type ApprovalKind = 'permission' | 'input'

export interface Approval {
  id: string
  kind: ApprovalKind
  agent: string
  name: string
  instance_id: string
  session_id: string
  project: string
  tool: string
  /** The tool input; the cut JSON text when it was longer than the limit. */
  input: unknown
  input_truncated: boolean
  summary: string
  status: ApprovalStatus
  rule_id: string | null
  decided_by: string | null
  message: string | null
  created_at: string
  decided_at: string | null
  expires_at: string | null
}

export interface ApprovalRule {
  id: string
  tool: string
  match: string
  agents: string
  decision: 'allow' | 'deny'
  message: string | null
  created_at: string
}

export interface ApprovalFilter {
  status?: ApprovalStatus
  name?: string
  limit: number
}

/** A decision or an end: the new status, who, why, when. */
export interface Outcome {
  status: Exclude<ApprovalStatus, 'pending'>
  rule_id?: string | null
  decided_by?: string | null
  message?: string | null
  at: string
}

export interface ApprovalsWrites {
  get(id: string): Promise<Approval | null>
  create(a: Approval): Promise<void>
  /**
   * Ends a pending approval; null when it was not pending (someone else ended it first).
   * With `decidableFrom`, only a permission request whose wait had not ended before then: a
   * decision in one statement, its refusals read only when it changed nothing.
   */
  settle(id: string, o: Outcome, decidableFrom?: string): Promise<Approval | null>
  /** The session's pending "needs input" approvals. */
  pendingInputs(sessionId: string): Promise<string[]>
  /** Pending requests whose wait ended before `before` (their holder went away), at most `limit`. */
  overdue(before: string, limit: number): Promise<string[]>
  rules(): Promise<ApprovalRule[]>
  addRule(r: ApprovalRule): Promise<void>
  /** False when unknown. */
  deleteRule(id: string): Promise<boolean>
}

export interface ApprovalsStore {
  get(id: string): Promise<Approval | null>
  /** Newest first. */
  list(f: ApprovalFilter): Promise<Approval[]>
  /** The sessions that have a pending "needs input" approval. */
  pendingInputSessions(): Promise<string[]>
  /** Oldest first. */
  rules(): Promise<ApprovalRule[]>
}

interface Row extends Omit<Approval, 'input' | 'input_truncated'> {
  input: string
  input_truncated: number
}

const COLUMNS =
  'id, kind, agent, name, instance_id, session_id, project, tool, input, input_truncated, summary, status, rule_id, decided_by, message, created_at, decided_at, expires_at'
const RULE_COLUMNS = 'id, tool, match, agents, decision, message, created_at'

const ONE = stmt<Row>(`SELECT ${COLUMNS} FROM approvals WHERE id = ?`)
const INSERT = stmt(`INSERT INTO approvals (${COLUMNS}) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`)
const SETTLE = stmt<Row>(
  `UPDATE approvals SET status = ?, rule_id = ?, decided_by = ?, message = ?, decided_at = ? WHERE id = ? AND status = 'pending' RETURNING ${COLUMNS}`,
)
const DECIDE = stmt<Row>(
  `UPDATE approvals SET status = ?, rule_id = ?, decided_by = ?, message = ?, decided_at = ?
   WHERE id = ? AND status = 'pending' AND kind = 'permission' AND (expires_at IS NULL OR expires_at >= ?) RETURNING ${COLUMNS}`,
)
const PENDING_INPUTS = stmt<{ id: string }>(`SELECT id FROM approvals WHERE session_id = ? AND status = 'pending' AND kind = 'input'`)
const PENDING_INPUT_SESSIONS = stmt<{ session_id: string }>(`SELECT DISTINCT session_id FROM approvals WHERE status = 'pending' AND kind = 'input'`)
const OVERDUE = stmt<{ id: string }>(`SELECT id FROM approvals WHERE status = 'pending' AND expires_at IS NOT NULL AND expires_at < ? LIMIT ?`)
const RULES = stmt<ApprovalRule>(`SELECT ${RULE_COLUMNS} FROM approval_rules ORDER BY created_at, id`)
const ADD_RULE = stmt(`INSERT INTO approval_rules (${RULE_COLUMNS}) VALUES (?, ?, ?, ?, ?, ?, ?)`)
const DELETE_RULE = stmt('DELETE FROM approval_rules WHERE id = ?')

/** The list's statement for the filters given: one text per shape, prepared once. */
function listStmt(f: ApprovalFilter) {
  const where = [f.status ? 'status = ?' : '', f.name ? 'name = ?' : ''].filter(Boolean)
  return stmt<Row>(`SELECT ${COLUMNS} FROM approvals${where.length ? ` WHERE ${where.join(' AND ')}` : ''} ORDER BY created_at DESC, id DESC LIMIT ?`)
}

function fromRow(r: Row | null): Approval | null {
  if (!r) return null
  const truncated = int(r.input_truncated) === 1
  let input: unknown = r.input
  if (!truncated) {
    try {
      input = JSON.parse(r.input)
    } catch {}
  }
  return { ...r, input, input_truncated: truncated }
}

export function approvalsWrites(w: Runner): ApprovalsWrites {
  return {
    get: async (id) => fromRow(await w.get(ONE, id)),
    async create(a) {
      const input = a.input_truncated ? String(a.input) : JSON.stringify(a.input ?? null)
      await w.run(INSERT, a.id, a.kind, a.agent, a.name, a.instance_id, a.session_id, a.project, a.tool, input, a.input_truncated ? 1 : 0,
        a.summary, a.status, a.rule_id, a.decided_by, a.message, a.created_at, a.decided_at, a.expires_at)
    },
    settle: async (id, o, decidableFrom) => {
      const args = [o.status, o.rule_id ?? null, o.decided_by ?? null, o.message ?? null, o.at, id] as const
      return fromRow(decidableFrom === undefined ? await w.get(SETTLE, ...args) : await w.get(DECIDE, ...args, decidableFrom))
    },
    pendingInputs: async (sessionId) => (await w.all(PENDING_INPUTS, sessionId)).map((r) => r.id),
    overdue: async (before, limit) => (await w.all(OVERDUE, before, limit)).map((r) => r.id),
    rules: () => w.all(RULES),
    addRule: async (r) => void (await w.run(ADD_RULE, r.id, r.tool, r.match, r.agents, r.decision, r.message, r.created_at)),
    deleteRule: async (id) => (await w.run(DELETE_RULE, id)) > 0,
  }
}

export function approvalsStore(r: Runner): ApprovalsStore {
  return {
    get: async (id) => fromRow(await r.get(ONE, id)),
    async list(f) {
      const args = [f.status, f.name].filter((v): v is string => v !== undefined)
      return (await r.all(listStmt(f), ...args, f.limit)).map((row) => fromRow(row)!)
    },
    pendingInputSessions: async () => (await r.all(PENDING_INPUT_SESSIONS)).map((x) => x.session_id),
    rules: () => r.all(RULES),
  }
}

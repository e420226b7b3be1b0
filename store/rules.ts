// Validation rules: one row per (project, rule_id) with its source (local,
// learned, external) and lifecycle status (accepted, proposed, rejected).
import type { Database } from 'bun:sqlite'
import { conflict, notFound } from '../lib/errors'
import { GLOBAL_PROJECT, type Rule, type RuleDraft, type Source, type Status } from '../validation/rules'
import { now } from './db'

export interface RuleFilter {
  project?: string
  status?: Status
}

export interface RulesStore {
  /** Accepted rules of the project and of _global, each once: the project's first, then _global's, by rule_id. */
  forValidation(project: string): Promise<Rule[]>
  /** Accepted rules of the given sources, by project and rule_id. */
  export(sources: Source[]): Promise<Rule[]>
  list(filter: RuleFilter): Promise<Rule[]>
}

export interface RulesWrites {
  /** The project's accepted rules become exactly `rules` (source local); proposed and rejected ones stay unless overwritten by id. */
  replace(project: string, rules: RuleDraft[]): number
  /** Stores a proposal (learned, proposed); a rejected rule of that id is proposed anew; 409 when the project has it in any other status. */
  propose(rule: RuleDraft): Rule
  /**
   * Creates or replaces one rule. A new one is `local`/`accepted` unless `source`/`status` are given;
   * an existing one keeps its source, status, proposer, context and created_at unless given.
   */
  put(rule: RuleDraft, given: { source?: Source; status?: Status }): { rule: Rule; created: boolean }
  /** Deletes one rule, whatever its status; 404 when missing. */
  remove(project: string, ruleId: string): Rule
  /** proposed → accepted or rejected; 404 when the rule is missing or not proposed. */
  decide(project: string, ruleId: string, status: 'accepted' | 'rejected'): Rule
  /** Upserts every rule as external and accepted. */
  import(rules: RuleDraft[]): number
}

type Row = Omit<Rule, 'applies_to'> & { applies_to: string }
export type { Row as RuleRow }

export const toRule = (r: Row): Rule => ({
  project: r.project,
  rule_id: r.rule_id,
  severity: r.severity,
  match_type: r.match_type,
  pattern: r.pattern,
  message: r.message,
  applies_to: JSON.parse(r.applies_to),
  stack: r.stack,
  source: r.source,
  status: r.status,
  proposed_by: r.proposed_by,
  context: r.context,
  created_at: r.created_at,
  updated_at: r.updated_at,
})

const ORDER = 'ORDER BY project, rule_id'

export type Args = [string, string, string, string, string, string, string, string, string, string, string, string, string, string]
export const args = (r: RuleDraft, source: Source, status: Status, at: string): Args => [
  r.project, r.rule_id, r.severity, r.match_type, r.pattern, r.message, JSON.stringify(r.applies_to),
  r.stack, source, status, r.proposed_by, r.context, at, at,
]

// The statements both backends run as they are.
const WRITE = `INSERT INTO rules (project, rule_id, severity, match_type, pattern, message, applies_to, stack, source, status, proposed_by, context, created_at, updated_at)
  VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
  ON CONFLICT (project, rule_id) DO UPDATE SET severity = excluded.severity, match_type = excluded.match_type,
    pattern = excluded.pattern, message = excluded.message, applies_to = excluded.applies_to, stack = excluded.stack,
    source = excluded.source, status = excluded.status, proposed_by = excluded.proposed_by, context = excluded.context,
    updated_at = excluded.updated_at`
export const UPSERT = `${WRITE} RETURNING *`
// A rejected rule may be proposed again: it is overwritten by the new proposal (created_at kept).
export const PROPOSE = `${WRITE} WHERE rules.status = 'rejected' RETURNING *`

/** put's row: what `rule` and `given` leave unsaid comes from the existing row `old`, else the defaults. */
export function putArgs(rule: RuleDraft, given: { source?: Source; status?: Status }, old: Row | null): Args {
  const draft = { ...rule, proposed_by: rule.proposed_by || old?.proposed_by || '', context: rule.context || old?.context || '' }
  return args(draft, given.source ?? old?.source ?? 'local', given.status ?? old?.status ?? 'accepted', now())
}

export function rulesWrites(db: Database): RulesWrites {
  const upsert = db.query<Row, Args>(UPSERT)
  const insert = db.query<Row, Args>(PROPOSE)
  const one = db.query<Row, [string, string]>('SELECT * FROM rules WHERE project = ? AND rule_id = ?')
  const drop = db.query<Row, [string, string]>('DELETE FROM rules WHERE project = ? AND rule_id = ? RETURNING *')
  const dropAccepted = db.query<void, [string]>("DELETE FROM rules WHERE project = ? AND status = 'accepted'")
  const decide = db.query<Row, [string, string, string, string]>(
    "UPDATE rules SET status = ?, updated_at = ? WHERE project = ? AND rule_id = ? AND status = 'proposed' RETURNING *",
  )
  return {
    replace(project, rules) {
      const at = now()
      dropAccepted.run(project)
      for (const r of rules) upsert.get(...args({ ...r, project }, 'local', 'accepted', at))
      return rules.length
    },
    propose(rule) {
      const row = insert.get(...args(rule, 'learned', 'proposed', now()))
      if (!row) throw conflict(`rule ${rule.rule_id} already exists in project ${rule.project}`)
      return toRule(row)
    },
    decide(project, ruleId, status) {
      const row = decide.get(status, now(), project, ruleId)
      if (!row) throw notFound(`rule ${ruleId} not found in project ${project} or not proposed`)
      return toRule(row)
    },
    put(rule, given) {
      const old = one.get(rule.project, rule.rule_id)
      return { rule: toRule(upsert.get(...putArgs(rule, given, old))!), created: !old }
    },
    remove(project, ruleId) {
      const row = drop.get(project, ruleId)
      if (!row) throw notFound(`rule ${ruleId} not found in project ${project}`)
      return toRule(row)
    },
    import(rules) {
      const at = now()
      for (const r of rules) upsert.get(...args(r, 'external', 'accepted', at))
      return rules.length
    },
  }
}

// The reads' statements, the same on both backends.
export const VALIDATION = `SELECT * FROM rules WHERE status = 'accepted' AND project IN (?, ?) ORDER BY project = '${GLOBAL_PROJECT}', rule_id`

export function exportQuery(sources: Source[]): { sql: string; args: string[] } {
  const marks = sources.map(() => '?').join(', ')
  return { sql: `SELECT * FROM rules WHERE status = 'accepted' AND source IN (${marks}) ${ORDER}`, args: sources }
}

export function listQuery(filter: RuleFilter): { sql: string; args: string[] } {
  const where: string[] = []
  const args: string[] = []
  if (filter.project !== undefined) where.push('project = ?'), args.push(filter.project)
  if (filter.status !== undefined) where.push('status = ?'), args.push(filter.status)
  return { sql: `SELECT * FROM rules ${where.length ? `WHERE ${where.join(' AND ')}` : ''} ${ORDER}`, args }
}

export function rulesStore(db: Database): RulesStore {
  const validation = db.query<Row, [string, string]>(VALIDATION)
  return {
    forValidation: async (project) => validation.all(project, GLOBAL_PROJECT).map(toRule),
    export: async (sources) => {
      if (!sources.length) return []
      const { sql, args } = exportQuery(sources)
      return db.query<Row, string[]>(sql).all(...args).map(toRule)
    },
    list: async (filter) => {
      const { sql, args } = listQuery(filter)
      return db.query<Row, string[]>(sql).all(...args).map(toRule)
    },
  }
}

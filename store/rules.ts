// Validation rules: one row per (project, rule_id) with its source (local,
// learned, external) and lifecycle status (accepted, proposed, rejected).
import { conflict, notFound } from '../lib/errors'
import { GLOBAL_PROJECT, type Rule, type RuleDraft, type Source, type Status } from '../validation/rules'
import { nowIso } from '../lib/time'
import { stmt, type Runner } from './runner'

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
  replace(project: string, rules: RuleDraft[]): Promise<number>
  /** Stores a proposal (learned, proposed); a rejected rule of that id is proposed anew; 409 when the project has it in any other status. */
  propose(rule: RuleDraft): Promise<Rule>
  /**
   * Creates or replaces one rule. A new one is `local`/`accepted` unless `source`/`status` are given;
   * an existing one keeps its source, status, proposer, context and created_at unless given.
   */
  put(rule: RuleDraft, given: { source?: Source; status?: Status }): Promise<{ rule: Rule; created: boolean }>
  /** Deletes one rule, whatever its status; 404 when missing. */
  remove(project: string, ruleId: string): Promise<Rule>
  /** proposed → accepted or rejected; 404 when the rule is missing or not proposed. */
  decide(project: string, ruleId: string, status: 'accepted' | 'rejected'): Promise<Rule>
  /** Upserts every rule as external and accepted. */
  import(rules: RuleDraft[]): Promise<number>
}

type Row = Omit<Rule, 'applies_to'> & { applies_to: string }

const toRule = (r: Row): Rule => ({
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

type Args = [string, string, string, string, string, string, string, string, string, string, string, string, string, string]
const args = (r: RuleDraft, source: Source, status: Status, at: string): Args => [
  r.project, r.rule_id, r.severity, r.match_type, r.pattern, r.message, JSON.stringify(r.applies_to),
  r.stack, source, status, r.proposed_by, r.context, at, at,
]

const WRITE = `INSERT INTO rules (project, rule_id, severity, match_type, pattern, message, applies_to, stack, source, status, proposed_by, context, created_at, updated_at)
  VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
  ON CONFLICT (project, rule_id) DO UPDATE SET severity = excluded.severity, match_type = excluded.match_type,
    pattern = excluded.pattern, message = excluded.message, applies_to = excluded.applies_to, stack = excluded.stack,
    source = excluded.source, status = excluded.status, proposed_by = excluded.proposed_by, context = excluded.context,
    updated_at = excluded.updated_at`
const UPSERT = stmt<Row>(`${WRITE} RETURNING *`)
// A rejected rule may be proposed again: it is overwritten by the new proposal (created_at kept).
const PROPOSE = stmt<Row>(`${WRITE} WHERE rules.status = 'rejected' RETURNING *`)
const ONE = stmt<Row>('SELECT * FROM rules WHERE project = ? AND rule_id = ?')
const DROP = stmt<Row>('DELETE FROM rules WHERE project = ? AND rule_id = ? RETURNING *')
const DROP_ACCEPTED = stmt("DELETE FROM rules WHERE project = ? AND status = 'accepted'")
const DECIDE = stmt<Row>("UPDATE rules SET status = ?, updated_at = ? WHERE project = ? AND rule_id = ? AND status = 'proposed' RETURNING *")
const VALIDATION = stmt<Row>(
  `SELECT * FROM rules WHERE status = 'accepted' AND project IN (?, ?) ORDER BY project = '${GLOBAL_PROJECT}', rule_id`,
)

export function rulesWrites(w: Runner): RulesWrites {
  return {
    async replace(project, rules) {
      const at = nowIso()
      await w.run(DROP_ACCEPTED, project)
      for (const r of rules) await w.get(UPSERT, ...args({ ...r, project }, 'local', 'accepted', at))
      return rules.length
    },
    async propose(rule) {
      const row = await w.get(PROPOSE, ...args(rule, 'learned', 'proposed', nowIso()))
      if (!row) throw conflict(`rule ${rule.rule_id} already exists in project ${rule.project}`)
      return toRule(row)
    },
    async decide(project, ruleId, status) {
      const row = await w.get(DECIDE, status, nowIso(), project, ruleId)
      if (!row) throw notFound(`rule ${ruleId} not found in project ${project} or not proposed`)
      return toRule(row)
    },
    async put(rule, given) {
      const old = await w.get(ONE, rule.project, rule.rule_id)
      // What `rule` and `given` leave unsaid comes from the existing row, else the defaults.
      const draft = { ...rule, proposed_by: rule.proposed_by || old?.proposed_by || '', context: rule.context || old?.context || '' }
      const row = await w.get(UPSERT, ...args(draft, given.source ?? old?.source ?? 'local', given.status ?? old?.status ?? 'accepted', nowIso()))
      return { rule: toRule(row!), created: !old }
    },
    async remove(project, ruleId) {
      const row = await w.get(DROP, project, ruleId)
      if (!row) throw notFound(`rule ${ruleId} not found in project ${project}`)
      return toRule(row)
    },
    async import(rules) {
      const at = nowIso()
      for (const r of rules) await w.get(UPSERT, ...args(r, 'external', 'accepted', at))
      return rules.length
    },
  }
}

export function rulesStore(r: Runner): RulesStore {
  const all = async (text: string, params: string[]) => (await r.all(stmt<Row>(text), ...params)).map(toRule)
  return {
    forValidation: async (project) => (await r.all(VALIDATION, project, GLOBAL_PROJECT)).map(toRule),
    export: async (sources) =>
      sources.length ? all(`SELECT * FROM rules WHERE status = 'accepted' AND source IN (${sources.map(() => '?').join(', ')}) ${ORDER}`, sources) : [],
    list: async (filter) => {
      const where: string[] = []
      const params: string[] = []
      if (filter.project !== undefined) where.push('project = ?'), params.push(filter.project)
      if (filter.status !== undefined) where.push('status = ?'), params.push(filter.status)
      return all(`SELECT * FROM rules ${where.length ? `WHERE ${where.join(' AND ')}` : ''} ${ORDER}`, params)
    },
  }
}

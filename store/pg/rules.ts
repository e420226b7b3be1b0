// Validation rules on PostgreSQL (twin of store/rules.ts): the same statements, run asynchronously.
import type { SQL } from 'bun'
import type { Async } from '../index'
import { conflict, notFound } from '../../lib/errors'
import { GLOBAL_PROJECT } from '../../validation/rules'
import { now } from '../db'
import {
  args, exportQuery, listQuery, PROPOSE, putArgs, toRule, UPSERT, VALIDATION,
  type RuleRow, type RulesStore, type RulesWrites,
} from '../rules'
import { q, type PgUnits } from './db'

export function pgRulesWrites(u: PgUnits): Async<RulesWrites> {
  const upsert = q<RuleRow>(UPSERT)
  const insert = q<RuleRow>(PROPOSE)
  const one = q<RuleRow>('SELECT * FROM rules WHERE project = ? AND rule_id = ?')
  const drop = q<RuleRow>('DELETE FROM rules WHERE project = ? AND rule_id = ? RETURNING *')
  const dropAccepted = q("DELETE FROM rules WHERE project = ? AND status = 'accepted'")
  const decide = q<RuleRow>(
    "UPDATE rules SET status = ?, updated_at = ? WHERE project = ? AND rule_id = ? AND status = 'proposed' RETURNING *",
  )
  return {
    async replace(project, rules) {
      const at = now()
      await dropAccepted.run(u.tx, project)
      for (const r of rules) await upsert.run(u.tx, ...args({ ...r, project }, 'local', 'accepted', at))
      return rules.length
    },
    async propose(rule) {
      const row = await insert.get(u.tx, ...args(rule, 'learned', 'proposed', now()))
      if (!row) throw conflict(`rule ${rule.rule_id} already exists in project ${rule.project}`)
      return toRule(row)
    },
    async decide(project, ruleId, status) {
      const row = await decide.get(u.tx, status, now(), project, ruleId)
      if (!row) throw notFound(`rule ${ruleId} not found in project ${project} or not proposed`)
      return toRule(row)
    },
    async put(rule, given) {
      const old = await one.get(u.tx, rule.project, rule.rule_id)
      return { rule: toRule((await upsert.get(u.tx, ...putArgs(rule, given, old)))!), created: !old }
    },
    async remove(project, ruleId) {
      const row = await drop.get(u.tx, project, ruleId)
      if (!row) throw notFound(`rule ${ruleId} not found in project ${project}`)
      return toRule(row)
    },
    async import(rules) {
      const at = now()
      for (const r of rules) await upsert.run(u.tx, ...args(r, 'external', 'accepted', at))
      return rules.length
    },
  }
}

export function pgRulesStore(sql: SQL): RulesStore {
  const validation = q<RuleRow>(VALIDATION)
  return {
    forValidation: async (project) => (await validation.all(sql, project, GLOBAL_PROJECT)).map(toRule),
    export: async (sources) => {
      if (!sources.length) return []
      const query = exportQuery(sources)
      return (await q<RuleRow>(query.sql).all(sql, ...query.args)).map(toRule)
    },
    list: async (filter) => {
      const query = listQuery(filter)
      return (await q<RuleRow>(query.sql).all(sql, ...query.args)).map(toRule)
    },
  }
}

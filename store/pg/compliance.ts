// Compliance runs on PostgreSQL (twin of store/compliance.ts).
import type { SQL } from 'bun'
import type { Async } from '../index'
import { now } from '../db'
import { toRun, type ComplianceRow, type ComplianceStore, type ComplianceWrites } from '../compliance'
import { int, q, type PgUnits } from './db'

type Row = Omit<ComplianceRow, 'id'> & { id: string }

const fromRow = (r: Row) => toRun({ ...r, id: int(r.id) })

export function pgComplianceWrites(u: PgUnits): Async<ComplianceWrites> {
  const insert = q<Row>(
    'INSERT INTO compliance_runs (instance_id, project, contract, pass, violations, run_at) VALUES (?, ?, ?, ?, ?, ?) RETURNING *',
  )
  const prune = q(
    `DELETE FROM compliance_runs WHERE id IN (
       SELECT id FROM (SELECT id, ROW_NUMBER() OVER (PARTITION BY instance_id, project, contract ORDER BY id DESC) AS n FROM compliance_runs) AS ranked
       WHERE n > ?)`,
  )
  return {
    async record(run) {
      const pass = run.violations.length === 0
      return fromRow((await insert.get(u.tx, run.instance_id, run.project, run.contract, pass, JSON.stringify(run.violations), now()))!)
    },
    prune: (keep) => prune.run(u.tx, Math.max(1, keep)),
  }
}

export function pgComplianceStore(sql: SQL): ComplianceStore {
  const all = q<Row>('SELECT * FROM compliance_runs ORDER BY id DESC LIMIT ?')
  const byInstance = q<Row>('SELECT * FROM compliance_runs WHERE instance_id = ? ORDER BY id DESC LIMIT ?')
  return {
    history: async (f) => (await (f.instance_id ? byInstance.all(sql, f.instance_id, f.limit) : all.all(sql, f.limit))).map(fromRow),
  }
}

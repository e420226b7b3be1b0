// Compliance runs: one row per (instance, contract) check.
import type { Database } from 'bun:sqlite'
import { now } from './db'

export interface ComplianceViolation {
  field: string
  message: string
  /** The endpoint ("METHOD /path") a violation was found on, when it concerns one. */
  endpoint?: string
}

export interface ComplianceRun {
  id: number
  instance_id: string
  project: string
  contract: string
  pass: boolean
  violations: ComplianceViolation[]
  run_at: string
}

export interface ComplianceStore {
  /** Newest first. */
  history(filter: { instance_id?: string; limit: number }): Promise<ComplianceRun[]>
}

export interface ComplianceWrites {
  record(run: Omit<ComplianceRun, 'id' | 'run_at' | 'pass'>): ComplianceRun
  /** Deletes all but the newest `keep` runs of each (instance, project, contract); returns how many went. */
  prune(keep: number): number
}

interface Row {
  id: number
  instance_id: string
  project: string
  contract: string
  pass: number
  violations: string
  run_at: string
}
export type { Row as ComplianceRow }

export const toRun = (r: Row): ComplianceRun => ({ ...r, pass: r.pass === 1, violations: JSON.parse(r.violations) })

export function complianceWrites(db: Database): ComplianceWrites {
  const insert = db.query<{ id: number }, [string, string, string, number, string, string]>(
    'INSERT INTO compliance_runs (instance_id, project, contract, pass, violations, run_at) VALUES (?, ?, ?, ?, ?, ?) RETURNING id',
  )
  const prune = db.query<unknown, [number]>(
    `DELETE FROM compliance_runs WHERE id IN (
       SELECT id FROM (SELECT id, ROW_NUMBER() OVER (PARTITION BY instance_id, project, contract ORDER BY id DESC) AS n FROM compliance_runs)
       WHERE n > ?)`,
  )
  return {
    record(run) {
      const pass = run.violations.length === 0
      const run_at = now()
      const { id } = insert.get(run.instance_id, run.project, run.contract, pass ? 1 : 0, JSON.stringify(run.violations), run_at)!
      return { id, instance_id: run.instance_id, project: run.project, contract: run.contract, pass, violations: run.violations, run_at }
    },
    prune: (keep) => prune.run(Math.max(1, keep)).changes,
  }
}

export function complianceStore(db: Database): ComplianceStore {
  const all = db.query<Row, [number]>('SELECT * FROM compliance_runs ORDER BY id DESC LIMIT ?')
  const byInstance = db.query<Row, [string, number]>(
    'SELECT * FROM compliance_runs WHERE instance_id = ? ORDER BY id DESC LIMIT ?',
  )
  return {
    history: async (f) => (f.instance_id ? byInstance.all(f.instance_id, f.limit) : all.all(f.limit)).map(toRun),
  }
}

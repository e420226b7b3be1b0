// Compliance runs: one row per (instance, contract) check.
import { nowIso } from '../lib/time'
import { int, stmt, type Runner } from './runner'

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
  record(run: Omit<ComplianceRun, 'id' | 'run_at' | 'pass'>): Promise<ComplianceRun>
  /** Deletes all but the newest `keep` runs of each (instance, project, contract); returns how many went. */
  prune(keep: number): Promise<number>
}

type Row = Omit<ComplianceRun, 'id' | 'pass' | 'violations'> & { id: number | string; pass: number; violations: string }

const toRun = (r: Row): ComplianceRun => ({ ...r, id: int(r.id), pass: r.pass === 1, violations: JSON.parse(r.violations) })

const INSERT = stmt<Row>(
  'INSERT INTO compliance_runs (instance_id, project, contract, pass, violations, run_at) VALUES (?, ?, ?, ?, ?, ?) RETURNING *',
)
const PRUNE = stmt(
  `DELETE FROM compliance_runs WHERE id IN (
     SELECT id FROM (SELECT id, ROW_NUMBER() OVER (PARTITION BY instance_id, project, contract ORDER BY id DESC) AS n FROM compliance_runs) AS ranked
     WHERE n > ?)`,
)
const ALL = stmt<Row>('SELECT * FROM compliance_runs ORDER BY id DESC LIMIT ?')
const BY_INSTANCE = stmt<Row>('SELECT * FROM compliance_runs WHERE instance_id = ? ORDER BY id DESC LIMIT ?')

export function complianceWrites(w: Runner): ComplianceWrites {
  return {
    async record(run) {
      const pass = run.violations.length === 0 ? 1 : 0
      return toRun((await w.get(INSERT, run.instance_id, run.project, run.contract, pass, JSON.stringify(run.violations), nowIso()))!)
    },
    prune: (keep) => w.run(PRUNE, Math.max(1, keep)),
  }
}

export function complianceStore(r: Runner): ComplianceStore {
  return {
    history: async (f) => (await (f.instance_id ? r.all(BY_INSTANCE, f.instance_id, f.limit) : r.all(ALL, f.limit))).map(toRun),
  }
}

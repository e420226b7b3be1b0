// Project settings: what differs per project, kept for the projects a person or
// `muster init` set something for. A project is otherwise only a name that reservations,
// tasks and sessions carry; one without a row has the defaults.
import { stmt, type Runner, type UnitHooks } from './runner'

export interface ProjectSettings {
  project: string
  /**
   * Paths of the project are compared without regard to case (its agents run on a
   * case-insensitive filesystem: macOS, Windows). Unicode normalization (NFC) applies to
   * every project: see lib/path-fold.ts.
   */
  case_insensitive: boolean
  /** When it was last set; null for a project with the defaults. */
  updated_at: string | null
}

export const defaultSettings = (project: string): ProjectSettings => ({ project, case_insensitive: false, updated_at: null })

type Row = { project: string; case_insensitive: number; updated_at: string }
const toSettings = (r: Row): ProjectSettings => ({ project: r.project, case_insensitive: r.case_insensitive === 1, updated_at: r.updated_at })

const ONE = stmt<Row>('SELECT project, case_insensitive, updated_at FROM project_settings WHERE project = ?')
const LIST = stmt<Row>('SELECT project, case_insensitive, updated_at FROM project_settings ORDER BY project')
const PUT = stmt<Row>(
  `INSERT INTO project_settings (project, case_insensitive, updated_at) VALUES (?, ?, ?)
   ON CONFLICT (project) DO UPDATE SET case_insensitive = excluded.case_insensitive, updated_at = excluded.updated_at
   RETURNING project, case_insensitive, updated_at`,
)

/** The settings of `project` on one runner: its row, or the defaults. */
export async function settingsOn(r: Runner, project: string): Promise<ProjectSettings> {
  const row = await r.get(ONE, project)
  return row ? toSettings(row) : defaultSettings(project)
}

export interface ProjectsWrites {
  get(project: string): Promise<ProjectSettings>
  put(s: { project: string; case_insensitive: boolean }, at: string): Promise<ProjectSettings>
}

export interface ProjectsStore {
  get(project: string): Promise<ProjectSettings>
  /** The projects with settings of their own, by name. */
  list(): Promise<ProjectSettings[]>
}

/** `changed`: told after the COMMIT of a unit that set a project's settings (the reservation checks keep its case rule). */
export function projectsWrites(w: Runner, unit: UnitHooks, changed: (changes: { project: string; prefixes: null }[]) => void): ProjectsWrites {
  return {
    get: (project) => settingsOn(w, project),
    async put(s, at) {
      const row = toSettings((await w.get(PUT, s.project, s.case_insensitive ? 1 : 0, at))!)
      unit.afterCommit(() => changed([{ project: row.project, prefixes: null }]))
      return row
    },
  }
}

export function projectsStore(r: Runner): ProjectsStore {
  return {
    get: (project) => settingsOn(r, project),
    list: async () => (await r.all(LIST)).map(toSettings),
  }
}

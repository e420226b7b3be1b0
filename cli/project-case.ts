// Whether a project's path matching fits its repository: the repository's own
// `core.ignorecase` against the project's `case_insensitive` setting on the server
// (docs/api/projects.md). `muster init` sets the setting from it (setProjectCase);
// `muster doctor` reports it (projectCaseCheck).
import { api, apiPath } from './client'
import { gitIgnoresCase, gitRoot, projectOf } from './git-repo'

export interface ProjectCaseReport {
  project: string
  /** The repository's root, where core.ignorecase was read. */
  root: string
  /** `git config core.ignorecase` there: null when unset or not a repository. */
  git_ignorecase: boolean | null
  /** The project's setting on the server: null when the server could not be asked. */
  case_insensitive: boolean | null
  /** false when the two disagree in the direction that misses conflicts, or the server could not be asked. */
  ok: boolean
  /** One line for a person: what was found and what to do. */
  message: string
}

const put = (project: string) => `PUT /api/projects/${project} {"case_insensitive": true}`

/** Compares the repository in `root` (default: the current one) with its project's setting on the server. */
export async function projectCaseCheck(root = gitRoot() ?? process.cwd(), project = projectOf(root)): Promise<ProjectCaseReport> {
  const git = gitIgnoresCase(root)
  let server: boolean | null = null
  let error = ''
  try {
    server = ((await api.get(apiPath('/api/projects', project))) as { case_insensitive: boolean }).case_insensitive
  } catch (err) {
    error = (err as Error).message
  }
  const base = { project, root, git_ignorecase: git, case_insensitive: server }
  if (server === null) return { ...base, ok: false, message: `cannot read the settings of project "${project}": ${error}` }
  if (git === true && !server)
    return {
      ...base,
      ok: false,
      message: `the repository ignores case (core.ignorecase) but project "${project}" matches paths case-sensitively: an edit of SRC/a.ts is not denied while src/a.ts is held. Run \`muster init\` again, or ${put(project)}`,
    }
  const how = server ? 'without regard to case' : 'case-sensitively'
  return { ...base, ok: true, message: `project "${project}" matches paths ${how} (core.ignorecase ${git ?? 'unset'}); Unicode NFC always` }
}

/**
 * What `muster init` does with it: a repository that ignores case turns the project's
 * case-insensitive matching on (never off: that needs the admin token and a person's
 * decision). Never throws: init still writes its files when the server is not reachable.
 */
export async function setProjectCase(root: string, project = projectOf(root), dryRun = false) {
  const git = gitIgnoresCase(root)
  if (git !== true) return { project, git_ignorecase: git, case_insensitive: null, action: 'unchanged' as const }
  if (dryRun) return { project, git_ignorecase: git, case_insensitive: true, action: 'would set' as const }
  try {
    const s = (await api.put(apiPath('/api/projects', project), { case_insensitive: true })) as { case_insensitive: boolean }
    return { project, git_ignorecase: git, case_insensitive: s.case_insensitive, action: 'set' as const }
  } catch (err) {
    return { project, git_ignorecase: git, case_insensitive: null, action: 'failed' as const, error: `${(err as Error).message}: set it with ${put(project)}` }
  }
}

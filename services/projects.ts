// Project settings (store/projects.ts): set by a person, or by `muster init` from the
// repository's own `core.ignorecase`. A change commits with its project.updated event and
// its audit entry. Turning case-insensitive matching off narrows what every reservation of
// the project holds (`SRC/a.ts` no longer meets `src/**`), so only the admin token may;
// turning it on only widens them.
import { nowIso } from '../lib/time'
import { forbidden } from '../lib/errors'
import type { Ctx } from './context'
import type { ProjectSettings } from '../store/projects'
import { recordAudit, type AuditScope } from './audit'

export const SOURCE = 'projects'

export interface SettingsChange {
  case_insensitive: boolean
}

export function setProjectSettings(ctx: Ctx, scope: AuditScope | undefined, project: string, change: SettingsChange): Promise<ProjectSettings> {
  return ctx.store.write(async (tx) => {
    const current = await tx.projects.get(project)
    if (current.case_insensitive === change.case_insensitive && current.updated_at !== null) return current
    if (current.case_insensitive && !change.case_insensitive && scope && scope.role !== 'admin')
      throw forbidden(
        `turning case-insensitive path matching off for project "${project}" needs the admin token: it narrows what every reservation of the project holds (ask a person)`,
      )
    const next = await tx.projects.put({ project, case_insensitive: change.case_insensitive }, nowIso())
    await tx.emit('project.updated', { project, case_insensitive: next.case_insensitive }, SOURCE)
    await recordAudit(tx, scope, `case_insensitive ${current.case_insensitive} → ${next.case_insensitive}`)
    return next
  })
}

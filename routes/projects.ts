// /api/projects: the settings of a project (store/projects.ts). A project without any
// answers its defaults; only its path matching (case-insensitive or not) is set here.
import { t } from 'elysia'
import type { Ctx } from '../services/context'
import { setProjectSettings } from '../services/projects'
import { checkProject } from '../services/reservations'
import { audited } from '../http/audit'
import { Nullable, ProjectParams } from '../http/models'

const SettingsSchema = t.Object({
  project: t.String(),
  case_insensitive: t.Boolean({ description: 'paths compare without regard to case (agents on macOS or Windows); NFC always' }),
  updated_at: Nullable(t.String({ description: 'null: never set, the defaults' })),
})

export function projectsRoutes(ctx: Ctx) {
  return audited(ctx)
    .get('/api/projects', () => ctx.store.projects.list(), {
      response: { 200: t.Array(SettingsSchema) },
      detail: { summary: 'Projects with settings of their own, by name', tags: ['projects'] },
    })
    .get('/api/projects/:project', ({ params }) => ctx.store.projects.get(checkProject(params.project)), {
      params: ProjectParams,
      response: { 200: SettingsSchema },
      detail: { summary: "A project's settings (the defaults when never set)", tags: ['projects'] },
    })
    .put(
      '/api/projects/:project',
      ({ params, body, audit }) => setProjectSettings(ctx, audit, checkProject(params.project), { case_insensitive: body.case_insensitive }),
      {
        params: ProjectParams,
        body: t.Object(
          { case_insensitive: t.Boolean({ description: 'compare the project\'s paths without regard to case (reservations, checks, tasks, hooks)' }) },
          { examples: [{ case_insensitive: true }] },
        ),
        response: { 200: SettingsSchema },
        audit: 'project.update',
        detail: {
          summary: "Set a project's path matching",
          description:
            'case_insensitive: true for a project whose agents run on a case-insensitive filesystem (muster init sets it from git config core.ignorecase). Turning it off needs the admin token (403 otherwise): it narrows what every reservation holds. Event project.updated.',
          tags: ['projects'],
        },
      },
    )
}

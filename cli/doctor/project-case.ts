// Doctor: whether the project matches paths the way the repository's filesystem names
// them. A repository that ignores case (core.ignorecase) on a project that matches paths
// case-sensitively lets an edit of SRC/a.ts through while src/a.ts is held.
import { projectCaseCheck } from '../project-case'
import type { Check } from './check'

export const projectCaseDoctorCheck: Check = async (ctx) => {
  if (!(await ctx.server()).reached) return [] // the server check says so
  const r = await projectCaseCheck(ctx.root)
  if (r.case_insensitive === null) return [{ status: 'warn', check: 'path case', message: r.message }]
  if (r.ok) return [{ status: 'ok', check: 'path case', message: r.message }]
  return [{ status: 'fail', check: 'path case', message: r.message.split(': an edit')[0] + ': an edit of another case of a held file is not denied', fix: `\`muster init\` again, or PUT /api/projects/${r.project} {"case_insensitive": true} (admin or agent token)` }]
}

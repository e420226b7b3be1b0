// `project list|get|set`: a project's settings (docs/api/projects.md), today whether its
// paths match without regard to case. `muster init` turns that on from the repository's
// own core.ignorecase; turning it off needs the admin token.
import { Argument, Option, type Command } from 'commander'
import { api, apiPath } from './client'
import { UsageError, act } from './output'

export function projectCommands(program: Command): void {
  const project = program.command('project').description("a project's settings: whether its paths match without regard to case (for agents on case-insensitive filesystems)")

  project
    .command('list')
    .description('the projects with settings of their own (the others have the defaults)')
    .action(act(() => api.get('/api/projects')))

  project
    .command('get')
    .description("a project's settings (the defaults when it has none)")
    .addArgument(new Argument('<project>', 'project name'))
    .action(act((name: string) => api.get(apiPath('/api/projects', name))))

  project
    .command('set')
    .description("change a project's settings; --case-sensitive needs the admin token (it narrows what every reservation holds)")
    .addArgument(new Argument('<project>', 'project name'))
    .addOption(new Option('--case-insensitive', 'match paths without regard to case (SRC/a.ts is src/a.ts)').conflicts('caseSensitive'))
    .addOption(new Option('--case-sensitive', 'match paths exactly (the default)'))
    .action(
      act((name: string, o: { caseInsensitive?: boolean; caseSensitive?: boolean }) => {
        if (!o.caseInsensitive && !o.caseSensitive) throw new UsageError('say --case-insensitive or --case-sensitive')
        return api.put(apiPath('/api/projects', name), { case_insensitive: !!o.caseInsensitive })
      }),
    )
}

// `budgets` (list), `budgets get|set|delete`: spend limits per agent, project, task, queue
// or for all usage, which the hooks and task claims enforce (oversight.md "Budgets").
import { Argument, Option, type Command } from 'commander'
import { api, apiPath } from './client'
import { decimal } from './input'
import { act } from './output'

export function budgetCommands(program: Command): void {
  const budgets = program.command('budgets').description('LLM spend limits and what each has spent in its current window; changing them needs the admin token')

  budgets
    .command('list', { isDefault: true })
    .description('every budget with spent_usd and window_start (what `muster budgets` alone prints)')
    .action(act(() => api.get('/api/budgets')))

  budgets
    .command('get')
    .description('one budget with what it has spent')
    .addArgument(new Argument('<name>'))
    .action(act((name: string) => api.get(apiPath('/api/budgets', name))))

  budgets
    .command('set')
    .description('create or replace a budget (admin token); raising --limit above what was spent lifts a deny')
    .addArgument(new Argument('<name>', '1 … 100 of A-Z a-z 0-9 . _ -'))
    .addOption(new Option('--scope <scope>', 'what usage counts').choices(['agent', 'project', 'task', 'queue', 'all']).default('all'))
    .option('--target <target>', 'the agent name, project, task id or queue (not for --scope all)')
    .requiredOption('--limit <usd>', 'limit in USD, > 0', decimal)
    .addOption(new Option('--window <window>', 'UTC day, week from Monday, or in total').choices(['day', 'week', 'total']).default('day'))
    .addOption(new Option('--action <action>', 'warn: a line in hook context; deny: tool calls and claims refused').choices(['warn', 'deny']).default('warn'))
    .action(
      act((name: string, o: { scope: string; target?: string; limit: number; window: string; action: string }) =>
        api.put(apiPath('/api/budgets', name), { scope: o.scope, target: o.target, limit_usd: o.limit, window: o.window, action: o.action }),
      ),
    )

  budgets
    .command('delete')
    .description('delete a budget (admin token)')
    .addArgument(new Argument('<name>'))
    .action(act((name: string) => api.delete(apiPath('/api/budgets', name))))
}

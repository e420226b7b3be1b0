// `compliance history|run`: contract compliance checks of active agents.
import type { Command } from 'commander'
import { api } from './client'
import { integer } from './input'
import { act } from './output'

export function complianceCommands(program: Command): void {
  const compliance = program.command('compliance').description('contract compliance checks of active instances')

  compliance
    .command('history')
    .description('past compliance runs, newest first')
    .option('--instance-id <id>', 'only runs for this instance')
    .option('--limit <n>', 'how many (server default 50)', integer(1))
    .action(act((o: { instanceId?: string; limit?: number }) => api.get('/api/compliance/history', { instance_id: o.instanceId, limit: o.limit })))

  compliance
    .command('run')
    .description('check all active instances now')
    .action(act(() => api.post('/api/compliance/run')))
}

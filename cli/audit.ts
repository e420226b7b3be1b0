// `audit` and `audit summary`: the append-only log of mutating calls.
import type { Command } from 'commander'
import { api } from './client'
import { integer } from './input'
import { act } from './output'

export function auditCommands(program: Command): void {
  const audit = program
    .command('audit')
    .description('audit entries, newest first (`audit summary` for counts)')
    .option('--actor <actor>', 'instance id, admin or anonymous')
    .option('--action <action>', 'e.g. state.put')
    .option('--from <time>', 'RFC 3339 lower bound')
    .option('--to <time>', 'RFC 3339 upper bound')
    .option('--limit <n>', 'how many (server default 50)', integer(1))
    .action(act((o: { actor?: string; action?: string; from?: string; to?: string; limit?: number }) => api.get('/api/audit', { ...o })))

  audit
    .command('summary')
    .description('counts by action and outcome, unique actors and resources')
    .option('--from <time>', 'RFC 3339 lower bound')
    .option('--to <time>', 'RFC 3339 upper bound')
    .action(act((o: { from?: string; to?: string }) => api.get('/api/audit/summary', { ...o })))
}

// `history` and `diff` of a versioned document: state keys, specs and contracts
// answer the same ?history=1&limit=N and ?diff=v1,v2 on their read route.
import type { Command } from 'commander'
import { api } from './client'
import { integer } from './input'
import { act } from './output'

export function versionCommands(group: Command, argument: string, pathOf: (arg: string) => string): void {
  group
    .command('history')
    .description('versions, newest first')
    .argument(argument)
    .option('--limit <n>', 'how many versions (server default 50)', integer(1))
    .action(act((arg: string, o: { limit?: number }) => api.get(pathOf(arg), { history: 1, limit: o.limit })))

  group
    .command('diff')
    .description('JSON diff between two versions')
    .argument(argument)
    .requiredOption('--v1 <n>', 'from version', integer(1))
    .requiredOption('--v2 <n>', 'to version', integer(1))
    .action(act((arg: string, o: { v1: number; v2: number }) => api.get(pathOf(arg), { diff: `${o.v1},${o.v2}` })))
}

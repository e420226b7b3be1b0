// `rules import|export` (rule lifecycle across projects) and `validate` (check content against the rules).
import type { Command } from 'commander'
import { api, apiPath } from './client'
import { commaList, parseJson, readFileArg, readPayload, withPayload, type PayloadOptions } from './input'
import { act, writeFileAtomic } from './output'

export function rulesCommands(program: Command): void {
  const rules = program.command('rules').description('import and export validation rules')

  rules
    .command('import')
    .description('upsert rules from a JSON array file (each rule names its project); imported rules are accepted')
    .requiredOption('--file <path>', "JSON array of rules ('-' for stdin)")
    .action(act(async (o: { file: string }) => api.post('/api/rules/import', parseJson(await readFileArg(o.file), o.file))))

  rules
    .command('export')
    .description('accepted rules as a JSON array')
    .option('--source <list>', 'comma-separated sources: local, learned, external (server default local,learned)', commaList)
    .option('--output <path>', 'write to this file (indented JSON) instead of stdout')
    .action(
      act(async (o: { source?: string[]; output?: string }) => {
        const exported = (await api.get('/api/rules/export', { source: o.source?.join(',') })) as unknown[]
        if (!o.output) return exported
        await writeFileAtomic(o.output, JSON.stringify(exported, null, 2) + '\n')
        return { output: o.output, count: exported.length }
      }),
    )

  withPayload(program.command('validate'), 'the content to check')
    .description("check content against a project's accepted rules (and _global's)")
    .argument('<project>')
    .option('--filename <path>', 'file name for applies_to globs (default: the --file path)')
    .option('--stack <stack>', 'only rules of this stack and universal ones')
    .action(
      act(async (project: string, o: PayloadOptions & { filename?: string; stack?: string }) => {
        const content = new TextDecoder().decode(await readPayload(o))
        const filename = o.filename ?? (o.file && o.file !== '-' ? o.file : undefined)
        return api.post(apiPath('/api/validate', project), { content, filename, stack: o.stack })
      }),
    )
}

// `templates ...`: reusable rules, contracts and bundles, applied to projects.
import { Option, type Command } from 'commander'
import { api, apiPath } from './client'
import { readJsonPayload, repeatable, withPayload, type PayloadOptions } from './input'
import { act } from './output'

export function templateCommands(program: Command): void {
  const templates = program.command('templates').description('reusable rules, contracts and bundles')

  templates
    .command('list')
    .description('templates without their data')
    .option('--kind <kind>', 'rules, contracts or bundle')
    .option('--tag <tag>', 'only templates with this tag')
    .action(act((o: { kind?: string; tag?: string }) => api.get('/api/templates', { kind: o.kind, tag: o.tag })))

  templates
    .command('get')
    .description('one template including its data')
    .argument('<id>')
    .action(act((id: string) => api.get(apiPath('/api/templates', id))))

  withPayload(templates.command('create'), 'the template data (JSON)', false)
    .description('create a template')
    .argument('<id>')
    .requiredOption('--name <name>', 'display name')
    .option('--description <text>')
    .addOption(new Option('--kind <kind>').choices(['rules', 'contracts', 'bundle']))
    .option('--tag <tag>', 'repeatable', repeatable)
    .action(
      act(async (id: string, o: PayloadOptions & { name: string; description?: string; kind?: string; tag?: string[] }) => {
        const data = await readJsonPayload(o, false)
        return api.post('/api/templates', { id, name: o.name, description: o.description, kind: o.kind, tags: o.tag, data })
      }),
    )

  templates
    .command('delete')
    .description('delete a template')
    .argument('<id>')
    .action(act((id: string) => api.delete(apiPath('/api/templates', id))))

  templates
    .command('apply')
    .description("write a template's rules / contracts / bundle into a project")
    .argument('<id>')
    .requiredOption('--project <project>', 'target project')
    .action(act((id: string, o: { project: string }) => api.post(apiPath('/api/templates', id, 'apply'), { project: o.project })))
}

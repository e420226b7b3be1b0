// `templates ...`: reusable rules, contracts and bundles, applied to projects.
import { Option, type Command } from 'commander'
import { api, apiPath } from './client'
import { readJsonPayload, repeatable, withPayload, type PayloadOptions } from './input'
import { act } from './output'

type TemplateOptions = PayloadOptions & { name?: string; description?: string; kind?: string; tag?: string[] }

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

  /** The fields create and update share; update sends only those given. */
  const fields = (cmd: Command) =>
    withPayload(cmd, 'the template data (JSON)', false)
      .argument('<id>')
      .option('--description <text>')
      .addOption(new Option('--kind <kind>').choices(['rules', 'contracts', 'bundle']))
      .option('--tag <tag>', 'repeatable; on update replaces the tags', repeatable)
  const body = async (o: TemplateOptions) => ({
    name: o.name,
    description: o.description,
    kind: o.kind,
    tags: o.tag,
    data: await readJsonPayload(o, false),
  })

  fields(templates.command('create'))
    .description('create a template')
    .requiredOption('--name <name>', 'display name')
    .action(act(async (id: string, o: TemplateOptions) => api.post('/api/templates', { id, ...(await body(o)) })))

  fields(templates.command('update'))
    .description('change the fields given (a new --kind without data starts from that kind\'s default); version + 1')
    .option('--name <name>', 'display name')
    .action(act(async (id: string, o: TemplateOptions) => api.put(apiPath('/api/templates', id), await body(o))))

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

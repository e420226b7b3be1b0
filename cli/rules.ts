// `rules ...` (a project's rules, the propose/accept/reject lifecycle, import and
// export across projects) and `validate` (check content against the rules).
import { Option, type Command } from 'commander'
import { api, apiPath } from './client'
import { commaList, parseJson, readFileArg, readJsonPayload, readPayload, withPayload, type PayloadOptions } from './input'
import { act, CheckFailed, writeOutput } from './output'

const SEVERITIES = ['error', 'warning']
/** --fail-on: the lowest severity that fails `validate` (exit 3); `none` never fails. */
const FAIL_ON: Record<string, string[]> = { error: ['error'], warning: ['error', 'warning'], none: [] }

interface ProposeOptions {
  pattern: string
  severity?: string
  matchType?: string
  message?: string
  appliesTo?: string[]
  stack?: string
  context?: string
  proposedBy?: string
}

export function rulesCommands(program: Command): void {
  const rules = program.command('rules').description("a project's validation rules: propose, review, import and export")

  rules
    .command('list')
    .description('rules of every project, source and status, by project and rule_id')
    .addOption(new Option('--status <status>', 'only rules with this status').choices(['accepted', 'proposed', 'rejected']))
    .option('--project <project>', 'only this project')
    .action(act((o: { status?: string; project?: string }) => api.get('/api/rules', { status: o.status, project: o.project })))

  rules
    .command('get')
    .description("a project's accepted rules (not _global's)")
    .argument('<project>')
    .option('--stack <stack>', "that stack's rules plus those without a stack")
    .action(act((project: string, o: { stack?: string }) => api.get(apiPath('/api/validate', project, 'rules'), { stack: o.stack })))

  withPayload(rules.command('set'), 'the JSON array of rules')
    .description("replace a project's accepted rules with a JSON array (stored as local rules)")
    .argument('<project>')
    .action(
      act(async (project: string, o: PayloadOptions) => api.put(apiPath('/api/validate', project, 'rules'), await readJsonPayload(o))),
    )

  rules
    .command('propose')
    .description('propose a rule for review (it fires only once accepted)')
    .argument('<project>', 'project, or _global for every project')
    .argument('<rule-id>', 'unique within the project')
    .requiredOption('--pattern <pattern>', 'RE2 regex, or a custom check name')
    .addOption(new Option('--severity <severity>', 'server default error').choices(SEVERITIES))
    .addOption(new Option('--match-type <type>', 'server default regex').choices(['regex', 'missing', 'custom']))
    .option('--message <text>', 'shown with each violation')
    .option('--applies-to <globs>', 'comma-separated filename globs (default *)', commaList)
    .option('--stack <stack>', 'only for this stack')
    .option('--context <text>', 'why the rule is needed, for the reviewer')
    .option('--proposed-by <id>', 'default: the registered instance')
    .action(
      act((project: string, ruleId: string, o: ProposeOptions) =>
        api.post('/api/rules/propose', {
          project,
          rule_id: ruleId,
          pattern: o.pattern,
          severity: o.severity,
          match_type: o.matchType,
          message: o.message,
          applies_to: o.appliesTo,
          stack: o.stack,
          context: o.context,
          proposed_by: o.proposedBy,
        }),
      ),
    )

  withPayload(rules.command('put'), 'the JSON rule object')
    .description("create or replace one rule of a project; the project's other rules keep their source")
    .argument('<project>')
    .argument('<rule-id>')
    .action(
      act(async (project: string, ruleId: string, o: PayloadOptions) => api.put(apiPath('/api/rules', project, ruleId), await readJsonPayload(o))),
    )

  rules
    .command('delete')
    .description('delete one rule, whatever its source and status')
    .argument('<project>')
    .argument('<rule-id>')
    .action(act((project: string, ruleId: string) => api.delete(apiPath('/api/rules', project, ruleId))))

  for (const verdict of ['accept', 'reject'] as const)
    rules
      .command(verdict)
      .description(`${verdict} a proposed rule`)
      .argument('<project>')
      .argument('<rule-id>')
      .action(act((project: string, ruleId: string) => api.post(apiPath('/api/rules', project, ruleId, verdict))))

  rules
    .command('import')
    .description('upsert rules from a JSON array file (each rule names its project); imported rules are accepted')
    .requiredOption('--file <path>', "JSON array of rules ('-' for stdin)")
    .action(act(async (o: { file: string }) => api.post('/api/rules/import', parseJson(await readFileArg(o.file), o.file === '-' ? 'stdin' : o.file))))

  rules
    .command('export')
    .description('accepted rules as a JSON array')
    .option('--source <list>', 'comma-separated sources: local, learned, external (server default local,learned)', commaList)
    .option('--output <path>', "write to this file (indented JSON) instead of stdout ('-' for stdout)")
    .action(
      act(async (o: { source?: string[]; output?: string }) => {
        const exported = (await api.get('/api/rules/export', { source: o.source?.join(',') })) as unknown[]
        if (!o.output) return exported
        return writeOutput(o.output, JSON.stringify(exported, null, 2) + '\n', { count: exported.length })
      }),
    )

  withPayload(program.command('validate'), 'the content to check')
    .description("check content against a project's accepted rules (and _global's); exit 3 when violations reach --fail-on")
    .argument('<project>')
    .option('--filename <path>', 'file name for applies_to globs (default: the --file path)')
    .option('--stack <stack>', 'only rules of this stack and universal ones')
    .addOption(new Option('--fail-on <severity>', 'lowest severity that fails the command (none: never)').choices(Object.keys(FAIL_ON)).default('error'))
    .action(
      act(async (project: string, o: PayloadOptions & { filename?: string; stack?: string; failOn: string }) => {
        const content = new TextDecoder().decode(await readPayload(o))
        const filename = o.filename ?? (o.file && o.file !== '-' ? o.file : undefined)
        const result = (await api.post(apiPath('/api/validate', project), { content, filename, stack: o.stack })) as {
          violations: { severity: string }[]
        }
        const failing = result.violations.filter((v) => FAIL_ON[o.failOn]!.includes(v.severity)).length
        return failing ? new CheckFailed(`${failing} violation(s) at or above ${o.failOn}`, result) : result
      }),
    )
}

// `llm usage|summary|spend|record`: LLM token and cost tracking.
import { Option, type Command } from 'commander'
import { api, resolveConfig } from './client'
import { decimal, integer } from './input'
import { act } from './output'

export function llmCommands(program: Command): void {
  const llm = program.command('llm').description('LLM usage and cost tracking')

  llm
    .command('usage')
    .description('usage records, newest first; one filter applies: instance, else project, else session tag')
    .option('--instance <id>', 'instance id')
    .option('--project <project>')
    .option('--session-tag <tag>')
    .option('--from <time>', 'RFC 3339 lower bound')
    .option('--to <time>', 'RFC 3339 upper bound')
    .option('--limit <n>', 'how many (server default 50)', integer(1))
    .action(
      act((o: { instance?: string; project?: string; sessionTag?: string; from?: string; to?: string; limit?: number }) =>
        api.get('/api/llm/usage', { instance: o.instance, project: o.project, session_tag: o.sessionTag, from: o.from, to: o.to, limit: o.limit }),
      ),
    )

  llm
    .command('summary')
    .description('token and cost totals per group; unpriced_models counts, per model the price table (--llm-prices) lacks, the records it costed at 0')
    .addOption(new Option('--by <group>', 'group by (server default project)').choices(['instance', 'project', 'model', 'session_tag']))
    .option('--from <time>', 'RFC 3339 lower bound')
    .option('--to <time>', 'RFC 3339 upper bound')
    .action(act((o: { by?: string; from?: string; to?: string }) => api.get('/api/llm/usage/summary', { group_by: o.by, from: o.from, to: o.to })))

  llm
    .command('spend')
    .description('spend over time: tokens and cost per hour or day, per instance, project or task')
    .addOption(new Option('--by <group>', 'group by (server default project)').choices(['instance', 'project', 'task']))
    .addOption(new Option('--step <step>', 'bucket size (server default day)').choices(['hour', 'day']))
    .option('--from <time>', 'RFC 3339 lower bound')
    .option('--to <time>', 'RFC 3339 upper bound')
    .action(act((o: { by?: string; step?: string; from?: string; to?: string }) => api.get('/api/llm/usage/buckets', { by: o.by, step: o.step, from: o.from, to: o.to })))

  llm
    .command('record')
    .description('record one LLM call (instance defaults to the registered one)')
    .requiredOption('--provider <provider>', 'e.g. anthropic')
    .requiredOption('--model <model>')
    .option('--tokens-in <n>', 'prompt tokens', integer(0))
    .option('--tokens-out <n>', 'completion tokens', integer(0))
    .option('--cost <usd>', 'cost in USD', decimal)
    .addOption(new Option('--request-type <type>').choices(['completion', 'embedding']))
    .option('--project <project>')
    .option('--session-tag <tag>')
    .option('--instance-id <id>')
    .action(
      act(
        (o: {
          provider: string
          model: string
          tokensIn?: number
          tokensOut?: number
          cost?: number
          requestType?: string
          project?: string
          sessionTag?: string
          instanceId?: string
        }) =>
          api.post('/api/llm/usage', {
            provider: o.provider,
            model: o.model,
            tokens_in: o.tokensIn,
            tokens_out: o.tokensOut,
            cost_usd: o.cost,
            request_type: o.requestType,
            project: o.project,
            session_tag: o.sessionTag,
            instance_id: o.instanceId ?? resolveConfig().instanceId ?? undefined,
          }),
      ),
    )
}

// `contract ...`: API contracts (JSON Schema per endpoint), checked by the server's validator.
import { Option, type Command } from 'commander'
import { api, apiPath } from './client'
import { parseJson, projectPath, readJsonPayload, withPayload, type PayloadOptions } from './input'
import { putJsonDocument } from './specs'
import { act } from './output'

const contractPath = (path: string, ...rest: string[]) => {
  const { project, name } = projectPath(path)
  return [apiPath('/api/contracts', project, name), ...rest].join('/')
}

export function contractCommands(program: Command): void {
  const contract = program.command('contract').description('API contracts: JSON Schemas per endpoint (<project>/<name>)')

  withPayload(contract.command('set'), 'the contract JSON')
    .description('write a contract {kind: "contract", version, base_url?, endpoints: {"METHOD /path": {...}}}')
    .argument('<project/name>')
    .action(
      act((path: string, o: PayloadOptions) => putJsonDocument(contractPath(path), o)),
    )

  contract
    .command('get')
    .description('print a contract')
    .argument('<project/name>')
    .action(act((path: string) => api.get(contractPath(path))))

  withPayload(contract.command('validate'), 'the payload JSON')
    .description('check a payload against one endpoint of the contract')
    .argument('<project/name>')
    .requiredOption('--endpoint <endpoint>', 'e.g. "POST /users"')
    .addOption(new Option('--direction <direction>', 'which schema to check against').choices(['request', 'response', 'query']).default('request'))
    .action(
      act(async (path: string, o: PayloadOptions & { endpoint: string; direction: string }) => {
        const target = contractPath(path, 'validate')
        const payload = await readJsonPayload(o)
        return api.post(target, { endpoint: o.endpoint, direction: o.direction, payload })
      }),
    )

  contract
    .command('test')
    .description('call the live endpoint and check status and response against the contract')
    .argument('<project/name>')
    .requiredOption('--endpoint <endpoint>', 'e.g. "GET /users"')
    .option('--base-url <url>', "overrides the contract's base_url")
    .option('--test-data <json>', 'request data to send')
    .action(
      act((path: string, o: { endpoint: string; baseUrl?: string; testData?: string }) => {
        const target = contractPath(path, 'test')
        const body: Record<string, unknown> = { endpoint: o.endpoint }
        if (o.baseUrl !== undefined) body.base_url = o.baseUrl
        if (o.testData !== undefined) body.test_data = parseJson(o.testData, '--test-data')
        return api.post(target, body)
      }),
    )
}

// `contract ...`: API contracts (JSON Schema per endpoint), checked by the server's validator.
import { Option, type Command } from 'commander'
import { api, apiPath, request } from './client'
import { integer, parseJson, projectPath, readJsonPayload, withPayload, type PayloadOptions } from './input'
import { putJsonDocument } from './specs'
import { act, CheckFailed, printRawResponse } from './output'
import { versionCommands } from './versions'

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
    .command('list')
    .description("a project's contracts: versions, endpoints and whether each compiles (no documents)")
    .argument('<project>')
    .action(act((project: string) => api.get(apiPath('/api/contracts', project))))

  contract
    .command('get')
    .description('print a contract as stored')
    .argument('<project/name>')
    .option('--version <n>', 'read this older version', integer(1))
    .action(async (path: string, o: { version?: number }) =>
      printRawResponse(await request('GET', contractPath(path), { query: { version: o.version } })),
    )

  contract
    .command('delete')
    .description('delete a contract')
    .argument('<project/name>')
    .option('--if-version <n>', 'only delete if the current version is n', integer(0))
    .action(act((path: string, o: { ifVersion?: number }) => api.delete(contractPath(path), { if_version: o.ifVersion })))

  versionCommands(contract, '<project/name>', (path) => contractPath(path))

  withPayload(contract.command('validate'), 'the payload JSON')
    .description('check a payload against one endpoint of the contract; exit 3 when it is not valid')
    .argument('<project/name>')
    .requiredOption('--endpoint <endpoint>', 'e.g. "POST /users"')
    .addOption(new Option('--direction <direction>', 'which schema to check against').choices(['request', 'response', 'query']).default('request'))
    .action(
      act(async (path: string, o: PayloadOptions & { endpoint: string; direction: string }) => {
        const target = contractPath(path, 'validate')
        const payload = await readJsonPayload(o)
        const result = (await api.post(target, { endpoint: o.endpoint, direction: o.direction, payload })) as { valid: boolean }
        return result.valid ? result : new CheckFailed(`payload does not match the ${o.direction} schema of ${o.endpoint}`, result)
      }),
    )

  contract
    .command('test')
    .description('call the live endpoint and check status and response against the contract; exit 3 when it fails')
    .argument('<project/name>')
    .requiredOption('--endpoint <endpoint>', 'e.g. "GET /users"')
    .option('--base-url <url>', "overrides the contract's base_url")
    .option('--test-data <json>', 'request data to send')
    .action(
      act(async (path: string, o: { endpoint: string; baseUrl?: string; testData?: string }) => {
        const target = contractPath(path, 'test')
        const body: Record<string, unknown> = { endpoint: o.endpoint }
        if (o.baseUrl !== undefined) body.base_url = o.baseUrl
        if (o.testData !== undefined) body.test_data = parseJson(o.testData, '--test-data')
        const result = (await api.post(target, body)) as { pass: boolean }
        return result.pass ? result : new CheckFailed(`contract test of ${o.endpoint} failed`, result)
      }),
    )
}

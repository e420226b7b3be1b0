// `specs ...`: per-project named JSON documents, addressed as <project>/<name>.
import type { Command } from 'commander'
import { api, apiPath, request, type Query } from './client'
import { integer, parseJson, projectPath, readPayload, withPayload, type PayloadOptions } from './input'
import { act, printRawResponse } from './output'
import { versionCommands } from './versions'

/** PUT of a JSON document given by --data / --file; inline --data is checked locally first. Shared with contracts. */
export async function putJsonDocument(target: string, o: PayloadOptions, query: Query = {}): Promise<unknown> {
  const value = (await readPayload(o))!
  if (o.data !== undefined) parseJson(value, '--data')
  const res = await request('PUT', target, { body: value, headers: { 'content-type': 'application/json' }, query })
  return res.json()
}

const specPath = (path: string) => {
  const { project, name } = projectPath(path)
  return apiPath('/api/specs', project, name)
}

export function specsCommands(program: Command): void {
  const specs = program.command('specs').description('per-project JSON specs (<project>/<name>)')

  specs
    .command('list')
    .description("a project's specs (names and versions, no data)")
    .argument('<project>')
    .action(act((project: string) => api.get(apiPath('/api/specs', project))))

  specs
    .command('get')
    .description('print the spec JSON as stored')
    .argument('<project/name>')
    .option('--version <n>', 'read this older version', integer(1))
    .action(async (path: string, o: { version?: number }) => printRawResponse(await request('GET', specPath(path), { query: { version: o.version } })))

  withPayload(specs.command('set'), 'the spec JSON')
    .description('write a spec (JSON, at most 10 MB)')
    .argument('<project/name>')
    .option('--if-version <n>', 'only write if the current version is n (0: only if new)', integer(0))
    .action(
      act((path: string, o: PayloadOptions & { ifVersion?: number }) => putJsonDocument(specPath(path), o, { if_version: o.ifVersion })),
    )

  specs
    .command('delete')
    .description('delete a spec')
    .argument('<project/name>')
    .option('--if-version <n>', 'only delete if the current version is n', integer(0))
    .action(act((path: string, o: { ifVersion?: number }) => api.delete(specPath(path), { if_version: o.ifVersion })))

  versionCommands(specs, '<project/name>', specPath)
}

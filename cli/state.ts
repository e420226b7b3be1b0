// `state ...`: the versioned key/value store. `get` writes the raw value to stdout, byte for byte.
import type { Command } from 'commander'
import { api, apiPath, request } from './client'
import { watchState } from './watch'
import { durationArg, integer, parseJson, readPayload, withPayload, type PayloadOptions } from './input'
import { act, printRawResponse } from './output'
import { versionCommands } from './versions'

const keyPath = (key: string) => apiPath('/api/state', key)

/** JSON content types get their --data checked locally, so a typo fails before it is stored. */
const isJsonType = (contentType: string | undefined) => contentType === undefined || /^application\/json\b/i.test(contentType)

export function stateCommands(program: Command): void {
  const state = program.command('state').description('versioned key/value store (keys may contain slashes)')

  state
    .command('list')
    .description('every key with its version, content type and update time')
    .action(act(() => api.get('/api/state')))

  state
    .command('get')
    .description('print the raw value exactly as stored (binary-safe); --pretty reformats JSON values')
    .argument('<key>')
    .option('--version <n>', 'read this older version', integer(1))
    .action(async (key: string, o: { version?: number }) => {
      await printRawResponse(await request('GET', keyPath(key), { query: { version: o.version } }))
    })

  withPayload(state.command('set'), 'the value')
    .description('write a value (--data inline or --file, any bytes, at most 10 MB)')
    .argument('<key>')
    .option('--content-type <type>', 'stored with the value (server default application/json)')
    .option('--if-version <n>', 'only write if the current version is n (0: only if the key is new)', integer(0))
    .action(
      act(async (key: string, o: PayloadOptions & { contentType?: string; ifVersion?: number }) => {
        const value = (await readPayload(o))!
        if (o.data !== undefined && isJsonType(o.contentType)) parseJson(value, '--data', '; for other formats pass --content-type')
        const headers: Record<string, string> = o.contentType ? { 'content-type': o.contentType } : {}
        const res = await request('PUT', keyPath(key), { body: value, headers, query: { if_version: o.ifVersion } })
        return res.json()
      }),
    )

  state
    .command('delete')
    .description('delete a key and its history')
    .argument('<key>')
    .option('--if-version <n>', 'only delete if the current version is n', integer(0))
    .action(act((key: string, o: { ifVersion?: number }) => api.delete(keyPath(key), { if_version: o.ifVersion })))

  versionCommands(state, '<key>', keyPath)

  state
    .command('rollback')
    .description('store version n again as a new version')
    .argument('<key>')
    .requiredOption('--version <n>', 'version to restore', integer(1))
    .action(act((key: string, o: { version: number }) => api.post(keyPath(key), undefined, { rollback: o.version })))

  state
    .command('watch')
    .description('wait until the value changes (or the key is created), then print it raw; nothing printed when --timeout passes')
    .argument('<key>')
    .option('--timeout <duration>', 'give up after this long (requests of at most 60s are chained)', durationArg, 60_000)
    .option('--etag <etag>', 'the version you have (default: the current one; * waits for creation)')
    .action((key: string, o: { timeout: number; etag?: string }) => watchState(key, o))
}

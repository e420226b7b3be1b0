// `config set|show` (./settings.json) and `status` (is the server there, and who am I to it).
import { Argument, type Command } from 'commander'
import { normalizeServer, requestJson, resolveConfig, updateSettings } from './client'
import { act, ServerError } from './output'

export function configCommands(program: Command): void {
  const config = program.command('config').description('read and write ./settings.json (env SERVICE_SERVER / SERVICE_TOKEN override it)')

  config
    .command('set')
    .description('save the server URL or the API token; an empty token removes it')
    .addArgument(new Argument('<key>', 'setting').choices(['server', 'token']))
    .argument('<value>', 'new value')
    .action(
      act((key: 'server' | 'token', value: string) => {
        if (key === 'server') {
          const server = normalizeServer(value)
          return { server, file: updateSettings({ server }) }
        }
        // The token is a secret: confirm it is set, never echo it.
        const file = updateSettings({ token: value === '' ? undefined : value })
        return { token: value === '' ? 'removed' : 'set', file }
      }),
    )

  config
    .command('show')
    .description('the effective configuration and where each value comes from (token masked)')
    .action(
      act(() => {
        const c = resolveConfig()
        return {
          server: c.server,
          server_source: c.sources.server,
          token: c.token ? 'set' : null,
          token_source: c.sources.token,
          instance_id: c.instanceId,
          file: c.file,
        }
      }),
    )

  program
    .command('status')
    .description('server health, plus service metrics when the server offers them')
    .action(
      act(async () => {
        const { server, instanceId } = resolveConfig()
        const health = (await requestJson('GET', '/health')) as Record<string, unknown>
        const result: Record<string, unknown> = { server, ...health }
        // /health needs no token but /api/metrics does, so status also tells whether the token works.
        try {
          result.metrics = await requestJson('GET', '/api/metrics')
        } catch (err) {
          if (!(err instanceof ServerError && err.status === 404)) throw err
        }
        if (instanceId) result.instance_id = instanceId
        return result
      }),
    )
}

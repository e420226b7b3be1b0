// `config set|show` (settings.json, and where the identity lives) and `status` (is
// the server there, and who am I to it).
import { Argument, type Command } from 'commander'
import { normalizeServer, PRECEDENCE, requestJson, resolveConfig, updateSettings } from './client'
import { act, ServerError } from './output'

export function configCommands(program: Command): void {
  const config = program
    .command('config')
    .description(
      `read and write settings.json {server, token}: the nearest from here up to the git root, else ./settings.json. Precedence: ${PRECEDENCE}. What the CLI learns about itself (instance id and token, task claims) lives in .muster/ at the git root (ignored by git), or outside a repository in ~/.config/muster/ (XDG_CONFIG_HOME)`,
    )

  config
    .command('set')
    .description('save the server URL or the API token in settings.json (the nearest, else ./settings.json); an empty token removes it')
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
    .description(`the effective configuration, where each value comes from (token masked) and where the identity lives. Precedence: ${PRECEDENCE}`)
    .action(
      act(() => {
        const c = resolveConfig()
        return {
          server: c.server,
          server_source: c.sources.server,
          server_from: c.from.server,
          token: c.token ? 'set' : null,
          token_source: c.sources.token,
          token_from: c.from.token,
          instance_id: c.instanceId,
          instance_name: c.identity.name ?? null,
          file: c.file,
          identity_file: c.identityFile,
          precedence: PRECEDENCE,
        }
      }),
    )

  program
    .command('status')
    .description('server health, plus service metrics and the role of the token when the server offers them')
    .action(
      act(async () => {
        const { server, instanceId } = resolveConfig()
        const health = (await requestJson('GET', '/health')) as Record<string, unknown>
        const result: Record<string, unknown> = { server, ...health }
        // /health needs no token but /api/metrics does, so status also tells whether the token works.
        const optional = async (path: string, ignore: (status: number) => boolean) => {
          try {
            return await requestJson('GET', path)
          } catch (err) {
            if (!(err instanceof ServerError && ignore(err.status))) throw err
          }
        }
        result.metrics = await optional('/api/metrics', (status) => status === 404)
        // The role is a bonus: a server without /api/whoami, or one refusing a stale instance token there, still has a status.
        const me = (await optional('/api/whoami', () => true)) as { role?: string } | undefined
        if (me?.role) result.role = me.role
        if (instanceId) result.instance_id = instanceId
        return result
      }),
    )
}

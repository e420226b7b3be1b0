// `token create|list|revoke` (the admin's: a credential per agent, or a read-only
// one for people and dashboards) and `whoami` (what the server takes this caller for).
import { Argument, Option, type Command } from 'commander'
import { api, apiPath } from './client'
import { durationArg } from './input'
import { act } from './output'

export function tokenCommands(program: Command): void {
  const token = program.command('token').description('API tokens with a role (agent or viewer); needs the admin token (the server\'s --auth-token)')

  token
    .command('create')
    .description('make a token; its secret is printed in this answer only (the server keeps a hash): hand it to the agent as MUSTER_TOKEN or --token')
    .argument('<name>', 'who holds it, 1 … 100 characters, unique among live tokens')
    .addOption(new Option('--role <role>', 'agent: what agents do; viewer: read-only').choices(['agent', 'viewer']).makeOptionMandatory())
    .option('--ttl <duration>', 'refused after this long (1s … 7d); default: until revoked', durationArg)
    .action(act((name: string, o: { role: string; ttl?: number }) => api.post('/api/tokens', { name, role: o.role, ttl_ms: o.ttl })))

  token
    .command('list')
    .description('live tokens with their role, expiry and last use (never the secret)')
    .action(act(() => api.get('/api/tokens')))

  token
    .command('revoke')
    .description('revoke a token: refused from the next request on')
    .addArgument(new Argument('<id>', 'token id (from `token list`)'))
    .action(act((id: string) => api.delete(apiPath('/api/tokens', id))))

  program
    .command('whoami')
    .description("the caller as the server sees it: the token's role and name, and the instance this directory acts as")
    .action(act(() => api.get('/api/whoami')))
}

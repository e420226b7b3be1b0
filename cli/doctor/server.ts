// Doctor: the configuration, the server, and the token the CLI sends with its role.
import type { Check, Finding } from './check'

export const serverChecks: Check = async (ctx) => {
  if (!ctx.config) return [{ status: 'fail', check: 'config', message: ctx.configError ?? 'the configuration cannot be read', fix: 'fix or move that file, or pass --server / set MUSTER_SERVER' }]
  const { server, from } = ctx.config
  const answer = await ctx.server()
  if (!answer.reached)
    return [
      {
        status: 'fail',
        check: 'server',
        message: `cannot reach ${server} (from ${from.server}): ${answer.error}`,
        fix: `start the server there, or point the CLI at it (--server, MUSTER_SERVER or \`muster config set server URL\`)`,
      },
    ]
  const out: Finding[] = [{ status: 'ok', check: 'server', message: `${server} answers (from ${from.server})` }]
  const who = answer.whoami
  if (!who) {
    const fix = ctx.config.token
      ? `the token from ${from.token} is not a live token of this server: set SERVICE_TOKEN (or MUSTER_TOKEN) to one (\`muster token create NAME --role agent\` as the admin)`
      : 'the server checks tokens and none is set: export SERVICE_TOKEN=<an agent token> (`muster token create NAME --role agent` as the admin)'
    out.push({ status: 'fail', check: 'token', message: `${server} answered ${answer.status}: ${answer.error}`, fix })
  } else if (!who.auth) out.push({ status: 'ok', check: 'token', message: 'the server checks no tokens (auth off): every caller acts as admin' })
  else {
    const token = who.token ? `token "${who.token.name}"` : 'the admin token'
    const role = `${token} from ${from.token}, role ${who.role}`
    if (who.role === 'viewer') out.push({ status: 'fail', check: 'token', message: `${role}: a viewer can read but not reserve, register or answer hooks`, fix: 'use an agent token for agents (`muster token create NAME --role agent`)' })
    else out.push({ status: 'ok', check: 'token', message: role })
  }
  return out
}

// Doctor: which instance the CLI acts as here, and whether the server still knows it.
import type { Check } from './check'

export const identityCheck: Check = async (ctx) => {
  const cfg = ctx.config
  if (!cfg) return []
  if (cfg.identityChoices)
    return [
      {
        status: 'warn',
        check: 'identity',
        message: `several agents' identities here (${cfg.identityChoices.join(', ')}) and nothing chooses one: a command that acts as an instance exits 2`,
        fix: `set MUSTER_AGENT to one of them (a hooked session sets it itself), or MUSTER_INSTANCE_TOKEN`,
      },
    ]
  if (!cfg.instanceToken)
    return [
      {
        status: 'ok',
        check: 'identity',
        message: `none in ${cfg.identityFile}: commands run here act as no instance (a hooked agent session sets its own up; by hand: \`muster register NAME\`)`,
      },
    ]
  const id = cfg.identity.name ? `${cfg.identity.name} (${cfg.instanceId ?? 'no id saved'})` : (cfg.instanceId ?? 'an instance')
  const from = ctx.env.MUSTER_INSTANCE_TOKEN ? 'MUSTER_INSTANCE_TOKEN' : cfg.identityFile
  const answer = await ctx.server(true)
  if (!answer.reached) return [{ status: 'warn', check: 'identity', message: `${id} from ${from}, not confirmed: the server cannot be reached` }]
  const instance = answer.whoami?.instance
  if (!instance)
    return [
      {
        status: 'fail',
        check: 'identity',
        message: `${id} from ${from} is not registered on the server any more (ended or released)`,
        fix: '`muster register NAME` again (or start a new agent session, whose hooks register it)',
      },
    ]
  return [{ status: 'ok', check: 'identity', message: `acts as ${instance.name} (${instance.id}), from ${from}` }]
}

// `register`, `activate`, `heartbeat` and `instances ...`: the instance registry.
// `register` saves the instance's name, id and token as this directory's identity
// (cli/identity.ts); from then on every command from here or below sends
// X-Instance-Token, and `register` of the same name resumes that instance.
import type { Command } from 'commander'
import { api, apiPath, requestJson, resolveConfig, updateIdentity } from './client'
import { agentFile, ambiguousIdentity, readIdentity, type Identity } from './identity'
import { commaList, durationArg } from './input'
import { act, ClientError, note, printJson, ServerError, UsageError } from './output'

/** An explicit id, else the instance saved by `register`. */
function instanceId(given: string | undefined): string {
  const cfg = given ? null : resolveConfig()
  if (cfg?.identityChoices) ambiguousIdentity(cfg.identityChoices)
  const id = given ?? cfg!.instanceId
  if (!id) throw new UsageError('no instance id given and none saved: run `register <name>` first or pass <id>')
  return id
}

/**
 * One heartbeat, or one every `everyMs` until SIGINT/SIGTERM (exit 0). In the loop an
 * unreachable server is noted and retried at the next beat; an error answer (the
 * instance was deleted, a bad token) ends it with exit 1.
 */
async function heartbeatLoop(id: string, everyMs?: number): Promise<void> {
  const beat = () => api.post(apiPath('/api/instances', id, 'heartbeat'))
  if (!everyMs) return printJson(await beat())
  let stop: () => void = () => {}
  const stopped = new Promise<void>((resolve) => (stop = resolve))
  process.once('SIGINT', stop)
  process.once('SIGTERM', stop)
  try {
    for (;;) {
      try {
        printJson(await beat())
      } catch (err) {
        if (!(err instanceof ClientError)) throw err
        note(`${err.message}; next heartbeat in ${everyMs} ms`)
      }
      let timer: Timer | undefined
      const next = await Promise.race([stopped.then(() => 'stop'), new Promise((r) => (timer = setTimeout(r, everyMs, 'beat')))])
      clearTimeout(timer)
      if (next === 'stop') return
    }
  } finally {
    process.off('SIGINT', stop)
    process.off('SIGTERM', stop)
  }
}

interface RegisterOptions {
  workspace?: string
  intent?: string
  stack?: string
  capabilities?: string[]
  new?: boolean
}

type Registered = Record<string, unknown> & { id: string; token: string; resumed?: boolean; warning?: unknown }

/** The saved instance's name; an identity from an old settings.json has none saved, so the server is asked. */
async function savedName(saved: Identity): Promise<string | undefined> {
  if (saved.name || !saved.instance_id) return saved.name
  try {
    return ((await api.get(apiPath('/api/instances', saved.instance_id))) as { name?: string }).name
  } catch (err) {
    if (err instanceof ServerError) return undefined
    throw err
  }
}

/**
 * Registers, presenting the saved instance's token when it has this name, so the
 * server resumes it rather than making a second instance of the same name (with an
 * agent token the server resumes it anyway). In a repository the identity is the
 * name's own file, `.muster/agents/<name>.json`: agents sharing a checkout keep theirs.
 */
async function register(name: string, o: RegisterOptions): Promise<Record<string, unknown>> {
  const cfg = resolveConfig()
  const own = agentFile(name)
  const ownSaved = own ? readIdentity(own) : null
  // The name's file; else the identity this command acts as (a token from the environment, the old file).
  const saved: Identity = ownSaved ?? (cfg.identityChoices ? {} : cfg.identity)
  const resume = !o.new && (await savedName(saved)) === name && !!saved.instance_token && (!saved.server || saved.server === cfg.server)
  const json = { name, workspace: o.workspace, intent: o.intent, stack: o.stack, ...(o.new ? { new: true } : {}) }
  const send = (instanceToken: string | null) => requestJson('POST', '/api/instances/register', { json, instanceToken }) as Promise<Registered>
  let inst: Registered
  try {
    inst = await send(resume ? saved.instance_token! : null)
  } catch (err) {
    // The saved instance is gone (deregistered, or it belongs to another token): a fresh one.
    if (!(resume && err instanceof ServerError && (err.status === 403 || err.status === 404))) throw err
    note(`the saved instance ${saved.instance_id} cannot be resumed (${err.status}); registering a new one`)
    inst = await send(null)
  }
  if (typeof inst.warning === 'string') note(inst.warning)
  const same = inst.id === saved.instance_id
  updateIdentity({ name, server: cfg.server, instance_id: inst.id, instance_token: inst.token, claims: same ? saved.claims : undefined }, own ?? cfg.identityFile)
  if (o.capabilities?.length) {
    const caps = (await api.post(apiPath('/api/instances', inst.id, 'capabilities'), { capabilities: o.capabilities })) as { capabilities: string[] }
    inst.capabilities = caps.capabilities
  }
  // A resumed instance's token is saved already (inside a hooked session, the session's own):
  // not printed, since a model that ran the command would send it to its provider.
  if (inst.resumed) {
    const { token: _saved, ...shown } = inst
    return shown
  }
  return inst
}

/** Forgets this directory's instance and its claims. */
const forget = () => updateIdentity({ name: undefined, server: undefined, instance_id: undefined, instance_token: undefined, claims: undefined })

export function instanceCommands(program: Command): void {
  program
    .command('register')
    .description(
      "register this agent and save its id and token as its identity: .muster/agents/<name>.json at the git root (ignored by git; outside a repository under ~/.config/muster/). Later commands from here or below send its X-Instance-Token (with several agents here, the one MUSTER_AGENT names). Run again with the same name, it resumes that instance (same id, its locks, reservations and claims kept); inside a hooked agent session that is the session's own instance.",
    )
    .argument('<name>', 'instance name')
    .option('--workspace <workspace>', 'workspace (the project it works on)')
    .option('--intent <intent>', 'current task')
    .option('--stack <stack>', 'technology stack, e.g. react')
    .option('--capabilities <list>', 'comma-separated capabilities', commaList)
    .option('--new', 'a fresh instance, even when this directory or this agent token holds one of that name')
    .action(act(register))

  program
    .command('activate')
    .description('mark an instance active (default: the registered one)')
    .argument('[id]')
    .action(act((id?: string) => api.post(apiPath('/api/instances', instanceId(id), 'activate'))))

  program
    .command('heartbeat')
    .description(
      'refresh last_seen so the instance does not go stale (default: the registered one); with --every, again every D until killed (a side loop). Any other command by a registered instance counts as a heartbeat too.',
    )
    .argument('[id]')
    .option('--every <duration>', 'repeat every D, e.g. 30s, 2m (one JSON line per beat)', durationArg)
    .action(async (id: string | undefined, o: { every?: number }) => heartbeatLoop(instanceId(id), o.every))

  program
    .command('intent')
    .description('set the current task of an instance (default: the registered one); also a heartbeat')
    .argument('<text>', 'what the instance works on now')
    .argument('[id]')
    .action(act((text: string, id?: string) => api.put(apiPath('/api/instances', instanceId(id), 'intent'), { intent: text })))

  program
    .command('capabilities')
    .description('replace the capabilities of an instance (default: the registered one)')
    .argument('<list>', "comma-separated, e.g. review,tests ('' for none)")
    .argument('[id]')
    .action(
      act((list: string, id?: string) => api.post(apiPath('/api/instances', instanceId(id), 'capabilities'), { capabilities: commaList(list) })),
    )

  const instances = program.command('instances').description('discover registered instances')

  instances
    .command('list')
    .description('instances, optionally filtered')
    .option('--name <name>')
    .option('--workspace <workspace>')
    .option('--stack <stack>')
    .option('--capability <capability>')
    .action(act((o: { name?: string; workspace?: string; stack?: string; capability?: string }) => api.get('/api/instances', { ...o })))

  instances
    .command('get')
    .description('one instance')
    .argument('<id>')
    .action(act((id: string) => api.get(apiPath('/api/instances', id))))

  instances
    .command('stale')
    .description('instances without a heartbeat within the stale timeout')
    .action(act(() => api.get('/api/instances/stale')))

  instances
    .command('check')
    .description('run the liveness check now: marks instances without a recent heartbeat stale')
    .action(act(() => api.post('/api/liveness/check')))

  instances
    .command('delete')
    .description("deregister an instance (and forget it, when it is this directory's own)")
    .argument('<id>')
    .action(
      act(async (id: string) => {
        const result = await api.delete(apiPath('/api/instances', id))
        if (resolveConfig().instanceId === id) forget()
        return result
      }),
    )
}

// `register`, `activate`, `heartbeat` and `instances ...`: the instance registry.
// `register` saves the new instance's id and token in ./settings.json; from then
// on every command from this directory sends X-Instance-Token.
import type { Command } from 'commander'
import { api, apiPath, resolveConfig, updateSettings } from './client'
import { commaList, durationArg } from './input'
import { act, ClientError, note, printJson, UsageError } from './output'

/** An explicit id, else the instance saved by `register`. */
function instanceId(given: string | undefined): string {
  const id = given ?? resolveConfig().instanceId
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

export function instanceCommands(program: Command): void {
  program
    .command('register')
    .description('register this agent; saves its id and token to ./settings.json (later commands send X-Instance-Token)')
    .argument('<name>', 'instance name')
    .option('--workspace <workspace>', 'workspace (the project it works on)')
    .option('--intent <intent>', 'current task')
    .option('--stack <stack>', 'technology stack, e.g. react')
    .option('--capabilities <list>', 'comma-separated capabilities', commaList)
    .action(
      act(async (name: string, o: { workspace?: string; intent?: string; stack?: string; capabilities?: string[] }) => {
        const inst = (await api.post('/api/instances/register', {
          name,
          workspace: o.workspace,
          intent: o.intent,
          stack: o.stack,
        })) as Record<string, unknown> & { id: string; token: string }
        updateSettings({ instance_id: inst.id, instance_token: inst.token })
        if (o.capabilities?.length) {
          const caps = (await api.post(apiPath('/api/instances', inst.id, 'capabilities'), { capabilities: o.capabilities })) as {
            capabilities: string[]
          }
          inst.capabilities = caps.capabilities
        }
        return inst
      }),
    )

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
    .description('deregister an instance (forgets it in ./settings.json if it is the registered one)')
    .argument('<id>')
    .action(
      act(async (id: string) => {
        const result = await api.delete(apiPath('/api/instances', id))
        if (resolveConfig().instanceId === id) updateSettings({ instance_id: undefined, instance_token: undefined })
        return result
      }),
    )
}

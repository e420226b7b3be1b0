// `lock acquire|release|list`: named mutexes and semaphores, held by the
// instance saved by `register` (its X-Instance-Token goes with every request).
import type { Command } from 'commander'
import { api, apiPath } from './client'
import { durationArg, integer } from './input'
import { act } from './output'

const lockPath = (name: string) => apiPath('/api/locks', name)

export function lockCommands(program: Command): void {
  const lock = program.command('lock').description('named locks (mutexes, semaphores with --limit); needs `register` first')

  lock
    .command('acquire')
    .description('take the lock (or renew it when this instance holds it); exit 1 with the holders when it is held')
    .argument('<name>', 'lock name (may contain /)')
    .option('--ttl <duration>', 'released automatically after this long unless renewed (1s … 7d)', durationArg)
    .option('--wait <duration>', 'wait in line up to this long (at most 60s) for the lock', durationArg)
    .option('--limit <n>', 'holders at once (semaphore), set by the first grant', integer(1))
    .option('--reason <text>', 'shown to whoever finds the lock held')
    .action(
      act((name: string, o: { ttl?: number; wait?: number; limit?: number; reason?: string }) =>
        api.put(lockPath(name), { ttl_ms: o.ttl, wait_ms: o.wait, limit: o.limit, reason: o.reason }),
      ),
    )

  lock
    .command('release')
    .description('release the lock held by this instance; --force releases every holder')
    .argument('<name>')
    .option('--force', 'release whoever holds it')
    .action(act((name: string, o: { force?: boolean }) => api.delete(lockPath(name), { force: o.force ? 1 : undefined })))

  lock
    .command('get')
    .description('one held lock with its holders; 404 when nobody holds it')
    .argument('<name>')
    .action(act((name: string) => api.get(lockPath(name))))

  lock
    .command('list')
    .description('held locks with their holders (name, liveness, fence, expiry)')
    .option('--prefix <prefix>', 'only names starting with this')
    .action(act((o: { prefix?: string }) => api.get('/api/locks', { prefix: o.prefix })))
}

// `reserve`, `release`, `reservations`, `check`: path reservations. `check` is
// made for git pre-commit hooks: exit 1 and a readable list on stderr when a
// path is reserved by someone else.
import type { Command } from 'commander'
import { api, apiPath, request } from './client'
import { durationArg } from './input'
import { EXIT, Exit, act, note, printJson, ServerError, UsageError } from './output'

export interface Conflict {
  path: string
  held_path: string
  reservation_id: string
  instance_name: string
  instance_id: string
  instance_status: string
  exclusive: boolean
  expires_at: string | null
  reason: string | null
}

/** A file name as a pattern that matches only itself (a staged `app/[id].tsx` is a file, not a class). */
export const literal = (path: string) => path.replace(/[\\*?[\]{}()!@+]/g, '\\$&')

function describe(c: Conflict): string {
  const who = `${c.instance_name || c.instance_id} (${c.instance_status})`
  const until = c.expires_at ? `, until ${c.expires_at}` : ''
  const why = c.reason ? `: ${c.reason}` : ''
  return `  ${c.path}  reserved as ${c.held_path} by ${who}${c.exclusive ? '' : ', shared'}${until}${why}  [${c.reservation_id}]`
}

async function readLines(): Promise<string[]> {
  const text = await Bun.stdin.text()
  return text.split(/\r?\n/).map((l) => l.trim()).filter(Boolean)
}

export function reservationCommands(program: Command): void {
  program
    .command('reserve')
    .description('reserve paths of a project for this instance, all or nothing; exit 1 naming the conflicts')
    .argument('<project>')
    .argument('<glob...>', 'paths relative to the project root (picomatch globs: *, **, ?, [..], {a,b})')
    .option('--shared', 'shared reservation: only exclusive ones conflict with it')
    .option('--ttl <duration>', 'released automatically after this long unless renewed', durationArg)
    .option('--reason <text>', 'shown to whoever runs into it')
    .action(
      act((project: string, paths: string[], o: { shared?: boolean; ttl?: number; reason?: string }) =>
        api.post('/api/reservations', { project, paths, exclusive: !o.shared, ttl_ms: o.ttl, reason: o.reason }),
      ),
    )

  program
    .command('release')
    .description('release a reservation of this instance; --force releases anyone\'s')
    .argument('<id>', 'reservation id')
    .option('--force', 'release it whoever holds it')
    .action(act((id: string, o: { force?: boolean }) => api.delete(apiPath('/api/reservations', id), { force: o.force ? 1 : undefined })))

  program
    .command('renew')
    .description('renew a reservation of this instance: expires this long from now')
    .argument('<id>', 'reservation id')
    .requiredOption('--ttl <duration>', 'new time to live', durationArg)
    .action(act((id: string, o: { ttl: number }) => api.post(apiPath('/api/reservations', id, 'renew'), { ttl_ms: o.ttl })))

  program
    .command('reservation')
    .description('one reservation; 404 when it is gone')
    .argument('<id>', 'reservation id')
    .action(act((id: string) => api.get(apiPath('/api/reservations', id))))

  program
    .command('reservations')
    .description('reservations, newest first')
    .option('--project <project>', 'only this project')
    .option('--instance <id>', 'only this instance\'s')
    .action(act((o: { project?: string; instance?: string }) => api.get('/api/reservations', { project: o.project, instance_id: o.instance })))

  program
    .command('check')
    .description('are these paths reserved by another instance? exit 1 with a readable list on stderr (for pre-commit hooks)')
    .argument('<project>')
    .argument('[path...]', 'paths or globs')
    .option('--stdin', 'also read file names from stdin, one per line (taken literally, not as globs)')
    .action(async (project: string, given: string[], o: { stdin?: boolean }) => {
      const paths = [...given, ...(o.stdin ? (await readLines()).map(literal) : [])]
      if (!paths.length) {
        if (o.stdin) return printJson({ ok: true, conflicts: [] }) // nothing staged
        throw new UsageError('give at least one path (or --stdin)')
      }
      try {
        printJson(await (await request('POST', '/api/reservations/check', { json: { project, paths } })).json())
      } catch (err) {
        if (!(err instanceof ServerError) || err.status !== 409) throw err
        const conflicts = (err.body as { conflicts: Conflict[] }).conflicts
        note(`${conflicts.length} conflict${conflicts.length === 1 ? '' : 's'} in ${project}: reserved by another instance`)
        process.stderr.write(conflicts.map(describe).join('\n') + '\n')
        throw new Exit(EXIT.server)
      }
    })
}

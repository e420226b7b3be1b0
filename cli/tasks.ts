// `task add|claim|ack|nack|extend|note|get|cancel|retry|list`: the task queue. `claim`
// saves the claim id in the CLI's identity (.muster/ at the git root) beside the
// instance token (under `claims`, by task id), so `ack`, `nack` and `extend` need only the task id; a claim that gets
// nothing says why on stderr. `note` leaves context for whoever takes the task next
// (as the registered instance).
import type { Command } from 'commander'
import { api, apiPath, readSettings, updateSettings } from './client'
import { durationArg, integer, jsonFlag } from './input'
import { act, note, ServerError, UsageError } from './output'
import { explainEmptyClaim } from './claim-hint'

interface Claimed {
  id: number
  claim_id: string
}

const taskPath = (id: string, action?: string) => apiPath('/api/tasks', ...(action ? [id, action] : [id]))

/** --claim if given, else the claim id `task claim` saved for this task. */
function claimOf(id: string, given: string | undefined): string {
  const claim = given ?? readSettings().claims?.[id]
  if (!claim) throw new UsageError(`no claim saved for task ${id}: claim it with \`task claim <queue>\` or pass --claim <claim_id>`)
  return claim
}

function remember(id: string, claim: string | undefined): void {
  const claims = { ...readSettings().claims }
  if (claim === undefined) delete claims[id]
  else claims[id] = claim
  updateSettings({ claims: Object.keys(claims).length ? claims : undefined })
}

/** ack and nack end the claim: the saved id goes, also when the server says the claim was already lost. */
async function ending(id: string, send: () => Promise<unknown>): Promise<unknown> {
  try {
    const task = await send()
    remember(id, undefined)
    return task
  } catch (err) {
    if (err instanceof ServerError && err.status === 409) remember(id, undefined)
    throw err
  }
}

const ids = (values: string[]) =>
  values.map((v) => {
    if (!/^\d+$/.test(v)) throw new UsageError(`--depends-on: expected task ids, got '${v}'`)
    return Number(v)
  })

export function taskCommands(program: Command): void {
  const task = program.command('task').description('the task queue: add tasks, claim one (exactly one claimer), ack or nack it')

  task
    .command('add')
    .description('add a task to a queue (created on first use); prints the task')
    .argument('<queue>', 'letters, digits, "-", "_", "."')
    .requiredOption('--title <title>', 'what to do')
    .option('--payload <json>', 'any JSON value for the worker', jsonFlag)
    .option('--priority <n>', 'higher is claimed first (default 0)', integer(-1_000_000_000))
    .option('--depends-on <id...>', 'task ids of the same queue that must be done first')
    .option('--requires <capability...>', 'capabilities the claimer must have')
    .option('--max-attempts <n>', 'claims before the task fails (default 3)', integer(1))
    .option('--dedupe-key <key>', 'return the unfinished task with this key instead of adding one')
    .option('--project <project>', 'the project whose files the task will touch')
    .option('--path <glob...>', 'files of --project the task will touch (repeatable); a claim reserves them exclusively')
    .action(
      act(
        (
          queue: string,
          o: {
            title: string
            payload?: unknown
            priority?: number
            dependsOn?: string[]
            requires?: string[]
            maxAttempts?: number
            dedupeKey?: string
            project?: string
            path?: string[]
          },
        ) =>
          api.post(apiPath('/api/queues', queue, 'tasks'), {
            title: o.title,
            payload: o.payload,
            priority: o.priority,
            depends_on: o.dependsOn && ids(o.dependsOn),
            requires: o.requires,
            max_attempts: o.maxAttempts,
            dedupe_key: o.dedupeKey,
            project: o.project,
            paths: o.path,
          }),
      ),
    )

  task
    .command('claim')
    .description(
      'claim the next task of a queue (needs `register`); prints it, or null when none came in time (with the reason on stderr); saves its claim id',
    )
    .argument('<queue>')
    .option('--wait <duration>', 'hold up to this long for a task, e.g. 30s (at most 60s)', durationArg)
    .option('--visibility <duration>', 'requeue unless acked or extended within this, e.g. 10m', durationArg)
    .action(
      act(async (queue: string, o: { wait?: number; visibility?: number }) => {
        const claimed = (await api.post(apiPath('/api/queues', queue, 'claim'), { wait_ms: o.wait, visibility_ms: o.visibility })) as Claimed | null
        if (claimed) remember(String(claimed.id), claimed.claim_id)
        else {
          const why = await explainEmptyClaim(queue)
          if (why) note(why)
        }
        return claimed
      }),
    )

  task
    .command('ack')
    .description('finish a claimed task (done)')
    .argument('<id>')
    .option('--result <json>', 'any JSON value, stored with the task', jsonFlag)
    .option('--claim <claim_id>', 'default: the one saved by `task claim`')
    .action(
      act((id: string, o: { result?: unknown; claim?: string }) =>
        ending(id, () => api.post(taskPath(id, 'ack'), { claim_id: claimOf(id, o.claim), result: o.result })),
      ),
    )

  task
    .command('nack')
    .description('give a claimed task back: ready again (or failed when its attempts are spent)')
    .argument('<id>')
    .option('--error <message>', 'why; stored as last_error')
    .option('--delay <duration>', 'not claimable again before this long, e.g. 30s', durationArg)
    .option('--claim <claim_id>', 'default: the one saved by `task claim`')
    .action(
      act((id: string, o: { error?: string; delay?: number; claim?: string }) =>
        ending(id, () => api.post(taskPath(id, 'nack'), { claim_id: claimOf(id, o.claim), error: o.error, delay_ms: o.delay })),
      ),
    )

  task
    .command('extend')
    .description('push back the visibility timeout of a claimed task')
    .argument('<id>')
    .requiredOption('--visibility <duration>', 'new visibility from now, e.g. 10m', durationArg)
    .option('--claim <claim_id>', 'default: the one saved by `task claim`')
    .action(
      act((id: string, o: { visibility: number; claim?: string }) =>
        api.post(taskPath(id, 'extend'), { claim_id: claimOf(id, o.claim), visibility_ms: o.visibility }),
      ),
    )

  task
    .command('note')
    .description('leave a note on a task for its next attempt (needs `register`); prints the note')
    .argument('<id>')
    .argument('<text>', "what the next attempt should know, up to 16 KiB; '-' reads it from stdin")
    .action(act(async (id: string, text: string) => api.post(taskPath(id, 'notes'), { text: text === '-' ? await Bun.stdin.text() : text })))

  task
    .command('get')
    .description('one task')
    .argument('<id>')
    .action(act((id: string) => api.get(taskPath(id))))

  task
    .command('cancel')
    .description('cancel a task (a live claim ends; its dependents fail)')
    .argument('<id>')
    .action(act((id: string) => api.delete(taskPath(id))))

  task
    .command('retry')
    .description('run a failed or cancelled task again: ready, attempts reset (any other status is refused)')
    .argument('<id>')
    .action(act((id: string) => api.post(taskPath(id, 'retry'))))

  task
    .command('list')
    .description('without a queue: every queue with counts per status; with one: its tasks in claim order')
    .argument('[queue]')
    .option('--status <status>', 'blocked, ready, claimed, done, failed or cancelled')
    .action(
      act((queue: string | undefined, o: { status?: string }) => {
        if (!queue) {
          if (o.status) throw new UsageError('--status needs a queue')
          return api.get('/api/queues')
        }
        return api.get(apiPath('/api/queues', queue, 'tasks'), { status: o.status })
      }),
    )
}

// `approvals [--wait]`, `approve`, `deny`, `approval-rules add|list|delete`: the person's
// side of agents' permission requests (docs/api/approvals.md). Deciding needs the admin
// token; a viewer token lists.
import { Argument, Option, type Command } from 'commander'
import { api, apiPath } from './client'
import { durationArg, integer } from './input'
import { UsageError, act } from './output'

/** The server holds one event long poll at most this long; a longer --wait chains them. */
const POLL_MS = 60_000

interface Approval {
  id: string
  status: string
}

/** The newest approval.requested event's id (0 when none): what a --wait waits after. */
async function lastRequested(): Promise<number> {
  const last = (await api.get('/api/events/history', { topic: 'approval.requested', last: 1 })) as { id: number }[]
  return last.at(-1)?.id ?? 0
}

/**
 * The approvals asked for; with `wait` and none pending, held until one is requested (or
 * `wait` ends: then `[]`). The newest event id is read before the list, so a request made
 * between the two still ends the wait.
 */
async function listApprovals(o: { status?: string; name?: string; limit?: number; wait?: number | true }): Promise<Approval[]> {
  const query = { status: o.status, name: o.name, limit: o.limit }
  if (o.wait === undefined) return (await api.get('/api/approvals', query)) as Approval[]
  const deadline = o.wait === true ? Infinity : Date.now() + o.wait
  let after = await lastRequested()
  for (;;) {
    const list = (await api.get('/api/approvals', query)) as Approval[]
    if (list.some((a) => a.status === 'pending')) return list
    const left = deadline - Date.now()
    if (left <= 0) return list
    const wait = Math.max(1, Math.min(POLL_MS, left))
    const got = (await api.get('/api/events/history', { topic: 'approval.requested', after_id: after, wait: `${wait}ms`, last: 100 })) as { id: number }[]
    if (got.length) after = got.at(-1)!.id
  }
}

/** One decision per id (a single call for several, unless --remember asks for a rule each). */
async function decide(ids: string[], behavior: 'allow' | 'deny', o: { message?: string; remember?: boolean }) {
  if (ids.length === 1 || o.remember) {
    const decided = []
    for (const id of ids) decided.push(await api.post(apiPath('/api/approvals', id, 'decision'), { behavior, message: o.message, remember: o.remember }))
    return ids.length === 1 ? decided[0] : { decided, skipped: [] }
  }
  return api.post('/api/approvals/decision', { ids, behavior, message: o.message })
}

export function approvalCommands(program: Command): void {
  program
    .command('approvals')
    .description("agents' permission requests, newest first: the pending ones by default")
    .addOption(new Option('--status <status>', 'another status, or all').choices(['pending', 'allowed', 'denied', 'expired', 'withdrawn', 'all']))
    .option('--name <agent>', "only this agent's")
    .option('--limit <n>', '1 … 1000 (default 100)', integer(1))
    .option('--wait [duration]', 'when none is pending, hold until one is requested (for this long; default: until then)', durationArg)
    .action(
      act((o: { status?: string; name?: string; limit?: number; wait?: number | true }) =>
        listApprovals({ ...o, status: o.status === 'all' ? undefined : (o.status ?? 'pending') }),
      ),
    )

  program
    .command('approval')
    .description('one request: what was asked, by whom, and how it was decided')
    .addArgument(new Argument('<id>', 'approval id (from `muster approvals`)'))
    .action(act((id: string) => api.get(apiPath('/api/approvals', id))))

  program
    .command('approve')
    .description('allow pending requests (admin token): each held agent goes on at once')
    .addArgument(new Argument('<id...>', 'approval ids (from `muster approvals`)'))
    .option('--remember', 'also allow the same tool, agent and exact command from now on (a rule)')
    .option('--message <text>', 'a note kept with the decision')
    .action(act((ids: string[], o: { remember?: boolean; message?: string }) => decide(ids, 'allow', o)))

  program
    .command('deny')
    .description('deny pending requests (admin token): the agent reads who denied and your message')
    .addArgument(new Argument('<id...>', 'approval ids (from `muster approvals`)'))
    .option('--message <text>', 'why, and what the agent should do instead')
    .option('--remember', 'also deny the same tool, agent and exact command from now on (a rule)')
    .action(act((ids: string[], o: { remember?: boolean; message?: string }) => decide(ids, 'deny', o)))

  const rules = program.command('approval-rules').description('rules that allow or deny matching requests before a person is asked; deny wins')
  rules
    .command('add')
    .description('add a rule (admin token)')
    .addOption(new Option('--decision <decision>', 'allow or deny').choices(['allow', 'deny']).makeOptionMandatory())
    .option('--tool <glob>', 'tool name glob (Bash, Edit, …); default *')
    .option('--match <glob>', 'summary glob: the command, else the file path; * crosses / and spaces; default *')
    .option('--agents <glob>', 'agent name glob; default *')
    .option('--message <text>', 'what a denied agent reads')
    .action(
      act((o: { decision: string; tool?: string; match?: string; agents?: string; message?: string }) => {
        if (o.message === '') throw new UsageError('--message must not be empty')
        return api.post('/api/approval-rules', o)
      }),
    )
  rules
    .command('list')
    .description('the rules, oldest first')
    .action(act(() => api.get('/api/approval-rules')))
  rules
    .command('delete')
    .description('delete a rule (admin token)')
    .addArgument(new Argument('<id>', 'rule id (from `approval-rules list`)'))
    .action(
      act(async (id: string) => {
        await api.delete(apiPath('/api/approval-rules', id))
        return { deleted: id }
      }),
    )
}

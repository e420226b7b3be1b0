// `send`, `inbox`, `ack`, `thread`, `message`, `messages`: the inbox. Messages are
// addressed by agent name, so `inbox` and `ack` act as the instance saved by
// `register` (its X-Instance-Token goes with every request); `send` without one
// is sent as "human", but never by an agent whose identity is merely unchosen
// (several agents in the checkout): that exits 2 instead.
import { Option, type Command } from 'commander'
import { api, apiPath, resolveConfig } from './client'
import { ambiguousIdentity } from './identity'
import { durationArg, integer } from './input'
import { act, UsageError } from './output'

/** The server holds one inbox request at most this long; a longer --wait chains requests. */
const MAX_WAIT_MS = 60_000

interface Page {
  messages: unknown[]
  cursor: number
}

/** A message id as the API takes it; anything else is a usage error here rather than the server's 404. */
function messageId(value: string): string {
  if (!/^[1-9]\d*$/.test(value)) throw new UsageError(`expected a message id (a positive integer), got '${value}'`)
  return value
}

/** `--body -` is the body read from stdin; any other value is the body itself. */
async function bodyOf(given: string | undefined): Promise<string | undefined> {
  return given === '-' ? Bun.stdin.text() : given
}

/**
 * One inbox page; with `wait`, held until a message arrives or `wait` ends, in requests of
 * at most a minute each. Prints the last answer (an empty page with the cursor when none came).
 */
async function readInbox(o: { after?: number; limit?: number; unacked?: boolean; wait?: number }): Promise<Page> {
  const query = { after: o.after, limit: o.limit, unacked: o.unacked ? 1 : undefined }
  if (!o.wait) return (await api.get('/api/inbox', query)) as Page
  const deadline = Date.now() + o.wait
  for (;;) {
    const wait = Math.max(1, Math.min(MAX_WAIT_MS, deadline - Date.now()))
    const page = (await api.get('/api/inbox', { ...query, wait: `${wait}ms` })) as Page
    if (page.messages.length || Date.now() >= deadline) return page
  }
}

export function messageCommands(program: Command): void {
  program
    .command('send')
    .description('send a message to agents by name (or \'*\' for every agent); prints it with its id')
    .argument('<name...>', "recipients' instance names, or '*' (quoted) for all")
    .requiredOption('--subject <text>', 'one line, at most 200 characters')
    .option('--body <text>', "the message, up to 64 KiB; '-' reads it from stdin")
    .option('--ack', 'ask the recipients to acknowledge it (`muster ack <id>`)')
    .option('--ack-within <duration>', 'raise message.overdue for each named recipient that has not acked by then (1s … 7d; implies --ack)', durationArg)
    .addOption(new Option('--importance <level>', 'default normal').choices(['low', 'normal', 'high', 'urgent']))
    .option('--thread <thread>', 'thread name (default: the replied-to message\'s thread, else the new id)')
    .option('--reply-to <id>', 'id of the message this answers; joins its thread', integer(1))
    .action(
      act(async (to: string[], o: { subject: string; body?: string; ack?: boolean; ackWithin?: number; importance?: string; thread?: string; replyTo?: number }) => {
        const choices = resolveConfig().identityChoices
        if (choices) ambiguousIdentity(choices)
        return api.post('/api/messages', {
          to,
          subject: o.subject,
          body: await bodyOf(o.body),
          importance: o.importance,
          thread: o.thread,
          reply_to: o.replyTo,
          ack_required: o.ack || o.ackWithin !== undefined ? true : undefined,
          ack_within_ms: o.ackWithin,
        })
      }),
    )

  program
    .command('inbox')
    .description('messages for this instance\'s name (needs `register`), oldest first, as {messages, cursor}; reading does not consume them')
    .option('--after <id>', 'only messages after this id (the cursor of the previous read)', integer(0))
    .option('--limit <n>', 'at most this many (default 100, at most 1000)', integer(1))
    .option('--unacked', 'leave out messages this name has acked')
    .option('--wait <duration>', 'when there is nothing, hold up to this long for a message, e.g. 30s', durationArg)
    .action(act((o: { after?: number; limit?: number; unacked?: boolean; wait?: number }) => readInbox(o)))

  program
    .command('ack')
    .description('acknowledge a message addressed to this instance\'s name; prints {id, acked_at} (the same again)')
    .argument('<id>', 'message id')
    .action(act((id: string) => api.post(apiPath('/api/messages', messageId(id), 'ack'))))

  program
    .command('thread')
    .description('the messages of a thread, oldest first; 404 when there is none')
    .argument('<thread>')
    .action(act((thread: string) => api.get(apiPath('/api/threads', thread))))

  program
    .command('message')
    .description('one message with its receipts per recipient (delivered_at, acked_at)')
    .argument('<id>', 'message id')
    .action(act((id: string) => api.get(apiPath('/api/messages', messageId(id)))))

  program
    .command('messages')
    .description('search messages, newest first: every word given must appear as a whole word in subject or body')
    .argument('[word...]', 'words to search for (none: every message)')
    .option('--from <name>', 'sent by this name ("human" for people)')
    .option('--to <name>', 'addressed to this name')
    .option('--thread <thread>', 'only this thread')
    .option('--limit <n>', 'at most this many', integer(1))
    .action(
      act((words: string[], o: { from?: string; to?: string; thread?: string; limit?: number }) =>
        api.get('/api/messages', { q: words.length ? words.join(' ') : undefined, from: o.from, to: o.to, thread: o.thread, limit: o.limit }),
      ),
    )
}

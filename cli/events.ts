// `events publish|history|subscribe`: the event bus.
import type { Command } from 'commander'
import { api } from './client'
import { waitEvents } from './watch'
import { durationArg, integer, readJsonPayload, withPayload, type PayloadOptions } from './input'
import { act } from './output'
import { subscribe } from './subscribe'

export function eventsCommands(program: Command): void {
  const events = program.command('events').description('publish, read and follow events')

  withPayload(events.command('publish'), 'the event data (JSON)', false)
    .description('publish an event; prints the stored event')
    .argument('<topic>', 'dot-separated topic, e.g. build.done')
    .action(
      act(async (topic: string, o: PayloadOptions) => {
        const data = await readJsonPayload(o, false)
        return api.post('/api/events/publish', data === undefined ? { topic } : { topic, data })
      }),
    )

  events
    .command('history')
    .description('stored events, newest first (oldest first with --after-id)')
    .option('--topic <glob>', 'topic pattern, e.g. "build.*" (default *)')
    .option('--last <n>', 'how many (server default 50)', integer(1))
    .option('--from <time>', 'RFC 3339 lower bound')
    .option('--to <time>', 'RFC 3339 upper bound')
    .option('--source <source>', 'only events from this source')
    .option('--after-id <id>', 'only events with a larger id', integer(0))
    .action(
      act((o: { topic?: string; last?: number; from?: string; to?: string; source?: string; afterId?: number }) =>
        api.get('/api/events/history', { topic: o.topic, last: o.last, from: o.from, to: o.to, source: o.source, after_id: o.afterId }),
      ),
    )

  events
    .command('subscriptions')
    .description('open WebSocket subscriptions with their sent, dropped and buffered counts')
    .action(act(() => api.get('/api/events/subscriptions')))

  events
    .command('subscribe')
    .description(
      'print each new matching event as one JSON line (WebSocket with resume; polls history every 2 s when the WebSocket is unavailable)',
    )
    .argument('[pattern]', 'topic glob', '*')
    .option('--after-id <id>', 'also replay stored events after this id (default: only events from now on)', integer(0))
    .option('--count <n>', 'exit after n events', integer(1))
    .option('--poll', 'poll history every 2 s instead of using the WebSocket')
    .action((pattern: string, o: { afterId?: number; count?: number; poll?: boolean }) => subscribe(pattern, o))

  events
    .command('wait')
    .description('wait for the next matching events and print them as a JSON array, oldest first ([] when --timeout passes)')
    .option('--topic <glob>', 'topic pattern (default *)')
    .option('--source <source>', 'only events from this source')
    .option('--after <id>', 'events after this id (default: from now on)', integer(0))
    .option('--timeout <duration>', 'give up after this long (requests of at most 60s are chained)', durationArg, 60_000)
    .action((o: { topic?: string; source?: string; after?: number; timeout: number }) => waitEvents(o))
}

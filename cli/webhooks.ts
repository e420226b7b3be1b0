// `webhooks ...`: HTTP callbacks for events, their deliveries and redelivery.
import { Option, type Command } from 'commander'
import { api, apiPath, requestJson } from './client'
import { integer, repeatable } from './input'
import { act, UsageError } from './output'
import { parseDuration } from '../lib/time'

/** --since as given (RFC 3339, checked by the server), or a duration meaning that long ago (30m, 2h). */
function sinceArg(value: string): string {
  const ms = parseDuration(value)
  return ms === null ? value : new Date(Date.now() - ms).toISOString()
}

export function webhookCommands(program: Command): void {
  const webhooks = program.command('webhooks').description('HTTP POST callbacks for matching events')

  webhooks
    .command('list')
    .description('all webhooks (secrets are never shown)')
    .action(act(() => api.get('/api/webhooks')))

  webhooks
    .command('get')
    .description('one webhook (without its secret)')
    .argument('<id>')
    .action(act((id: string) => api.get(apiPath('/api/webhooks', id))))

  webhooks
    .command('add')
    .description('create a webhook')
    .argument('<id>', 'your name for it')
    .argument('<url>', 'receiver URL')
    .option('--pattern <glob>', 'topic pattern, repeatable (default *)', repeatable)
    .option('--secret <secret>', 'signs deliveries with HMAC-SHA256 (X-Service-Signature and Standard Webhooks headers)')
    .action(
      act((id: string, url: string, o: { pattern?: string[]; secret?: string }) =>
        api.post('/api/webhooks', { id, url, patterns: o.pattern, secret: o.secret }),
      ),
    )

  webhooks
    .command('update')
    .description('change a webhook\'s url, patterns or secret (pending deliveries follow the new url and secret)')
    .argument('<id>')
    .option('--url <url>', 'new receiver URL')
    .option('--pattern <glob>', 'topic pattern, repeatable: replaces all the old ones', repeatable)
    .option('--secret <secret>', 'new signing secret ("" stops signing)')
    .action(
      act((id: string, o: { url?: string; pattern?: string[]; secret?: string }) => {
        if (o.url === undefined && o.pattern === undefined && o.secret === undefined) throw new UsageError('nothing to change: give --url, --pattern or --secret')
        return requestJson('PATCH', apiPath('/api/webhooks', id), { json: { url: o.url, patterns: o.pattern, secret: o.secret } })
      }),
    )

  webhooks
    .command('delete')
    .argument('<id>')
    .description('delete a webhook')
    .action(act((id: string) => api.delete(apiPath('/api/webhooks', id))))

  webhooks
    .command('test')
    .argument('<id>')
    .description('send a webhook.test delivery now; fails (exit 1) when the receiver does not answer 2xx')
    .action(act((id: string) => api.post(apiPath('/api/webhooks', id, 'test'))))

  webhooks
    .command('deliveries')
    .argument('<id>')
    .description("the webhook's deliveries, newest first: state (pending, delivered, failed), attempts, next attempt, last status and error")
    .addOption(new Option('--state <state>', 'only these').choices(['pending', 'delivered', 'failed']))
    .option('--limit <n>', 'how many (default 20, at most 200)', integer(1))
    .option('--before <delivery>', 'only older than this delivery id (the next page)', integer(1))
    .action(
      act((id: string, o: { state?: string; limit?: number; before?: number }) =>
        api.get(apiPath('/api/webhooks', id, 'deliveries'), { state: o.state, limit: o.limit, before: o.before }),
      ),
    )

  webhooks
    .command('redeliver')
    .argument('<id>')
    .description('send one delivery again (--delivery), or every delivery since a time (--since), oldest first')
    .option('--delivery <delivery>', 'a delivery id from `webhooks deliveries`', integer(1))
    .option('--since <time>', 'RFC 3339 time, or a duration meaning that long ago (30m, 2h)', sinceArg)
    .action(
      act((id: string, o: { delivery?: number; since?: string }) => {
        if ((o.delivery === undefined) === (o.since === undefined)) throw new UsageError('give exactly one of --delivery <id> or --since <time>')
        return o.delivery !== undefined
          ? api.post(apiPath('/api/webhooks', id, 'deliveries', String(o.delivery), 'redeliver'))
          : api.post(apiPath('/api/webhooks', id, 'redeliver'), { since: o.since })
      }),
    )

  webhooks
    .command('enable')
    .argument('<id>')
    .description('re-enable a webhook (resets fail_count); its pending deliveries are sent at once, oldest first')
    .action(act((id: string) => api.post(apiPath('/api/webhooks', id, 'enable'))))

  webhooks
    .command('disable')
    .argument('<id>')
    .description('stop deliveries to a webhook (kept; `enable` resumes)')
    .action(act((id: string) => api.post(apiPath('/api/webhooks', id, 'disable'))))
}

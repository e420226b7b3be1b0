// `webhooks ...`: HTTP callbacks for events.
import type { Command } from 'commander'
import { api, apiPath } from './client'
import { repeatable } from './input'
import { act } from './output'

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
    .description("the webhook's latest delivery attempts, newest first (kept in memory since the server started)")
    .action(act((id: string) => api.get(apiPath('/api/webhooks', id, 'deliveries'))))

  webhooks
    .command('enable')
    .argument('<id>')
    .description('re-enable a webhook disabled after repeated failures (resets fail_count)')
    .action(act((id: string) => api.post(apiPath('/api/webhooks', id, 'enable'))))

  webhooks
    .command('disable')
    .argument('<id>')
    .description('stop deliveries to a webhook (kept; `enable` resumes)')
    .action(act((id: string) => api.post(apiPath('/api/webhooks', id, 'disable'))))
}

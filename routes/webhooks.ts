// /api/webhooks: register receivers for matching events; test and re-enable them.
// The secret is write-only: no answer ever contains it.
import { t } from 'elysia'
import { IdParams } from '../http/models'
import { httpUrl } from '../lib/values'
import { invalid } from '../lib/errors'
import type { Ctx } from '../services/context'
import { nowIso } from '../lib/time'
import { deliverAndLog } from '../jobs/webhooks'
import { deliveriesOf, forgetDeliveries, KEEP_DELIVERIES } from '../services/delivery-log'
import { audited } from '../http/audit'
import { resolvedRefusal } from '../services/targets'
import { createWebhook, deleteWebhook, found, setWebhookActive } from '../services/webhooks'

const WebhookSchema = t.Object({
  id: t.String(),
  url: t.String(),
  patterns: t.Array(t.String()),
  active: t.Boolean(),
  created_at: t.String(),
  last_fired: t.Optional(t.String({ description: 'time of the last delivery attempt; absent until the first' })),
  fail_count: t.Integer({ description: 'consecutive failed deliveries; 10 disables the webhook' }),
})


function checkId(id: string): string {
  if (id === '') throw invalid('id is required')
  if (id.length > 200 || /[/\s]/.test(id)) throw invalid('invalid id: at most 200 characters, without "/" or whitespace')
  return id
}

async function checkUrl(ctx: Ctx, url: string): Promise<string> {
  if (!httpUrl(url)) throw invalid('invalid url: expected an absolute http or https URL')
  const refused = await resolvedRefusal(ctx, url)
  if (refused) throw invalid(`invalid url: ${refused}`)
  return url
}

function checkPatterns(patterns: string[] = ['*']): string[] {
  if (!patterns.length) throw invalid('invalid patterns: expected at least one topic glob')
  if (patterns.some((p) => p.trim() === '')) throw invalid('invalid patterns: a pattern must not be empty')
  return patterns
}

export function webhooksRoutes(ctx: Ctx) {
  return audited(ctx)
    .post(
      '/api/webhooks',
      async ({ body, audit }) =>
        createWebhook(ctx, audit, {
          id: checkId(body.id),
          url: await checkUrl(ctx, body.url),
          patterns: checkPatterns(body.patterns),
          secret: body.secret ?? '',
        }),
      {
        body: t.Object({
          id: t.String({ description: 'required, unique' }),
          url: t.String({ description: 'required, http(s) URL that receives POSTs' }),
          patterns: t.Optional(t.Array(t.String(), { description: 'topic globs, default ["*"]' })),
          secret: t.Optional(t.String({ description: 'HMAC-SHA256 key (UTF-8 bytes) for X-Service-Signature and the Standard Webhooks webhook-signature; write-only' })),
        }),
        response: { 200: WebhookSchema },
        audit: 'webhook.create',
        detail: { summary: 'Create a webhook (409 when the id exists)', tags: ['webhooks'] },
      },
    )
    .get('/api/webhooks', () => ctx.store.webhooks.list(), {
      response: { 200: t.Array(WebhookSchema) },
      detail: { summary: 'List webhooks (never the secret)', tags: ['webhooks'] },
    })
    .get(
      '/api/webhooks/:id',
      async ({ params }) => found(await ctx.store.webhooks.get(params.id)),
      { params: IdParams, response: { 200: WebhookSchema }, detail: { summary: 'One webhook', tags: ['webhooks'] } },
    )
    .delete(
      '/api/webhooks/:id',
      async ({ params, audit }) => {
        await deleteWebhook(ctx, audit, params.id)
        forgetDeliveries(ctx, params.id)
        return { deleted: params.id }
      },
      { params: IdParams, audit: 'webhook.delete', detail: { summary: 'Delete a webhook', tags: ['webhooks'] } },
    )
    .post(
      '/api/webhooks/:id/test',
      async ({ params }) => {
        const hook = found(await ctx.store.webhooks.target(params.id))
        const event = { id: 0, topic: 'webhook.test', data: { webhook_id: hook.id }, source: '', created_at: nowIso() }
        const result = await deliverAndLog(ctx, hook, event, { test: true })
        if (!result.ok) throw invalid(`webhook test delivery failed: ${result.error}`)
        return { tested: hook.id, status: 'ok' as const }
      },
      {
        params: IdParams,
        detail: {
          summary: 'Send a webhook.test event now',
          description: 'Signed like any delivery; 400 when it fails. Leaves fail_count and last_fired alone.',
          tags: ['webhooks'],
        },
      },
    )
    .get(
      '/api/webhooks/:id/deliveries',
      async ({ params }) => {
        found(await ctx.store.webhooks.get(params.id))
        return { id: params.id, deliveries: deliveriesOf(ctx, params.id) }
      },
      {
        params: IdParams,
        detail: {
          summary: `The webhook's latest ${KEEP_DELIVERIES} delivery attempts, newest first`,
          description: 'Kept in memory since the server started: {event_id, topic, at, ok, status, error, duration_ms, test} each (event_id 0 and test true for a test delivery; status null when no answer came).',
          tags: ['webhooks'],
        },
      },
    )
    .post('/api/webhooks/:id/enable', ({ params, audit }) => setWebhookActive(ctx, audit, params.id, true), {
      params: IdParams,
      response: { 200: WebhookSchema },
      audit: 'webhook.enable',
      detail: { summary: 'Re-enable a webhook and reset fail_count', tags: ['webhooks'] },
    })
    .post('/api/webhooks/:id/disable', ({ params, audit }) => setWebhookActive(ctx, audit, params.id, false), {
      params: IdParams,
      response: { 200: WebhookSchema },
      audit: 'webhook.disable',
      detail: { summary: 'Disable a webhook (no deliveries until enabled)', tags: ['webhooks'] },
    })
}

// /api/webhooks: register receivers for matching events; test and re-enable them.
// The secret is write-only: no answer ever contains it.
import { t } from 'elysia'
import { invalid, notFound } from '../lib/errors'
import type { Ctx } from '../lib/context'
import { now } from '../store/db'
import { deliver } from '../jobs/webhooks'
import { routes } from './http'

const WebhookSchema = t.Object({
  id: t.String(),
  url: t.String(),
  patterns: t.Array(t.String()),
  active: t.Boolean(),
  created_at: t.String(),
  last_fired: t.Optional(t.String({ description: 'time of the last delivery attempt; absent until the first' })),
  fail_count: t.Integer({ description: 'consecutive failed deliveries; 10 disables the webhook' }),
})

const IdParams = t.Object({ id: t.String() })

function checkId(id: string): string {
  if (id === '') throw invalid('id is required')
  if (id.length > 200 || /[/\s]/.test(id)) throw invalid('invalid id: at most 200 characters, without "/" or whitespace')
  return id
}

function checkUrl(url: string): string {
  let parsed: URL
  try {
    parsed = new URL(url)
  } catch {
    throw invalid('invalid url: expected an absolute http or https URL')
  }
  if (parsed.protocol !== 'http:' && parsed.protocol !== 'https:') throw invalid('invalid url: expected an absolute http or https URL')
  return url
}

function checkPatterns(patterns: string[] = ['*']): string[] {
  if (!patterns.length) throw invalid('invalid patterns: expected at least one topic glob')
  if (patterns.some((p) => p.trim() === '')) throw invalid('invalid patterns: a pattern must not be empty')
  return patterns
}

function found<T>(hook: T | null): T {
  if (!hook) throw notFound('webhook not found')
  return hook
}

export function webhooksRoutes(ctx: Ctx) {
  const setActive = async (id: string, active: boolean) => found(await ctx.store.webhooks.setActive(id, active))

  return routes(ctx)
    .post(
      '/api/webhooks',
      ({ body }) =>
        ctx.store.webhooks.create({
          id: checkId(body.id),
          url: checkUrl(body.url),
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
      async ({ params }) => {
        if (!(await ctx.store.webhooks.delete(params.id))) throw notFound('webhook not found')
        return { deleted: params.id }
      },
      { params: IdParams, audit: 'webhook.delete', detail: { summary: 'Delete a webhook', tags: ['webhooks'] } },
    )
    .post(
      '/api/webhooks/:id/test',
      async ({ params }) => {
        const hook = found(await ctx.store.webhooks.target(params.id))
        const event = { id: 0, topic: 'webhook.test', data: { webhook_id: hook.id }, source: '', created_at: now() }
        const result = await deliver(hook, event)
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
    .post('/api/webhooks/:id/enable', ({ params }) => setActive(params.id, true), {
      params: IdParams,
      response: { 200: WebhookSchema },
      audit: 'webhook.enable',
      detail: { summary: 'Re-enable a webhook and reset fail_count', tags: ['webhooks'] },
    })
    .post('/api/webhooks/:id/disable', ({ params }) => setActive(params.id, false), {
      params: IdParams,
      response: { 200: WebhookSchema },
      audit: 'webhook.disable',
      detail: { summary: 'Disable a webhook (no deliveries until enabled)', tags: ['webhooks'] },
    })
}

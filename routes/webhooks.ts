// /api/webhooks: register receivers for matching events; change, test, re-enable them;
// list their deliveries and redeliver. The secret is write-only: no answer ever contains it.
import { t } from 'elysia'
import { IdParams, Nullable } from '../http/models'
import { httpUrl } from '../lib/values'
import { invalid } from '../lib/errors'
import type { Ctx } from '../services/context'
import { MAX_ATTEMPTS, MAX_FAILURES, sendTest } from '../jobs/webhooks'
import { audited } from '../http/audit'
import { enumParam, intParam, timeParam } from '../http/params'
import { resolvedRefusal } from '../services/targets'
import { createWebhook, deleteWebhook, found, redeliverOne, redeliverSince, setWebhookActive, updateWebhook } from '../services/webhooks'
import type { DeliveryState } from '../store/webhook-deliveries'

const STATES: readonly DeliveryState[] = ['pending', 'delivered', 'failed']
const DEFAULT_LIMIT = 20
const MAX_LIMIT = 200
const RETRIES =
  `A failed delivery is retried after about 2 s, 10 s, 50 s, 4 min, 21 min, 1.7 h and 4 h (±20 % jitter); ` +
  `after ${MAX_ATTEMPTS} failed attempts (about 6 h) it is failed for good. ${MAX_FAILURES} consecutive failed attempts disable the webhook; ` +
  'its pending deliveries wait for POST /api/webhooks/{id}/enable, which sends them oldest first.'

const WebhookSchema = t.Object({
  id: t.String(),
  url: t.String(),
  patterns: t.Array(t.String()),
  active: t.Boolean(),
  created_at: t.String(),
  last_fired: t.Optional(t.String({ description: 'time of the last delivery attempt; absent until the first' })),
  fail_count: t.Integer({ description: 'consecutive failed deliveries; 10 disables the webhook' }),
})

const DeliverySchema = t.Object({
  id: t.Integer({ description: 'the delivery id of redeliver' }),
  delivery: t.String({ description: 'X-Service-Delivery and webhook-id: the same on every attempt and redelivery' }),
  event_id: t.Integer({ description: '0 for a test delivery' }),
  topic: t.String(),
  test: t.Boolean(),
  state: t.Union([t.Literal('pending'), t.Literal('delivered'), t.Literal('failed')], { description: 'pending (waiting for its next attempt), delivered, or failed for good' }),
  attempts: t.Integer({ description: 'attempts since queued or redelivered' }),
  created_at: t.String(),
  next_attempt_at: Nullable(t.String({ description: 'when the next attempt is due; null once delivered or failed' })),
  at: Nullable(t.String({ description: 'when the last attempt started; null before the first' })),
  ok: t.Boolean({ description: 'the last attempt succeeded' }),
  status: Nullable(t.Integer({ description: "the receiver's HTTP status at the last attempt; null when no answer came" })),
  error: t.String({ description: 'why the last attempt failed; "" on success or before the first' }),
  duration_ms: Nullable(t.Integer()),
})

/** The receiver the examples name: a loopback one, so that "Try it out" sends nothing off the machine. */
const EXAMPLE_URL = 'http://127.0.0.1:8080/hooks/muster'

const DeliveryParams = t.Object({ id: t.String(), delivery: t.String({ description: 'a delivery id from GET /api/webhooks/{id}/deliveries' }) })


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

/** A PATCH body: at least one of url, patterns, secret, each checked as on create. */
async function checkChange(ctx: Ctx, body: { url?: string; patterns?: string[]; secret?: string }) {
  if (body.url === undefined && body.patterns === undefined && body.secret === undefined)
    throw invalid('nothing to change: send at least one of url, patterns, secret')
  return {
    url: body.url === undefined ? undefined : await checkUrl(ctx, body.url),
    patterns: body.patterns === undefined ? undefined : checkPatterns(body.patterns),
    secret: body.secret,
  }
}

function deliveryId(text: string): number {
  if (!/^[1-9]\d{0,14}$/.test(text)) throw invalid(`invalid delivery: expected a delivery id (a positive integer), got "${text}"`)
  return Number(text)
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
        body: t.Object(
          {
            id: t.String({ description: 'required, unique' }),
            url: t.String({ description: 'required, http(s) URL that receives POSTs' }),
            patterns: t.Optional(t.Array(t.String(), { description: 'topic globs, default ["*"]' })),
            secret: t.Optional(t.String({ description: 'HMAC-SHA256 key (UTF-8 bytes) for X-Service-Signature and the Standard Webhooks webhook-signature; write-only' })),
          },
          { examples: [{ id: 'ci', url: EXAMPLE_URL, patterns: ['task.*', 'message.overdue'], secret: 'whsec-example-not-a-real-secret' }] },
        ),
        response: { 200: WebhookSchema },
        audit: 'webhook.create',
        detail: { summary: 'Create a webhook (409 when the id exists)', tags: ['webhooks'] },
      },
    )
    .patch('/api/webhooks/:id', async ({ params, body, audit }) => updateWebhook(ctx, audit, params.id, await checkChange(ctx, body)), {
      params: IdParams,
      body: t.Object(
        {
          url: t.Optional(t.String({ description: 'http(s) URL that receives POSTs; pending deliveries go there' })),
          patterns: t.Optional(t.Array(t.String(), { description: 'topic globs, replacing the old ones' })),
          secret: t.Optional(t.String({ description: 'new HMAC-SHA256 key; "" stops signing; write-only' })),
        },
        { examples: [{ url: EXAMPLE_URL, patterns: ['task.*', 'message.overdue'] }] },
      ),
      response: { 200: WebhookSchema },
      audit: 'webhook.update',
      detail: {
        summary: 'Change url, patterns or secret (400 with none of them)',
        description: 'Answers the webhook without its secret. fail_count and active stay as they are (POST /api/webhooks/{id}/enable re-enables).',
        tags: ['webhooks'],
      },
    })
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
        return { deleted: params.id }
      },
      {
        params: IdParams,
        response: { 200: t.Object({ deleted: t.String() }) },
        audit: 'webhook.delete',
        detail: { summary: 'Delete a webhook and its deliveries', tags: ['webhooks'] },
      },
    )
    .post(
      '/api/webhooks/:id/test',
      async ({ params }) => {
        const hook = found(await ctx.store.webhooks.target(params.id))
        const result = await sendTest(ctx, hook)
        if (!result.ok) throw invalid(`webhook test delivery failed: ${result.error}`)
        return { tested: hook.id, status: 'ok' as const }
      },
      {
        params: IdParams,
        response: { 200: t.Object({ tested: t.String(), status: t.Literal('ok') }) },
        detail: {
          summary: 'Send a webhook.test event now',
          description: 'Signed like any delivery; 400 when it fails. Listed with the deliveries (test: true), never retried. Leaves fail_count and last_fired alone.',
          tags: ['webhooks'],
        },
      },
    )
    .get(
      '/api/webhooks/:id/deliveries',
      async ({ params, query }) => {
        const state = enumParam(query.state, 'state', STATES, undefined)
        const limit = intParam(query.limit, 'limit', DEFAULT_LIMIT, 1, MAX_LIMIT)
        const before = query.before === undefined || query.before === '' ? undefined : intParam(query.before, 'before', 0, 1)
        found(await ctx.store.webhooks.get(params.id))
        return { id: params.id, deliveries: await ctx.store.webhooks.deliveries(params.id, { state, before, limit }) }
      },
      {
        params: IdParams,
        query: t.Object({
          state: t.Optional(t.String({ description: 'pending, delivered or failed; default all' })),
          limit: t.Optional(t.String({ description: `default ${DEFAULT_LIMIT}, at most ${MAX_LIMIT}` })),
          before: t.Optional(t.String({ description: 'only deliveries with a smaller id (the next page: the last id of this one)' })),
        }),
        response: { 200: t.Object({ id: t.String(), deliveries: t.Array(DeliverySchema) }) },
        detail: {
          summary: "The webhook's deliveries, newest first",
          description:
            'One per matching event (and per test delivery): its state, attempts, next attempt and the last attempt\'s status and error. ' +
            `Kept across restarts; the newest 1000 done ones per webhook are kept. ${RETRIES}`,
          tags: ['webhooks'],
        },
      },
    )
    .post(
      '/api/webhooks/:id/deliveries/:delivery/redeliver',
      ({ params, audit }) => redeliverOne(ctx, audit, params.id, deliveryId(params.delivery)),
      {
        params: DeliveryParams,
        response: { 200: DeliverySchema },
        audit: 'webhook.redeliver',
        detail: {
          summary: 'Send one delivery again',
          description:
            'Queues it due now with its attempts from zero and the same delivery id; a disabled webhook sends it once enabled. ' +
            '404 unknown webhook or delivery; 409 for a test delivery (send another with POST /api/webhooks/{id}/test).',
          tags: ['webhooks'],
        },
      },
    )
    .post(
      '/api/webhooks/:id/redeliver',
      async ({ params, body, audit }) => {
        const since = timeParam(body.since, 'since')
        if (!since) throw invalid('since is required: an RFC 3339 timestamp, e.g. 2026-01-31T12:00:00Z')
        const hook = found(await ctx.store.webhooks.get(params.id))
        const redelivered = await redeliverSince(ctx, audit, params.id, since)
        return { id: params.id, since, redelivered, active: hook.active }
      },
      {
        params: IdParams,
        body: t.Object(
          { since: t.String({ description: 'RFC 3339: every delivery made at or after it is sent again', examples: ['2026-01-31T12:00:00Z'] }) },
          { examples: [{ since: '2026-01-31T12:00:00Z' }] },
        ),
        response: {
          200: t.Object({
            id: t.String(),
            since: t.String(),
            redelivered: t.Integer({ description: 'deliveries queued again' }),
            active: t.Boolean({ description: 'false: they wait until the webhook is enabled' }),
          }),
        },
        audit: 'webhook.redeliver',
        detail: {
          summary: 'Send every delivery since a time again, oldest first',
          description: 'Delivered, failed and pending ones alike (test deliveries aside): each is due now with its attempts from zero.',
          tags: ['webhooks'],
        },
      },
    )
    .post('/api/webhooks/:id/enable', ({ params, audit }) => setWebhookActive(ctx, audit, params.id, true), {
      params: IdParams,
      response: { 200: WebhookSchema },
      audit: 'webhook.enable',
      detail: {
        summary: 'Re-enable a webhook and reset fail_count',
        description: 'Its pending deliveries (kept while it was disabled) are sent at once, oldest first. Events published while it was disabled are not delivered.',
        tags: ['webhooks'],
      },
    })
    .post('/api/webhooks/:id/disable', ({ params, audit }) => setWebhookActive(ctx, audit, params.id, false), {
      params: IdParams,
      response: { 200: WebhookSchema },
      audit: 'webhook.disable',
      detail: { summary: 'Disable a webhook (no deliveries until enabled; pending ones are kept)', tags: ['webhooks'] },
    })
}

// /api/events: publish, history (with resume), and the WebSocket subscription.
import { t } from 'elysia'
import { Type } from '@sinclair/typebox'
import type { ServerWebSocket } from 'bun'
import { invalid } from '../lib/errors'
import type { Ctx } from '../services/context'
import type { Sink, Subscription } from '../services/bus'
import { publishEvent } from '../services/events'
import { DELIVERY_HEADER } from '../jobs/webhooks'
import { errorResponse } from '../http/errors'
import { heldUntil } from '../http/caller'
import { intParam, timeParam } from '../http/params'
import { audited } from '../http/audit'
import { DEFAULT_LIMIT, IntQuery } from '../http/models'
import { waitParam } from '../services/holders'
import { waitForEvents } from '../services/watches'
import { closeReason, type TokenEnd } from '../services/credentials'
import { TOKEN_CLOSE_CODE } from '../lib/token'

// TypeBox's own Integer, not Elysia's string-or-integer transform: a response schema with a
// transform runs through the uncompiled Value.Encode on every answer (see routes/state.ts).
export const EventSchema = t.Object({
  id: Type.Integer(),
  topic: t.String(),
  data: t.Any(),
  source: t.String(),
  created_at: t.String(),
})

const SubscribeQuery = t.Object({
  pattern: t.Optional(t.String({ description: 'topic glob, default *' })),
  after_id: IntQuery('first replay stored events with a greater id, then stream live ones', { minimum: 0 }),
  token: t.Optional(t.String({ description: 'the bearer token, for browsers that cannot set headers' })),
})

/** An optional after_id: absent stays undefined, garbage is 400. */
const afterIdParam = (value: string | undefined) => (value === undefined || value === '' ? undefined : intParam(value, 'after_id', 0))

/** The socket as Elysia hands it to each callback (a new wrapper each time, hence the id). */
interface SubscriberSocket {
  id: string
  data: { query: { pattern?: string; after_id?: string }; request: Request }
  /** Bun's ServerWebSocket (Elysia's copy of that type lacks getBufferedAmount). */
  raw: object
}

/**
 * The WebSocket side of /api/events/subscribe: one bus subscription per socket, with
 * its bounded, counted buffer (services/bus.ts). The dashboard serves the same stream
 * with these same handlers, in process, rather than relaying the API's through a buffer of its own.
 */
export function subscribeSocket(ctx: Ctx, server: 'api' | 'dashboard' = 'api') {
  // Keyed by the connection's id: Elysia wraps the socket in a new object per callback.
  const open = new Map<string, Subscription>()
  // What closes each socket when its token ends, to be let go when it closes first.
  const ends = new Map<string, () => void>()
  return {
    query: SubscribeQuery,
    // Runs before the upgrade, so a bad after_id is an ordinary 400.
    beforeHandle: ({ query }: { query: { after_id?: string } }) => void afterIdParam(query.after_id),
    open(ws: SubscriberSocket) {
      const { pattern, after_id } = ws.data.query
      const raw = ws.raw as ServerWebSocket<unknown>
      const sink: Sink = {
        send: (frame) => raw.sendText(frame),
        cork: (sends) => (raw.cork(sends), raw.getBufferedAmount() > 0),
        end: (code, reason) => raw.close(code, reason),
        // The bus publishes to the socket's pattern once for all sockets on it (services/bus.ts).
        shared: {
          via: server,
          subscribe: (topic) => void raw.subscribe(topic),
          unsubscribe: (topic) => void raw.unsubscribe(topic),
          buffered: () => raw.getBufferedAmount(),
        },
      }
      // A revoked or expired token's socket closes with 4401 and a reason saying which (access.md).
      const until = heldUntil(ctx, ws.data.request)
      const end = () => raw.close(TOKEN_CLOSE_CODE, closeReason(until!.reason as TokenEnd))
      if (until?.aborted) return end()
      open.set(ws.id, ctx.bus.subscribe(sink, pattern || '*', afterIdParam(after_id)))
      if (until) {
        until.addEventListener('abort', end, { once: true })
        ends.set(ws.id, () => until.removeEventListener('abort', end))
      }
    },
    drain(ws: SubscriberSocket) {
      open.get(ws.id)?.drain()
    },
    close(ws: SubscriberSocket) {
      open.get(ws.id)?.close()
      open.delete(ws.id)
      ends.get(ws.id)?.()
      ends.delete(ws.id)
    },
  }
}

export function eventsRoutes(ctx: Ctx) {

  return audited(ctx)
    .post(
      '/api/events/publish',
      ({ body, request }) => {
        if (!body.topic) throw invalid('topic is required')
        return publishEvent(ctx, undefined, body.topic, body.data ?? null, request.headers.has(DELIVERY_HEADER))
      },
      {
        body: t.Object(
          {
            topic: t.String({ description: 'required; dot-separated, e.g. api.change' }),
            data: t.Optional(t.Any({ description: 'any JSON value, default null' })),
          },
          { examples: [{ topic: 'api.change', data: { endpoint: 'GET /users', breaking: false } }] },
        ),
        response: { 200: EventSchema },
        detail: { summary: 'Publish an event', tags: ['events'] },
      },
    )
    .get(
      '/api/events/history',
      ({ query, request }) => {
        const afterId = afterIdParam(query.after_id)
        const q = {
          topic: query.topic || '*',
          source: query.source || undefined,
          from: timeParam(query.from, 'from'),
          to: timeParam(query.to, 'to'),
          afterId,
          limit: intParam(query.last, 'last', DEFAULT_LIMIT, 1),
        }
        const wait = afterId === undefined ? undefined : waitParam(query.wait)
        if (afterId === undefined || wait === undefined) return ctx.store.events.query(q)
        return waitForEvents(ctx, { ...q, afterId }, wait, heldUntil(ctx, request))
      },
      {
        query: t.Object({
          last: IntQuery('at most this many events', { minimum: 1, default: DEFAULT_LIMIT }),
          topic: t.Optional(t.String({ description: 'topic glob, default *' })),
          from: t.Optional(t.String({ description: 'RFC 3339, inclusive' })),
          to: t.Optional(t.String({ description: 'RFC 3339, inclusive' })),
          source: t.Optional(t.String({ description: 'exact source, e.g. state' })),
          after_id: IntQuery('resume: only ids greater than this, oldest first', { minimum: 0 }),
          wait: t.Optional(t.String({ description: 'with after_id: hold until a matching event exists, up to this long (e.g. 25s, at most 60s); [] when none came' })),
        }),
        response: { 200: t.Array(EventSchema) },
        detail: {
          summary: 'Event history, newest first (oldest first with after_id)',
          description: 'Every filter applies before `last`, so `last=5&topic=api.*` gives the 5 newest matching events.',
          tags: ['events'],
        },
      },
    )
    .get('/api/events/subscriptions', () => ctx.bus.subscribers(), {
      response: {
        200: t.Array(
          t.Object({
            id: t.Integer(),
            pattern: t.String(),
            connected_at: t.String(),
            sent: t.Integer({ description: 'frames handed to the connection' }),
            dropped: t.Integer({ description: 'events lost because the buffer was full (or the connection refused them)' }),
            buffered: t.Integer({ description: 'events waiting in the buffer for the connection to drain' }),
            replaying: t.Boolean({ description: 'true while missed events (after_id) are still being replayed' }),
          }),
        ),
      },
      detail: { summary: 'Open WebSocket subscriptions with their sent, dropped and buffered counts', tags: ['events'] },
    })
    .get(
      '/api/events/subscribe',
      () => {
        const res = errorResponse(426, 'expected a WebSocket upgrade request')
        res.headers.set('upgrade', 'websocket')
        return res
      },
      { query: SubscribeQuery, detail: { hide: true } },
    )
    .ws('/api/events/subscribe', {
      ...subscribeSocket(ctx),
      detail: {
        summary: 'Subscribe over WebSocket: one JSON text frame per matching event',
        description:
          'Query `pattern` (glob, default *), `after_id` (replay stored events after it, then live, no gap or duplicate). ' +
          'Each subscriber has a buffer of 64 events while its connection is backed up; further events are dropped for it alone.',
        tags: ['events'],
      },
    })
}

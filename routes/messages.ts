// /api/messages, /api/inbox, /api/threads: messages between agents (and from the
// people overseeing them), addressed by agent name, with receipts per name.
// Sending needs no instance token (without one the sender is "human"); reading an
// inbox and acking do (the caller's name is the recipient).
import { t } from 'elysia'
import type { Ctx } from '../services/context'
import type { InboxMessage } from '../store/messages'
import { audited } from '../http/audit'
import { heldUntil, holderOf, optionalReader, readerOf } from '../http/caller'
import { intParam, isSet } from '../http/params'
import { IdParams, IntQuery, Nullable, checks } from '../http/models'
import { waitParam } from '../services/holders'
import {
  ACK_WITHIN_MAX_MS,
  ACK_WITHIN_MIN_MS,
  IMPORTANCE,
  MAX_RECIPIENTS,
  MAX_SUBJECT,
  MAX_THREAD,
  INBOX_LIMIT,
  INBOX_MAX,
  ackMessage,
  getMessage,
  getThread,
  listMessages,
  messageId,
  readInbox,
  sendMessage,
  type InboxPage,
} from '../services/messages'

const TAGS = ['messages']

const MessageSchema = t.Object({
  id: t.Integer({ description: 'increasing' }),
  from: t.String({ description: 'the sending instance\'s name, or "human" without an instance token' }),
  from_instance_id: Nullable(t.String()),
  to: t.Array(t.String(), { description: 'agent names, or ["*"] for every agent' }),
  subject: t.String(),
  body: t.String(),
  thread: t.String(),
  reply_to: Nullable(t.Integer()),
  importance: t.UnionEnum(IMPORTANCE),
  ack_required: t.Boolean(),
  ack_within_ms: Nullable(t.Integer()),
  created_at: t.String(),
})
const Stamps = {
  delivered_at: Nullable(t.String({ description: 'first time an inbox read or a hook answer showed it to this name' })),
  acked_at: Nullable(t.String()),
}
const InboxMessageSchema = t.Composite([MessageSchema, t.Object(Stamps)])
const ReceiptSchema = t.Object({ to: t.String(), ...Stamps })
const WithReceipts = t.Composite([
  MessageSchema,
  t.Object({ receipts: t.Array(ReceiptSchema, { description: 'one per named recipient; for "*", one per name it reached' }) }),
])

const JSON_HEADERS = { headers: { 'content-type': 'application/json' } }

/**
 * An inbox page's answer, made once per page the store keeps (a repeated read gets the
 * same array until a write touches the name, and a page's cursor follows from it) and
 * cloned for each read. The page is built from typed rows, so it holds to the response
 * schema documented below without being checked against it on every answer.
 */
const answers = new WeakMap<readonly InboxMessage[], Response>()
function answer(page: InboxPage): Response {
  let kept = answers.get(page.messages)
  if (!kept) {
    kept = new Response(`{"messages":${JSON.stringify(page.messages)},"cursor":${page.cursor}}`, JSON_HEADERS)
    answers.set(page.messages, kept)
  }
  return kept.clone()
}

export function messagesRoutes(ctx: Ctx) {
  return audited(ctx)
    .post(
      '/api/messages',
      async ({ body, request, audit, set }) => {
        const message = await sendMessage(ctx, audit, await optionalReader(ctx, request), body)
        set.status = 201
        return message
      },
      {
        body: t.Object(
          {
            to: t.Array(t.String(), { description: 'agent names (1 … 1000 characters each), or ["*"] for every agent', ...checks({ minItems: 1, maxItems: MAX_RECIPIENTS }) }),
            subject: t.String({ ...checks({ minLength: 1, maxLength: MAX_SUBJECT }) }),
            body: t.Optional(t.String({ description: 'text up to 64 KiB', ...checks({ default: '' }) })),
            thread: t.Optional(t.String({ description: "default the replied-to message's thread, else the new id", ...checks({ minLength: 1, maxLength: MAX_THREAD }) })),
            reply_to: t.Optional(t.Integer({ description: 'an existing message id (unknown: 400)' })),
            importance: t.Optional(t.String({ ...checks({ enum: IMPORTANCE, default: 'normal' }) })),
            ack_required: t.Optional(t.Boolean({ ...checks({ default: false }) })),
            ack_within_ms: t.Optional(
              t.Integer({
                description: 'needs ack_required and named recipients; else message.overdue per recipient',
                ...checks({ minimum: ACK_WITHIN_MIN_MS, maximum: ACK_WITHIN_MAX_MS }),
              }),
            ),
          },
          {
            examples: [
              { to: ['ada'], subject: 'need src/auth/login.ts', body: 'for the token fix', importance: 'normal', ack_required: true, ack_within_ms: 600_000 },
            ],
          },
        ),
        response: { 201: MessageSchema },
        audit: 'message.send',
        detail: {
          summary: 'Send a message to agents by name, or to every agent',
          description:
            'With X-Instance-Token the sender is that instance\'s name, without one "human". A name reaches whichever instance holds it now or later. Event message.sent (no body).',
          tags: TAGS,
        },
      },
    )
    .get(
      '/api/inbox',
      async ({ query, request }) => {
        const page = await readInbox(ctx, await readerOf(ctx, request), {
          after: intParam(query.after, 'after', 0),
          limit: intParam(query.limit, 'limit', INBOX_LIMIT, 1, INBOX_MAX),
          unacked: isSet(query.unacked),
          waitMs: waitParam(query.wait) ?? 0,
          until: heldUntil(ctx, request),
        })
        return answer(page)
      },
      {
        query: t.Object({
          after: IntQuery("only ids above this (the previous answer's cursor)", { minimum: 0, default: 0 }),
          limit: IntQuery('at most this many', { minimum: 1, maximum: INBOX_MAX, default: INBOX_LIMIT }),
          unacked: t.Optional(t.String({ description: '1: leave out acked messages' })),
          wait: t.Optional(t.String({ description: 'hold while nothing is there, up to this long (e.g. 25s, at most 60s); then 200 with []' })),
        }),
        response: { 200: t.Object({ messages: t.Array(InboxMessageSchema), cursor: t.Integer({ description: 'the last id returned, else `after`' }) }) },
        detail: {
          summary: "The caller's messages, oldest first (reading does not consume)",
          description:
            'Needs X-Instance-Token. Messages to the caller\'s name or to "*" (not its own broadcasts), with its delivered_at and acked_at; what is returned counts as delivered.',
          tags: TAGS,
        },
      },
    )
    .post(
      '/api/messages/:id/ack',
      async ({ params, request, audit }) => {
        const holder = await holderOf(ctx, request)
        return ackMessage(ctx, audit, holder, messageId(params.id))
      },
      {
        params: IdParams,
        response: { 200: t.Object({ id: t.Integer(), acked_at: t.String() }) },
        audit: 'message.ack',
        detail: {
          summary: 'Ack a message for the caller\'s name',
          description: 'Needs X-Instance-Token. Sets delivered_at too when unset; again: 200 with the same acked_at. 403 when not addressed to the caller\'s name. Event message.acked {id, by}.',
          tags: TAGS,
        },
      },
    )
    .get('/api/messages/:id', ({ params }) => getMessage(ctx, messageId(params.id)), {
      params: IdParams,
      response: { 200: WithReceipts },
      detail: { summary: 'One message with its receipts', tags: TAGS },
    })
    .get('/api/threads/:thread', ({ params }) => getThread(ctx, params.thread), {
      params: t.Object({ thread: t.String() }),
      response: { 200: t.Array(MessageSchema) },
      detail: { summary: "A thread's messages, oldest first", description: 'Unknown thread: 404.', tags: TAGS },
    })
    .get(
      '/api/messages',
      ({ query }) =>
        listMessages(ctx, { q: query.q, from: query.from, to: query.to, thread: query.thread, limit: intParam(query.limit, 'limit', INBOX_LIMIT, 1, INBOX_MAX) }),
      {
        query: t.Object({
          q: t.Optional(t.String({ description: 'words that must all appear, as whole words, in subject and body (any case)' })),
          from: t.Optional(t.String({ description: 'sender name ("human" for people)' })),
          to: t.Optional(t.String({ description: 'a recipient name; "*" for broadcasts' })),
          thread: t.Optional(t.String()),
          limit: IntQuery('at most this many', { minimum: 1, maximum: INBOX_MAX, default: INBOX_LIMIT }),
        }),
        response: { 200: t.Array(MessageSchema) },
        detail: { summary: 'Search messages, newest first', tags: TAGS },
      },
    )
}

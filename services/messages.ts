// Inbox use cases: send (validated per the contract, written with its receipts, its
// message.sent event and its audit entry in one unit), read an inbox (held up to
// `wait` until a message for the name commits), ack, and the reads around them.
// Messages are addressed by agent name, so whichever instance holds the name now or
// later finds them; the hooks show them to agent sessions through pendingForSession.
import type { Bus } from './bus'
import type { Ctx } from './context'
import type { Tx } from '../store'
import type { Instance } from '../store/instances'
import type { Importance, InboxMessage, Message, MessageFilter, Overdue, Receipt } from '../store/messages'
import { forbidden, invalid, notFound } from '../lib/errors'
import { Waiters } from '../lib/waiters'
import { nowIso, nowMs } from '../lib/time'
import { logFailure } from '../obs/log'
import { recordAudit, type AuditScope } from './audit'
import { throwIfEnded } from './credentials'

export const SOURCE = 'messages'
export const IMPORTANCE = ['low', 'normal', 'high', 'urgent'] as const satisfies readonly Importance[]
export const MAX_RECIPIENTS = 100
export const MAX_NAME = 1000
export const MAX_SUBJECT = 200
export const MAX_BODY_BYTES = 64 * 1024
export const MAX_THREAD = 100
export const ACK_WITHIN_MIN_MS = 1_000
export const ACK_WITHIN_MAX_MS = 604_800_000
export const INBOX_LIMIT = 100
export const INBOX_MAX = 1000
/** How much of a body the hooks put in an agent's context. */
export const SHOWN_BODY_CHARS = 2000
/** The sender of a message sent without an instance token: a person. */
export const HUMAN = 'human'

export interface SendInput {
  to?: unknown
  subject?: unknown
  body?: unknown
  thread?: unknown
  reply_to?: unknown
  importance?: unknown
  ack_required?: unknown
  ack_within_ms?: unknown
}

/** A committed message.sent as its waiters get it: the message is read once, by the first of them that needs it. */
export class Sent {
  private read?: Promise<Message | null>
  private last?: readonly InboxMessage[]
  constructor(readonly id: number) {}
  message(ctx: Ctx): Promise<Message | null> {
    return (this.read ??= ctx.store.messages.get(this.id).catch(() => null))
  }
  /** The answer of a woken read: the same page for every read whose mark got the same instant (one batch), so its JSON is written once. */
  page(message: Message, deliveredAt: string): readonly InboxMessage[] {
    if (this.last?.[0]!.delivered_at !== deliveredAt) this.last = Object.freeze([{ ...message, delivered_at: deliveredAt, acked_at: null }])
    return this.last
  }
}

/**
 * The server's held inbox reads (ctx.inboxWaiters), by name: each is woken by the
 * message.sent that commits for its name (or for "*", from someone else), on any
 * replica, and handed that message. Events come in id order and ids commit in
 * increasing order, so the first message to wake a read that found nothing is the
 * oldest one it has not seen. Also the server's delivery marks.
 */
export class InboxWaiters extends Waiters<string, Sent> {
  readonly marks = new DeliveryMarks()

  constructor(bus: Bus, shutdown: AbortSignal) {
    super(shutdown)
    bus.listen((event) => {
      if (event.topic !== 'message.sent') return
      const { id, from, to } = event.data as { id?: unknown; from?: unknown; to?: unknown }
      if (typeof id !== 'number' || !Array.isArray(to)) return
      const sent = new Sent(id)
      if (to[0] === '*') {
        for (const name of this.keys()) if (name !== from) this.wake(name, sent)
      } else for (const name of to) if (typeof name === 'string') this.wake(name, sent)
    })
  }
}

/** How long a committed mark's instant stays known here: a read of the database that started before its commit still shows it. */
const MARK_KEPT_MS = 1_000

/**
 * delivered_at marks, batched: every mark of a turn is written in one unit after the
 * answers that returned them have gone out (delivered_at is the server's record, not a
 * write a client waits on). The instant an answer shows is the one its batch stores, and
 * a second answer of the same message to the same name before that is stored shows it too.
 * A batch waits for the one being written: under load each unit carries more marks.
 */
export class DeliveryMarks {
  private known = new Map<string, string>()
  private batch: { at: string; names: string[]; ids: number[] } | null = null
  private last: Promise<void> = Promise.resolve()

  /** The delivered_at that `id` gets for `name` (stored soon after; shutdown waits for it). */
  mark(ctx: Ctx, name: string, id: number): string {
    const key = `${id} ${name}`
    const known = this.known.get(key)
    if (known) return known
    if (!this.batch) {
      this.batch = { at: nowIso(), names: [], ids: [] }
      this.last = this.last.then(() => new Promise((r) => setImmediate(r))).then(() => this.write(ctx))
      ctx.background.track(this.last)
    }
    this.batch.names.push(name)
    this.batch.ids.push(id)
    this.known.set(key, this.batch.at)
    return this.batch.at
  }

  private async write(ctx: Ctx): Promise<void> {
    const { at, names, ids } = this.batch!
    this.batch = null
    try {
      await ctx.store.write((tx) => tx.messages.markDeliveredMany(names, ids, at))
    } catch (err) {
      logFailure('delivery marks', err, { marks: names.length })
    }
    const forget = () => names.forEach((name, i) => this.known.get(`${ids[i]} ${name}`) === at && this.known.delete(`${ids[i]} ${name}`))
    setTimeout(forget, MARK_KEPT_MS).unref()
  }
}

const isText = (v: unknown, min: number, max: number): v is string => typeof v === 'string' && v.length >= min && v.length <= max

function checkRecipients(to: unknown): string[] {
  if (!Array.isArray(to) || to.length === 0 || to.length > MAX_RECIPIENTS)
    throw invalid(`invalid to: expected 1 to ${MAX_RECIPIENTS} agent names, or ["*"] for every agent`)
  const names: string[] = []
  for (const name of to) {
    if (!isText(name, 1, MAX_NAME) || !name.trim()) throw invalid(`invalid to: each name is a non-blank string of at most ${MAX_NAME} characters`)
    if (!names.includes(name)) names.push(name)
  }
  if (names.includes('*') && names.length > 1) throw invalid('invalid to: "*" (every agent) goes alone, without names')
  return names
}

/** A send request checked against the contract; 400 naming the first field that is wrong. */
function checkSend(body: SendInput) {
  if (typeof body !== 'object' || body === null || Array.isArray(body)) throw invalid('invalid request body: expected a JSON object')
  const to = checkRecipients(body.to)
  if (body.subject === undefined || body.subject === null) throw invalid('subject is required')
  if (!isText(body.subject, 1, MAX_SUBJECT)) throw invalid(`invalid subject: expected 1 to ${MAX_SUBJECT} characters`)
  const text = body.body ?? ''
  if (typeof text !== 'string') throw invalid('invalid body: expected a string')
  if (Buffer.byteLength(text) > MAX_BODY_BYTES) throw invalid(`invalid body: at most ${MAX_BODY_BYTES} bytes (64 KiB)`)
  const importance = body.importance ?? 'normal'
  if (!IMPORTANCE.includes(importance as Importance)) throw invalid(`invalid importance: expected ${IMPORTANCE.join(', ')}`)
  const thread = body.thread ?? null
  if (thread !== null && !isText(thread, 1, MAX_THREAD)) throw invalid(`invalid thread: expected 1 to ${MAX_THREAD} characters`)
  const replyTo = body.reply_to ?? null
  if (replyTo !== null && !(typeof replyTo === 'number' && Number.isSafeInteger(replyTo) && replyTo > 0))
    throw invalid('invalid reply_to: expected the id of an existing message')
  const ackRequired = body.ack_required ?? false
  if (typeof ackRequired !== 'boolean') throw invalid('invalid ack_required: expected true or false')
  const within = body.ack_within_ms ?? null
  if (within !== null) {
    if (typeof within !== 'number' || !Number.isInteger(within) || within < ACK_WITHIN_MIN_MS || within > ACK_WITHIN_MAX_MS)
      throw invalid(`invalid ack_within_ms: expected an integer from ${ACK_WITHIN_MIN_MS} to ${ACK_WITHIN_MAX_MS}`)
    if (!ackRequired) throw invalid('invalid ack_within_ms: it needs ack_required: true')
    if (to[0] === '*') throw invalid('invalid ack_within_ms: only named recipients can be held to an ack deadline, not "*"')
  }
  return {
    to,
    subject: body.subject,
    body: text,
    importance: importance as Importance,
    thread: thread as string | null,
    reply_to: replyTo as number | null,
    ack_required: ackRequired,
    ack_within_ms: within as number | null,
  }
}

/** Sends a message from `sender` (an instance; null: a person). 400 for anything the contract refuses, nothing written. */
export async function sendMessage(ctx: Ctx, audit: AuditScope | undefined, sender: Pick<Instance, 'id' | 'name'> | null, body: SendInput): Promise<Message> {
  const input = checkSend(body)
  return ctx.store.write(async (tx) => {
    let thread = input.thread
    if (input.reply_to !== null) {
      const original = await tx.messages.get(input.reply_to)
      if (!original) throw invalid(`invalid reply_to: no message ${input.reply_to}`)
      thread ??= original.thread
    }
    const message = await tx.messages.insert({
      ...input,
      thread,
      from: sender?.name ?? HUMAN,
      from_instance_id: sender?.id ?? null,
      created_at: nowIso(),
    })
    const { id, from, to, subject, importance } = message
    await tx.emit('message.sent', { id, from, to, subject, thread: message.thread, importance }, SOURCE)
    await recordAudit(tx, audit, `message ${id} to ${to.join(', ')}: ${subject}`)
    return message
  })
}

export interface InboxQuery {
  after: number
  limit: number
  unacked: boolean
  /** Hold up to this long while there is nothing to return (0: answer at once). */
  waitMs: number
  /** Ends the hold with a 401 when aborted: the reader's token revoked or expired. */
  until?: AbortSignal
}

/**
 * The caller's inbox page; what it returns counts as delivered to its name. With
 * `waitMs` and nothing to return, held until a message for the name commits (the
 * wait is registered before each read, so a send committed in between still wakes it)
 * and answered with the message that woke it; `unacked`, or a message at or before
 * `after`, reads the page again.
 */
export async function readInbox(ctx: Ctx, reader: Pick<Instance, 'name'>, q: InboxQuery): Promise<InboxPage> {
  const deadline = Date.now() + q.waitMs
  for (;;) {
    const remaining = deadline - Date.now()
    const wait = remaining > 0 ? ctx.inboxWaiters.wait(reader.name, remaining, q.until) : null
    const messages = await ctx.store.messages.inbox(reader.name, q)
    if (messages.length || !wait) {
      wait?.cancel()
      return page(ctx, reader.name, messages, q.after)
    }
    const woken = await wait.done
    throwIfEnded(q.until)
    if (typeof woken === 'string') return { messages: [], cursor: q.after }
    if (q.unacked || woken.id <= q.after) continue
    const message = await woken.message(ctx)
    if (message) return { messages: woken.page(message, ctx.inboxWaiters.marks.mark(ctx, reader.name, message.id)), cursor: message.id }
  }
}

export interface InboxPage {
  messages: readonly InboxMessage[]
  cursor: number
}

/** An answer: the messages it returns count as delivered to `name` (marked after it goes out, with the instant shown). */
function page(ctx: Ctx, name: string, messages: readonly InboxMessage[], after: number): InboxPage {
  const cursor = messages.at(-1)?.id ?? after
  if (!messages.some((m) => m.delivered_at === null)) return { messages, cursor }
  return { messages: messages.map((m) => (m.delivered_at === null ? { ...m, delivered_at: ctx.inboxWaiters.marks.mark(ctx, name, m.id) } : m)), cursor }
}

/** The message `id` as the caller's name sees it: 404 unknown, 403 not addressed to it. */
function addressed(message: Message | null, name: string, id: number): Message {
  if (!message) throw notFound(`message ${id} not found`)
  const broadcast = message.to[0] === '*'
  if (broadcast ? message.from === name : !message.to.includes(name))
    throw forbidden(`message ${id} is not addressed to ${name} (to: ${message.to.join(', ')}); only its recipients ack it`)
  return message
}

/** Acks message `id` for the caller's name (delivered too); again: the same acked_at, no second event. */
export function ackMessage(ctx: Ctx, audit: AuditScope | undefined, holder: Instance, id: number): Promise<{ id: number; acked_at: string }> {
  return ctx.store.write(async (tx) => {
    const message = addressed(await tx.messages.get(id), holder.name, id)
    const { acked_at, first } = await tx.messages.ack(holder.name, message, nowIso())
    if (first) await tx.emit('message.acked', { id, by: holder.name }, SOURCE)
    await recordAudit(tx, audit, first ? `message ${id} by ${holder.name}` : `message ${id} by ${holder.name} (acked before)`)
    return { id, acked_at }
  })
}

/** A message with its receipts: one per named recipient (in `to` order); for "*", one per name it reached. 404 unknown. */
export async function getMessage(ctx: Ctx, id: number): Promise<Message & { receipts: Receipt[] }> {
  const message = await ctx.store.messages.get(id)
  if (!message) throw notFound(`message ${id} not found`)
  const rows = await ctx.store.messages.receipts(id)
  if (message.to[0] === '*') return { ...message, receipts: rows }
  const byName = new Map(rows.map((r) => [r.to, r]))
  return { ...message, receipts: message.to.map((to) => byName.get(to) ?? { to, delivered_at: null, acked_at: null }) }
}

export async function getThread(ctx: Ctx, thread: string): Promise<Message[]> {
  const messages = await ctx.store.messages.thread(thread)
  if (!messages.length) throw notFound(`thread ${thread} not found`)
  return messages
}

/** Search words: whitespace-separated, keeping only those with a letter or digit (the rest match nothing in a full-text index). */
export const searchWords = (q: string): string[] => q.split(/\s+/).filter((w) => /[\p{L}\p{N}]/u.test(w))

export async function listMessages(ctx: Ctx, filter: { q?: string; from?: string; to?: string; thread?: string; limit: number }): Promise<Message[]> {
  const f: MessageFilter = { limit: filter.limit }
  if (filter.q) f.words = searchWords(filter.q)
  if (filter.from) f.from = filter.from
  if (filter.to) f.to = filter.to
  if (filter.thread) f.thread = filter.thread
  // A search finds every message sent before it: the batch the word index waits for (jobs/word-index.ts) is made now.
  if (f.words?.length) await indexWords(ctx)
  return ctx.store.messages.list(f)
}

/** Brings the word index up to date where it takes messages in batches (SQLite); nothing to do when it is. */
export async function indexWords(ctx: Ctx): Promise<void> {
  if (ctx.store.messages.wordsBehind()) await ctx.store.write((tx) => tx.messages.indexWords())
}

/** A message id from a path: anything but a positive integer names no message. */
export function messageId(raw: string): number {
  if (!/^[1-9]\d{0,15}$/.test(raw) || !Number.isSafeInteger(Number(raw))) throw notFound('message not found')
  return Number(raw)
}

// ---- overdue acks (jobs/overdue.ts runs these on the leader) ----------------------

/** Raises message.overdue for every receipt due at or before now, once each (due_at cleared in the same unit). */
export async function raiseOverdue(ctx: Ctx): Promise<Overdue[]> {
  const now = new Date(nowMs()).toISOString()
  return ctx.store.write(async (tx) => {
    const due = await tx.messages.raiseDue(now)
    for (const o of due) await tx.emit('message.overdue', { id: o.id, to: o.to, from: o.from }, SOURCE)
    return due
  })
}

// ---- for the agent hooks ----------------------------------------------------------

/** Messages for `name` not acked and not yet shown in session `sessionId`, oldest first. */
export const pendingForSession = (tx: Tx, name: string, sessionId: string, limit: number): Promise<InboxMessage[]> =>
  tx.messages.unshown(name, sessionId, limit)

/** `ids` count as shown in the session (and as delivered to `name`), in the caller's unit. */
export const markShown = (tx: Tx, name: string, sessionId: string, ids: number[]): Promise<void> => tx.messages.markShown(name, sessionId, ids)

/** The plain-text listing the hooks put in an agent's context: id, sender, subject, body (cut at 2,000 characters), whether an ack is asked. */
export function formatMessages(messages: readonly Message[]): string {
  return messages
    .map((m) => {
      const tags = [m.importance !== 'normal' ? m.importance : '', m.ack_required ? `ack asked: muster ack ${m.id}` : ''].filter(Boolean)
      const head = `Message ${m.id} from ${m.from}${tags.length ? ` (${tags.join('; ')})` : ''}: ${m.subject}`
      const cut = m.body.length > SHOWN_BODY_CHARS
      const body = cut ? `${m.body.slice(0, SHOWN_BODY_CHARS)}… (${m.body.length - SHOWN_BODY_CHARS} more characters: GET /api/messages/${m.id})` : m.body
      return body ? `${head}\n${body}` : head
    })
    .join('\n\n')
}

// The webhook dispatcher (docs/api/webhooks.md), on the leader only. Every published event
// that matches an active webhook becomes a pending row of the delivery queue
// (store/webhook-deliveries.ts), written right after the event commits rather than in
// its unit: every write of the server publishes events, and matching them there would
// put a webhook lookup in each. Nothing is lost in between: the queue keeps a cursor (the
// last event queued), and a leader that starts (a restart, a kill -9, another replica
// taking over) first queues what the events table holds after it.
//
// Each webhook has its own lane worked one attempt at a time, so a slow receiver delays
// only itself. A new event goes to the lane's fresh queue and is attempted at once,
// whatever older deliveries wait for a retry (no head-of-line blocking; order is not
// promised while retries run); due retries take turns with it. A failed attempt is
// retried after RETRY_BASE_MS·RETRY_FACTOR^(n−1), at most RETRY_CAP_MS, ±JITTER: about
// 2 s, 10 s, 50 s, 4 min, 21 min, 1.7 h and 4 h; the MAX_ATTEMPTS-th failure (about 6 h
// after the event) marks the delivery failed for good. MAX_FAILURES consecutive failed
// attempts disable the webhook; its pending deliveries wait, and enabling sends them
// oldest first. Delivery is at least once: a receiver dedupes on X-Service-Delivery.
import type { Ctx } from '../services/context'
import { isOutage, log, logFailure } from '../obs/log'
import { webhookDeliveries } from '../obs/prometheus'
import { signatureHeaders } from '../lib/webhook-signature'
import { matchesAny } from '../lib/glob'
import type { Event } from '../store'
import type { Webhook } from '../store/webhooks'
import type { Attempt } from '../store/webhook-deliveries'
import { recordAttempt, recordTest } from '../services/webhooks'
import { resolvedRefusal } from '../services/targets'
import { isEcho } from '../services/events'
import { nowIso, nowMs } from '../lib/time'
import { StreamTooLarge, readUpTo } from '../lib/stream'

export const DELIVERY_TIMEOUT_MS = 5000
export const MAX_FAILURES = 10
/** The receiver's answer is read (and discarded) up to this size; a longer one fails the delivery. */
export const MAX_ANSWER = 1024 * 1024

export const RETRY_BASE_MS = 2000
export const RETRY_FACTOR = 5
export const RETRY_CAP_MS = 4 * 3600_000
export const JITTER = 0.2
export const MAX_ATTEMPTS = 8

/** How often the leader looks for due retries (and whether it is still the leader). */
const TICK_MS = 500
/** Events read per step of a catch-up. */
const CATCH_UP_PAGE = 500
/** Due deliveries taken per look. */
const DUE_PAGE = 500
/** The cursor is written at most this often while events match no webhook. */
const CURSOR_EVERY_MS = 5000
const PRUNE_EVERY_MS = 60_000

/** When the attempt after the `attempts`-th failed one is due (ms from now), jitter included. */
export function retryDelay(attempts: number, random = Math.random()): number {
  const base = Math.min(RETRY_BASE_MS * RETRY_FACTOR ** (attempts - 1), RETRY_CAP_MS)
  return Math.round(base * (1 - JITTER + 2 * JITTER * random))
}

export type Delivery = { ok: true; status: number } | { ok: false; error: string; status?: number }

/** The header every delivery carries; an event published by a request carrying it is an echo (services/events.ts). */
export const DELIVERY_HEADER = 'x-service-delivery'

/** One POST of `body` (an event's JSON), signed (both styles, lib/webhook-signature.ts) when there is a secret. Never throws. */
export async function deliver(target: { url: string; secret: string }, delivery: string, topic: string, body: string, stop?: AbortSignal): Promise<Delivery> {
  const headers: Record<string, string> = {
    'content-type': 'application/json',
    'user-agent': 'muster-webhooks',
    'x-service-event': topic,
    [DELIVERY_HEADER]: delivery,
    ...(target.secret ? signatureHeaders(target.secret, delivery, body) : {}),
  }
  const timeout = AbortSignal.timeout(DELIVERY_TIMEOUT_MS)
  try {
    const res = await fetch(target.url, {
      method: 'POST',
      headers,
      body,
      redirect: 'manual',
      signal: stop ? AbortSignal.any([timeout, stop]) : timeout,
    })
    // The receiver's answer counts only once fully read, within the timeout and the size limit.
    await readUpTo(res.body, MAX_ANSWER)
    return res.ok ? { ok: true, status: res.status } : { ok: false, error: `HTTP ${res.status}`, status: res.status }
  } catch (err) {
    if (timeout.aborted) return { ok: false, error: `no answer within ${DELIVERY_TIMEOUT_MS / 1000} s` }
    if (err instanceof StreamTooLarge) return { ok: false, error: `answer too large (over ${MAX_ANSWER} bytes)` }
    return { ok: false, error: (err as Error).message || String(err) }
  }
}

/** deliver(), after the target policy check, timed and counted. */
async function attempt(ctx: Ctx, target: { url: string; secret: string }, delivery: string, topic: string, body: string, stop?: AbortSignal): Promise<Attempt> {
  const at = nowIso()
  const started = performance.now()
  // Checked per delivery too: for webhooks stored before the policy (or under --allow-link-local-targets).
  const refused = await resolvedRefusal(ctx, target.url)
  const result: Delivery = refused ? { ok: false, error: refused } : await deliver(target, delivery, topic, body, stop)
  webhookDeliveries.inc({ outcome: result.ok ? 'success' : 'failure' })
  return { at, ok: result.ok, status: result.status ?? null, error: result.ok ? '' : result.error, duration_ms: Math.round(performance.now() - started) }
}

/** A webhook.test delivery now, listed with the others; the webhook's counters stay as they are. */
export async function sendTest(ctx: Ctx, target: { id: string; url: string; secret: string }): Promise<Attempt> {
  const event: Event = { id: 0, topic: 'webhook.test', data: { webhook_id: target.id }, source: '', created_at: nowIso() }
  const uuid = crypto.randomUUID()
  const result = await attempt(ctx, target, uuid, event.topic, JSON.stringify(event))
  await recordTest(ctx, target.id, event, uuid, result)
  return result
}

/** An event a webhook takes: its topic matches, and it is not older than the webhook (a catch-up reads old events). */
const takes = (hook: Webhook, event: Event) => matchesAny(hook.patterns, event.topic) && event.created_at >= hook.created_at

/** Events that change which deliveries are due (possibly on another replica): look for due work at once. */
const WAKES = new Set(['webhook.enabled', 'webhook.redelivered', 'webhook.updated'])
/** The service's own webhook.* events (services/webhooks.ts); a client may publish the same topics with source "". */
const WEBHOOKS_SOURCE = 'webhooks'

/**
 * Which webhooks were disabled when each event was published, followed through the event
 * stream (seeded from the database at start): an event is queued for the webhooks active when
 * it was published, however late the dispatcher gets to it, so one published while a webhook
 * was disabled never reaches it after an enable, and one published just before a disable
 * waits in its backlog.
 */
class DisabledAt {
  private now = new Set<string>()
  private snapshot: ReadonlySet<string> | null = null
  seeded = false

  seed(hooks: readonly Webhook[]): void {
    for (const hook of hooks) if (!hook.active) this.now.add(hook.id)
    this.snapshot = null
    this.seeded = true
  }

  /** Follows `event` and answers the webhooks disabled as of it (null until seeded: then the database's state decides). */
  follow(event: Event): ReadonlySet<string> | null {
    const id = (event.data as { id?: unknown } | null)?.id
    if (event.source === WEBHOOKS_SOURCE && typeof id === 'string') {
      const before = this.now.size
      if (event.topic === 'webhook.disabled') this.now.add(id)
      else if (event.topic === 'webhook.enabled' || event.topic === 'webhook.created' || event.topic === 'webhook.deleted') this.now.delete(id)
      if (this.now.size !== before) this.snapshot = null
    }
    if (!this.seeded) return null
    // One copy per change, shared by every event until the next one.
    return (this.snapshot ??= new Set(this.now))
  }
}

/** One webhook's work: new deliveries first in line, due retries taking turns with them. */
interface Lane {
  fresh: number[]
  retry: number[]
  running: boolean
  tookFresh: boolean
}

export function startWebhookDispatcher(ctx: Ctx): () => Promise<void> {
  const stopping = new AbortController()
  const lanes = new Map<string, Lane>()
  /** Deliveries in a lane or being attempted, so a look for due work does not queue them twice. */
  const queued = new Set<number>()
  const workers = new Set<Promise<void>>()
  let leading = ctx.store.isLeader()
  let caughtUp = false
  let arrived: { event: Event; disabled: ReadonlySet<string> | null }[] = []
  const disabledAt = new DisabledAt()
  let drainQueued = false
  let lookQueued = false
  /** The newest event seen, and the newest written as the cursor (events that matched nothing move it lazily). */
  let seen = 0
  let cursorWritten = 0
  let cursorAt = 0
  let prunedAt = nowMs()

  // During a database outage every look fails alike: said once, and once more when one succeeds again.
  let inOutage = false
  const failed = (what: string, err: unknown, fields: object = {}) => {
    if (!(inOutage && isOutage(err))) logFailure(what, err, fields)
    inOutage = isOutage(err)
  }

  // Queueing, catch-up and looks for due work run one at a time, so a delivery is never in two lanes.
  let chain: Promise<void> = Promise.resolve()
  const serial = (task: () => Promise<void>) => {
    chain = chain.then(task).then(
      () => {
        if (inOutage) log.info('webhook dispatch runs again: the database is back')
        inOutage = false
      },
      (err) => failed('webhook dispatch failed', err),
    )
  }

  function enqueue(webhookId: string, id: number, fresh: boolean): void {
    if (queued.has(id) || stopping.signal.aborted) return
    queued.add(id)
    let lane = lanes.get(webhookId)
    if (!lane) lanes.set(webhookId, (lane = { fresh: [], retry: [], running: false, tookFresh: false }))
    ;(fresh ? lane.fresh : lane.retry).push(id)
    if (!lane.running) {
      lane.running = true
      const worker = work(webhookId, lane)
      workers.add(worker)
      void worker.finally(() => workers.delete(worker))
    }
  }

  function clear(lane: Lane): void {
    for (const id of [...lane.fresh, ...lane.retry]) queued.delete(id)
    lane.fresh.length = lane.retry.length = 0
  }

  async function work(webhookId: string, lane: Lane): Promise<void> {
    while (!stopping.signal.aborted && leading) {
      const fresh = lane.fresh.length > 0 && (!lane.tookFresh || lane.retry.length === 0)
      const id = fresh ? lane.fresh.shift() : lane.retry.shift()
      if (id === undefined) break
      lane.tookFresh = fresh
      try {
        if (!(await attemptQueued(webhookId, id))) clear(lane)
      } catch (err) {
        // It stays pending: the next look for due work hands it out again.
        failed('webhook delivery could not be read or recorded', err, { webhook: webhookId, delivery: id })
        clear(lane)
      } finally {
        queued.delete(id)
      }
    }
    clear(lane)
    lane.running = false
    if (lanes.get(webhookId) === lane) lanes.delete(webhookId)
  }

  /** One attempt of a queued delivery; false when the webhook takes no more (gone or disabled). */
  async function attemptQueued(webhookId: string, id: number): Promise<boolean> {
    // Read per attempt: the webhook may have been deleted, disabled or changed meanwhile.
    const target = await ctx.store.webhooks.target(webhookId)
    if (!target?.active) return false
    const job = await ctx.store.webhooks.job(id)
    // After a restore the same id may name another webhook's row: only this webhook's pending ones.
    if (job?.state !== 'pending' || job.webhook_id !== webhookId) return true
    const result = await attempt(ctx, target, job.uuid, job.topic, job.payload, stopping.signal)
    // Cut short by shutdown: not an answer from the receiver. It stays pending for the next leader.
    if (stopping.signal.aborted) return false
    const attempts = job.attempts + 1
    const retryAt = result.ok || attempts >= MAX_ATTEMPTS ? null : new Date(nowMs() + retryDelay(attempts)).toISOString()
    const after = await recordAttempt(ctx, webhookId, id, result, retryAt, MAX_FAILURES)
    if (!result.ok) {
      const entry = { webhook: webhookId, delivery: id, event_id: job.event_id, url: target.url, status: result.status, error: result.error, attempts }
      if (retryAt) log.warn({ ...entry, retry_at: retryAt }, 'webhook delivery failed, will retry')
      else log.error(entry, `webhook delivery failed ${attempts} times, given up`)
      if (after && !after.active) log.error({ webhook: webhookId }, `webhook disabled after ${MAX_FAILURES} consecutive failures`)
    }
    return after?.active ?? false
  }

  /**
   * Queues each event for the webhooks that were active when it was published (`disabled`:
   * those that were not; null: the ones disabled now) and take it, and hands the new rows to their lanes.
   */
  async function queueEvents(batch: { event: Event; disabled: ReadonlySet<string> | null }[], moveCursor: boolean): Promise<void> {
    const hooks = await ctx.store.webhooks.all()
    const items: { webhook_id: string; event: Event }[] = []
    for (const { event, disabled } of batch)
      for (const hook of hooks) if ((disabled ? !disabled.has(hook.id) : hook.active) && takes(hook, event)) items.push({ webhook_id: hook.id, event })
    const last = batch.at(-1)!.event.id
    if (!items.length && !moveCursor) return void (seen = Math.max(seen, last))
    const rows = await ctx.store.write((tx) => tx.webhooks.queue(items, last))
    seen = Math.max(seen, last)
    cursorWritten = last
    for (const row of rows) enqueue(row.webhook_id, row.id, true)
  }

  /** Queues what the events table holds after the cursor: what a crash or another leader left undone. */
  async function catchUp(): Promise<void> {
    let after = await ctx.store.webhooks.cursor()
    for (;;) {
      const events = await ctx.store.events.query({ afterId: after, limit: CATCH_UP_PAGE })
      if (!events.length) break
      await queueEvents(events.map((event) => ({ event, disabled: null })), true)
      after = events.at(-1)!.id
    }
    caughtUp = true
  }

  async function drain(): Promise<void> {
    drainQueued = false
    if (!leading) return
    if (!caughtUp) await catchUp()
    const batch = arrived.filter((a) => !isEcho(a.event))
    arrived = []
    try {
      if (batch.length) await queueEvents(batch, false)
    } catch (err) {
      // Not queued, and the cursor did not pass them: the next look catches up from it.
      caughtUp = false
      throw err
    }
  }

  /** Hands due deliveries (retries, a woken backlog, redeliveries, work another leader left) to their lanes, oldest first. */
  async function lookForDue(): Promise<void> {
    lookQueued = false
    if (!leading) return
    if (!caughtUp) await catchUp()
    for (const d of await ctx.store.webhooks.due(nowIso(), DUE_PAGE)) enqueue(d.webhook_id, d.id, false)
  }

  const scheduleDrain = () => {
    if (!drainQueued) (drainQueued = true), serial(drain)
  }
  const scheduleLook = () => {
    if (!lookQueued) (lookQueued = true), serial(lookForDue)
  }

  // Every replica follows the stream, so a new leader knows which webhooks were disabled.
  const unlisten = ctx.bus.listen((event) => {
    const disabled = disabledAt.follow(event)
    if (stopping.signal.aborted || !ctx.store.isLeader()) return
    arrived.push({ event, disabled })
    scheduleDrain()
    if (WAKES.has(event.topic)) scheduleLook()
  })

  async function housekeeping(): Promise<void> {
    if (!disabledAt.seeded) disabledAt.seed(await ctx.store.webhooks.all())
    const now = nowMs()
    if (seen > cursorWritten && now - cursorAt >= CURSOR_EVERY_MS) {
      cursorAt = now
      const through = seen
      await ctx.store.write((tx) => tx.webhooks.advanceCursor(through))
      cursorWritten = through
    }
    if (now - prunedAt >= PRUNE_EVERY_MS) {
      prunedAt = now
      const hooks = await ctx.store.webhooks.list()
      await ctx.store.write(async (tx) => {
        for (const hook of hooks) await tx.webhooks.prune(hook.id)
      })
    }
  }

  const timer = setInterval(() => {
    if (stopping.signal.aborted) return
    const leader = ctx.store.isLeader()
    if (leader !== leading) {
      leading = leader
      caughtUp = false
      arrived = []
      // A replica that lost the lead drops its lanes (an attempt in flight finishes); the new leader picks the rows up.
      if (!leader) for (const lane of lanes.values()) clear(lane)
    }
    if (!leading) return
    scheduleLook()
    serial(housekeeping)
  }, TICK_MS)

  // Every replica: a new leader must know which webhooks the stream disabled.
  serial(async () => disabledAt.seed(await ctx.store.webhooks.all()))
  if (leading) scheduleLook()

  return async () => {
    unlisten()
    clearInterval(timer)
    stopping.abort()
    await chain
    await Promise.all(workers)
  }
}

// Long-poll watches for agents that cannot hold a WebSocket: a state key until
// its ETag changes, event history until a matching event exists. Held requests
// register before they re-check (no missed wake-up), are woken by the commit of
// the change itself (a bus listener), cost nothing while they wait, and end when
// the server shuts down.
import type { Bus } from './bus'
import type { Ctx } from './context'
import type { Doc } from '../store/versioned'
import type { Event } from '../store'
import type { EventQuery } from '../store/events'
import { Waiters } from '../lib/waiters'
import { topicMatcher } from '../lib/glob'
import { notFound } from '../lib/errors'
import { throwIfEnded } from './credentials'

/** The server's held watches (ctx.watches): state keys, and event queries by topic and source. */
export interface Watches {
  state: Waiters<string>
  events: Waiters<string>
  /** Topic and source filter of each events key. */
  filters: Map<string, (e: Event) => boolean>
}

export function watchWaiters(bus: Bus, shutdown: AbortSignal): Watches {
  const w: Watches = { state: new Waiters(shutdown), events: new Waiters(shutdown), filters: new Map() }
  bus.listen((event) => {
    if (event.topic === 'state.changed' && event.source === 'state') w.state.wake((event.data as { key: string }).key)
    // Keys have filters only while a long poll on them is open: without one, an event costs nothing here.
    for (const [key, matches] of w.filters) if (matches(event)) w.events.wake(key)
  })
  return w
}

export type StateWatch = { changed: Doc } | { unchanged: Doc | null }

/**
 * Waits until key's value is not one of `known` (ETag hashes), or, with
 * `known === '*'`, until the key exists. Throws not found when the key is (or
 * becomes) absent while the caller knew a value, 401 when `until` (the caller's token) ends.
 */
export async function watchState(ctx: Ctx, key: string, known: '*' | ((hash: string) => boolean), ms: number, until?: AbortSignal): Promise<StateWatch> {
  const { state } = ctx.watches
  const deadline = Date.now() + ms
  for (;;) {
    const wait = state.wait(key, Math.max(0, deadline - Date.now()), until)
    const doc = await ctx.store.state.get(key)
    if (doc && (known === '*' || !known(doc.hash))) {
      wait.cancel()
      return { changed: doc }
    }
    if (!doc && known !== '*') {
      wait.cancel()
      throw notFound('key not found')
    }
    const why = await wait.done
    throwIfEnded(until)
    if (why !== 'woken') return { unchanged: doc }
  }
}

/** Events matching `q` after `q.afterId`, waiting up to `ms` for the first one; [] when none came; 401 when `until` (the caller's token) ends. */
export async function waitForEvents(ctx: Ctx, q: EventQuery & { afterId: number }, ms: number, until?: AbortSignal): Promise<Event[]> {
  const w = ctx.watches
  const key = `${q.source ?? '\u0000'}\u0001${q.topic ?? '*'}`
  if (!w.filters.has(key)) {
    const topic = topicMatcher(q.topic || '*')
    w.filters.set(key, (e) => topic(e.topic) && (q.source === undefined || e.source === q.source))
  }
  const deadline = Date.now() + ms
  try {
    for (;;) {
      const wait = w.events.wait(key, Math.max(0, deadline - Date.now()), until)
      const found = await ctx.store.events.query(q)
      if (found.length) {
        wait.cancel()
        return found
      }
      const why = await wait.done
      throwIfEnded(until)
      if (why !== 'woken') return []
    }
  } finally {
    if (!w.events.keys().includes(key)) w.filters.delete(key)
  }
}

// Long-poll watches for agents that cannot hold a WebSocket: a state key until
// its ETag changes, event history until a matching event exists. Held requests
// register before they re-check (no missed wake-up), are woken by the commit of
// the change itself (a bus listener), cost nothing while they wait, and end when
// the server shuts down.
import type { Ctx } from './context'
import type { Doc } from '../store/versioned'
import type { Event } from '../store'
import type { EventQuery } from '../store/events'
import { Waiters } from '../lib/waiters'
import { topicMatcher } from '../lib/glob'
import { notFound } from '../lib/errors'

interface Watches {
  state: Waiters<string>
  events: Waiters<string>
  /** Topic and source filter of each events key. */
  filters: Map<string, (e: Event) => boolean>
}
const all = new WeakMap<Ctx, Watches>()

function watchesOf(ctx: Ctx): Watches {
  let w = all.get(ctx)
  if (w) return w
  const made: Watches = { state: new Waiters(ctx.shutdown), events: new Waiters(ctx.shutdown), filters: new Map() }
  ctx.bus.listen((event) => {
    if (event.topic === 'state.changed' && event.source === 'state') made.state.wake((event.data as { key: string }).key)
    for (const key of made.events.keys()) if (made.filters.get(key)?.(event)) made.events.wake(key)
  })
  all.set(ctx, (w = made))
  return w
}

export type StateWatch = { changed: Doc } | { unchanged: Doc | null }

/**
 * Waits until key's value is not one of `known` (ETag hashes), or, with
 * `known === '*'`, until the key exists. Throws not found when the key is (or
 * becomes) absent while the caller knew a value.
 */
export async function watchState(ctx: Ctx, key: string, known: '*' | ((hash: string) => boolean), ms: number): Promise<StateWatch> {
  const { state } = watchesOf(ctx)
  const deadline = Date.now() + ms
  for (;;) {
    const wait = state.wait(key, Math.max(0, deadline - Date.now()))
    const doc = await ctx.store.state.get(key)
    if (doc && (known === '*' || !known(doc.hash))) {
      wait.cancel()
      return { changed: doc }
    }
    if (!doc && known !== '*') {
      wait.cancel()
      throw notFound('key not found')
    }
    if ((await wait.done) !== 'woken') return { unchanged: doc }
  }
}

/** Events matching `q` after `q.afterId`, waiting up to `ms` for the first one; [] when none came. */
export async function waitForEvents(ctx: Ctx, q: EventQuery & { afterId: number }, ms: number): Promise<Event[]> {
  const w = watchesOf(ctx)
  const key = `${q.source ?? '\u0000'}\u0001${q.topic ?? '*'}`
  if (!w.filters.has(key)) {
    const topic = topicMatcher(q.topic || '*')
    w.filters.set(key, (e) => topic(e.topic) && (q.source === undefined || e.source === q.source))
  }
  const deadline = Date.now() + ms
  try {
    for (;;) {
      const wait = w.events.wait(key, Math.max(0, deadline - Date.now()))
      const found = await ctx.store.events.query(q)
      if (found.length) {
        wait.cancel()
        return found
      }
      if ((await wait.done) !== 'woken') return []
    }
  } finally {
    if (!w.events.keys().includes(key)) w.filters.delete(key)
  }
}

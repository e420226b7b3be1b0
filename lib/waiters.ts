// Held requests: a caller waits on a key until something wakes it, its time runs
// out, or the server shuts down. Waking is done by the write itself (after its
// COMMIT), never by polling. First come, first served within a key. A wake may hand
// the waiters a value (`V`, what woke them); by default it is just 'woken'.

export type WakeReason = 'woken' | 'timeout' | 'shutdown' | 'ended'

/** Why a wait ended without a wake: its time ran out, the server stops, or its caller's `until` signal was aborted. */
type Ended = 'timeout' | 'shutdown' | 'ended'

interface Waiter<V> {
  resolve(reason: V | Ended): void
}

export class Waiters<K = string, V = 'woken'> {
  private byKey = new Map<K, Set<Waiter<V>>>()

  constructor(private shutdown: AbortSignal) {}

  /**
   * Resolves 'woken' at the next wake(key), 'timeout' after `ms`, 'shutdown' when the
   * server stops, 'ended' when `until` is aborted (the caller's token revoked or
   * expired: http/caller.ts heldUntil). Register before re-checking the condition: a
   * change committed between the check and the wait then still wakes it (no missed wake-up).
   */
  wait(key: K, ms: number, until?: AbortSignal): { done: Promise<V | Ended>; cancel(): void } {
    let waiter!: Waiter<V>
    let timer: ReturnType<typeof setTimeout> | undefined
    const onShutdown = () => waiter.resolve('shutdown')
    const onEnd = () => waiter.resolve('ended')
    const done = new Promise<V | Ended>((resolve) => {
      waiter = {
        resolve: (reason) => {
          clearTimeout(timer)
          this.shutdown.removeEventListener('abort', onShutdown)
          until?.removeEventListener('abort', onEnd)
          const set = this.byKey.get(key)
          set?.delete(waiter)
          if (set && !set.size) this.byKey.delete(key)
          resolve(reason)
        },
      }
    })
    if (this.shutdown.aborted) waiter.resolve('shutdown')
    else if (until?.aborted) waiter.resolve('ended')
    else {
      let set = this.byKey.get(key)
      if (!set) this.byKey.set(key, (set = new Set()))
      set.add(waiter)
      timer = setTimeout(() => waiter.resolve('timeout'), ms)
      this.shutdown.addEventListener('abort', onShutdown, { once: true })
      until?.addEventListener('abort', onEnd, { once: true })
    }
    return { done, cancel: () => waiter.resolve('timeout') }
  }

  /** Wakes every waiter of `key` (they re-check; whoever loses waits again), handing each `value`. */
  wake(key: K, value: V = 'woken' as V): void {
    const set = this.byKey.get(key)
    if (!set) return
    for (const w of [...set]) w.resolve(value)
  }

  /** Wakes the first waiter of `key` only (first come, first served). */
  wakeFirst(key: K, value: V = 'woken' as V): boolean {
    const first = this.byKey.get(key)?.values().next().value
    if (!first) return false
    first.resolve(value)
    return true
  }

  /** Wakes every waiter of every key. */
  wakeAll(): void {
    for (const key of [...this.byKey.keys()]) this.wake(key)
  }

  /** Keys that have someone waiting (e.g. to wake only those whose filter an event matches). */
  keys(): K[] {
    return [...this.byKey.keys()]
  }

  /** Held requests right now (for metrics and benchmarks). */
  get size(): number {
    let n = 0
    for (const set of this.byKey.values()) n += set.size
    return n
  }
}

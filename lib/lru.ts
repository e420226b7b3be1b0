// The one least-recently-used cache, as CLOCK (second chance): a hit only marks its
// entry used; eviction walks from the oldest entry, moving marked ones to the back
// (mark cleared) and dropping the first unmarked one, until the total weight fits
// `capacity`. Moving every hit to the back of the Map (delete + set) was a visible share
// of a cached state GET: the Map's churn, not the lookup. Weight is 1 per entry unless a
// `weigh` function says otherwise (bytes, say).
interface Entry<V> {
  value: V
  weight: number
  used: boolean
}

export class Lru<K, V> {
  private map = new Map<K, Entry<V>>()
  private total = 0

  constructor(
    private capacity: number,
    private weigh: (value: V) => number = () => 1,
  ) {}

  get(key: K): V | undefined {
    const entry = this.map.get(key)
    if (entry === undefined) return undefined
    entry.used = true
    return entry.value
  }

  /** The cached value, or `make()`'s, which is then cached. */
  getOr(key: K, make: () => V): V {
    const hit = this.get(key)
    if (hit !== undefined) return hit
    const value = make()
    this.set(key, value)
    return value
  }

  /** Caches `value`; one heavier than a sixteenth of the capacity is not kept (it would flush the cache). */
  set(key: K, value: V): void {
    this.delete(key)
    const weight = this.weigh(value)
    if (weight > this.capacity / 16 && this.capacity >= 16) return
    this.map.set(key, { value, weight, used: false })
    this.total += weight
    // The entry just set is passed over once too: with every other entry marked, it would otherwise go first.
    let spared = false
    while (this.total > this.capacity) {
      for (const [oldest, entry] of this.map) {
        this.map.delete(oldest)
        if (entry.used || (oldest === key && !spared)) {
          spared ||= oldest === key
          entry.used = false
          this.map.set(oldest, entry)
          continue
        }
        this.total -= entry.weight
        break
      }
    }
  }

  delete(key: K): void {
    const old = this.map.get(key)
    if (old === undefined) return
    this.map.delete(key)
    this.total -= old.weight
  }

  clear(): void {
    this.map.clear()
    this.total = 0
  }
}

/**
 * How --cache-size is shared out among the caches that hold stored values, so their sum
 * stays within it: the current documents of the SQLite engine (store/sqlite/versioned.ts)
 * and the kept answers of small state values (routes/state.ts), which copy the bytes of
 * documents also in the first. Every other cache is bounded by entries of bounded size.
 */
export function cacheShares(bytes: number): { documents: number; answers: number } {
  const answers = Math.floor(bytes / 8)
  return { documents: bytes - answers, answers }
}

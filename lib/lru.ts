// The one least-recently-used cache: a Map in use order (a hit moves the entry to
// the end), evicting from the front once the total weight passes `capacity`.
// Weight is 1 per entry unless a `weigh` function says otherwise (bytes, say).
export class Lru<K, V> {
  private map = new Map<K, V>()
  private total = 0

  constructor(
    private capacity: number,
    private weigh: (value: V) => number = () => 1,
  ) {}

  get(key: K): V | undefined {
    const value = this.map.get(key)
    if (value === undefined) return undefined
    this.map.delete(key)
    this.map.set(key, value)
    return value
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
    this.map.set(key, value)
    this.total += weight
    for (const [oldest, v] of this.map) {
      if (this.total <= this.capacity) break
      this.map.delete(oldest)
      this.total -= this.weigh(v)
    }
  }

  delete(key: K): void {
    const old = this.map.get(key)
    if (old === undefined) return
    this.map.delete(key)
    this.total -= this.weigh(old)
  }

  clear(): void {
    this.map.clear()
    this.total = 0
  }
}

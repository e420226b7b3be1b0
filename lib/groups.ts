// Values grouped by key, a set per key gone once empty: the index beside a map that lets
// a key's entries be dropped (an instance's tokens, its sessions) without a walk over all.
// Pure: no I/O.
export class Groups<K, V> {
  private of = new Map<K, Set<V>>()

  add(key: K, value: V): void {
    const values = this.of.get(key)
    if (values) values.add(value)
    else this.of.set(key, new Set([value]))
  }

  remove(key: K, value: V): void {
    const values = this.of.get(key)
    if (!values) return
    values.delete(value)
    if (!values.size) this.of.delete(key)
  }

  /** The key's values, taken out (none left under it). */
  take(key: K): Iterable<V> {
    const values = this.of.get(key)
    this.of.delete(key)
    return values ?? []
  }

  clear(): void {
    this.of.clear()
  }
}

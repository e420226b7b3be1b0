// Values grouped by key, gone once a key has none: the index beside a map that lets a key's
// entries be dropped (an instance's tokens, its sessions) without a walk over all. Most keys
// hold one value (an instance's one token, its one session), kept as it is: a set is made
// only for a second, so a fleet's ten thousand keys cost no set each.
// Pure: no I/O.
export class Groups<K, V extends string | number> {
  private of = new Map<K, V | Set<V>>()

  add(key: K, value: V): void {
    const values = this.of.get(key)
    if (values === undefined) this.of.set(key, value)
    else if (values instanceof Set) values.add(value)
    else if (values !== value) this.of.set(key, new Set([values, value]))
  }

  remove(key: K, value: V): void {
    const values = this.of.get(key)
    if (values === undefined) return
    if (!(values instanceof Set)) return void (values === value && this.of.delete(key))
    values.delete(value)
    if (values.size === 1) this.of.set(key, values.values().next().value!)
  }

  /** The key's values, taken out (none left under it). */
  take(key: K): Iterable<V> {
    const values = this.of.get(key)
    this.of.delete(key)
    return values === undefined ? [] : values instanceof Set ? values : [values]
  }

  clear(): void {
    this.of.clear()
  }
}

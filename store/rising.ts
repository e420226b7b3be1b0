// Times that rise with ids, where one process is the database's only writer (SQLite):
// rows are stamped by a clock that never goes back, so a time window is an id range,
// found by binary search on the rowid, and the table needs no time index (whose page
// every insert would dirty, in its savepoint and in its COMMIT's WAL frames).

/** A stamp that never goes back, whatever the machine's clock does: after a step back, rows take the newest one's time until the clock catches up. */
export function risingStamp(now: () => string, newest: string): () => string {
  return () => {
    const time = now()
    if (time > newest) newest = time
    return newest
  }
}

/** The lowest and highest id of a table; null when it is empty. */
export interface IdEnds {
  first: number | null
  last: number | null
}

/** The first row at or after an id, with its time (null past the last one). */
export type Probe = (id: number) => { id: number; time: string } | null | Promise<{ id: number; time: string } | null>

/**
 * The least id from which every row's time passes `passes` (times rise with ids), by
 * binary search: a probe per halving instead of a scan. Past the last id when none passes.
 */
async function firstIdWhere(ends: IdEnds, probe: Probe, passes: (time: string) => boolean): Promise<number> {
  if (ends.first === null || ends.last === null) return 0
  let lo = ends.first
  let hi = ends.last + 1
  while (lo < hi) {
    const mid = Math.floor((lo + hi) / 2)
    const row = await probe(mid)
    if (!row || passes(row.time)) hi = mid
    else lo = row.id + 1
  }
  return lo
}

/** The id conditions (with their arguments) of a time window [from, to] over a table whose times rise with ids. */
export async function idWindow(ends: () => IdEnds | Promise<IdEnds>, probe: Probe, from?: string, to?: string): Promise<{ sql: string[]; args: number[] }> {
  const sql: string[] = []
  const args: number[] = []
  if (!from && !to) return { sql, args }
  const span = await ends()
  if (from) sql.push('id >= ?'), args.push(await firstIdWhere(span, probe, (t) => t >= from))
  if (to) sql.push('id < ?'), args.push(await firstIdWhere(span, probe, (t) => t > to))
  return { sql, args }
}

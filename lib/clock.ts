// The server's notion of now. On one SQLite file it is this machine's clock; with
// replicas on PostgreSQL it is the database's (store/pg/clock.ts sets the offset),
// so timestamps written by different replicas compare as instants.
let offsetMs = 0

export function setClockOffset(ms: number): void {
  offsetMs = Math.round(ms)
}

/** Milliseconds since the epoch, by the shared clock. */
export function nowMs(): number {
  return Date.now() + offsetMs
}

/** The ISO string (RFC 3339 UTC with milliseconds) of `now()`, formatted once per millisecond: under load many callers share one. */
export function isoEachMs(now: () => number): () => string {
  let lastMs = NaN
  let lastIso = ''
  return () => {
    const ms = now()
    if (ms !== lastMs) (lastMs = ms), (lastIso = new Date(ms).toISOString())
    return lastIso
  }
}

/** RFC 3339 UTC with milliseconds, by the shared clock (a PUT stamps three rows). */
export const nowIso = isoEachMs(nowMs)

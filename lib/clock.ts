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

let lastMs = NaN
let lastIso = ''

/** RFC 3339 UTC with milliseconds, by the shared clock; formatted once per millisecond (a PUT stamps three rows). */
export function nowIso(): string {
  const ms = nowMs()
  if (ms !== lastMs) (lastMs = ms), (lastIso = new Date(ms).toISOString())
  return lastIso
}

// Time in one place: the server's clock (shared across replicas), strict RFC 3339
// parsing of query timestamps, and durations as flags and answers write them (500ms, 5m).

// The server's notion of now: on one SQLite file this machine's clock; with replicas on
// PostgreSQL the database's (store/pg/clock.ts sets the offset), so timestamps written by
// different replicas compare as instants.
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

// Date.parse accepts "hello 1", "-1" and 2024-02-30 (rolling it over to March), so query
// parameters are parsed here instead.
const RFC3339 = /^(\d{4})-(\d{2})-(\d{2})(?:[Tt ](\d{2}):(\d{2}):(\d{2})(\.\d{1,9})?([Zz]|([+-])(\d{2}):(\d{2})))?$/

/** The instant `ms` after the RFC 3339 instant `stamp`, in the same form. */
export const afterMs = (stamp: string, ms: number): string => new Date(Date.parse(stamp) + ms).toISOString()

/** Milliseconds since the epoch of an RFC 3339 date-time (or a full date, meaning its UTC midnight); null for anything else. */
export function parseRfc3339(text: string): number | null {
  const m = RFC3339.exec(text)
  if (!m) return null
  const [year, month, day] = [Number(m[1]), Number(m[2]), Number(m[3])]
  const [hour, minute, second] = [Number(m[4] ?? 0), Number(m[5] ?? 0), Number(m[6] ?? 0)]
  if (month < 1 || month > 12 || day < 1 || hour > 23 || minute > 59 || second > 59) return null
  // Day 0 of the next month is the last day of this one.
  if (day > new Date(Date.UTC(year, month, 0)).getUTCDate()) return null
  let offset = 0
  if (m[9]) {
    const [oh, om] = [Number(m[10]), Number(m[11])]
    if (oh > 23 || om > 59) return null
    offset = (m[9] === '-' ? -1 : 1) * (oh * 60 + om) * 60_000
  }
  const ms = Math.floor(Number(`0${m[7] ?? ''}`) * 1000)
  const utc = new Date(0)
  utc.setUTCFullYear(year, month - 1, day) // years 0-99 too, which Date.UTC would move to 19xx
  utc.setUTCHours(hour, minute, second, ms)
  return utc.getTime() - offset
}

/** Parses a duration like 500ms, 2s, 5m, 1h into milliseconds. */
export function parseDuration(text: string): number | null {
  const m = /^(\d+(?:\.\d+)?)(ms|s|m|h)$/.exec(text.trim())
  if (!m) return null
  const ms = Number(m[1]) * { ms: 1, s: 1000, m: 60_000, h: 3_600_000 }[m[2] as 'ms' | 's' | 'm' | 'h']
  return ms > 0 && Number.isFinite(ms) ? Math.round(ms) : null
}

/** Formats milliseconds as a Go-style duration string: 1h2m3.5s, 4m0s, 850ms. */
export function formatDuration(ms: number): string {
  if (ms < 1000) return `${Math.floor(ms)}ms`
  const h = Math.floor(ms / 3_600_000)
  const m = Math.floor((ms % 3_600_000) / 60_000)
  const s = (ms % 60_000) / 1000
  const sec = `${Number.isInteger(s) ? s : s.toFixed(3).replace(/0+$/, '')}s`
  return (h ? `${h}h${m}m` : m ? `${m}m` : '') + sec
}

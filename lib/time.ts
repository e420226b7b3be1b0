// Strict RFC 3339 instants: Date.parse accepts "hello 1", "-1" and 2024-02-30
// (rolling it over to March), so query parameters are parsed here instead.

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

// Query and path parameters: integers, enums, instants, keys, and the
// compare-and-swap conditions of a versioned write.
import { invalid } from '../lib/errors'
import { parseRfc3339 } from '../lib/time'

/** An integer parameter from `min` to `max` (a safe integer: SQLite and JSON keep it exact); absent gives the default, anything else 400. */
export function intParam(value: string | undefined, name: string, def: number, min = 0, max = Number.MAX_SAFE_INTEGER): number {
  if (value === undefined || value === '') return def
  const n = /^\d+$/.test(value) ? Number(value) : NaN
  if (!(n >= min)) throw invalid(`invalid ${name}: expected an integer >= ${min}`)
  if (n > max) throw invalid(`invalid ${name}: expected an integer >= ${min} and <= ${max}`)
  return n
}

/** One of `allowed`, or `def` when absent or empty; anything else is 400 "invalid <name>: expected a, b". */
export function enumParam<T extends string, D extends T | undefined>(value: string | undefined, name: string, allowed: readonly T[], def: D): T | D {
  if (value === undefined || value === '') return def
  if (!allowed.includes(value as T)) throw invalid(`invalid ${name}: expected ${allowed.join(', ')}`)
  return value as T
}

/** An RFC 3339 / ISO 8601 instant, normalised to the stored format; garbage gives 400. */
export function timeParam(value: string | undefined, name: string): string | undefined {
  if (value === undefined || value === '') return undefined
  const ms = parseRfc3339(value)
  if (ms === null || Number.isNaN(new Date(ms).getTime())) throw invalid(`invalid ${name}: expected an RFC 3339 timestamp`)
  return new Date(ms).toISOString()
}


/** A query flag: present and not 0/false/empty. */
export const isSet = (value: string | undefined) => value !== undefined && value !== '' && value !== '0' && value !== 'false'

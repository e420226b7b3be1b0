// Reading an agent's event: the fields every adapter checks the same way.
import { invalid } from '../../../lib/errors'

/** The longest id (a session id, an event name) an event may carry. */
export const MAX_ID = 1000

/** A required id field: a non-empty string of at most MAX_ID characters, else 400 naming it. */
export function requiredId(body: Record<string, unknown>, field: string): string {
  const v = body[field]
  if (typeof v !== 'string' || v.trim() === '') throw invalid(`${field} is required: a non-empty string, as the agent sends it`)
  if (v.length > MAX_ID) throw invalid(`invalid ${field}: at most ${MAX_ID} characters`)
  return v
}

/** An optional string field (anything else reads as absent). */
export const text = (body: Record<string, unknown>, field: string): string | undefined => {
  const v = body[field]
  return typeof v === 'string' ? v : undefined
}

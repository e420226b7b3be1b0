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

/** A tool's input as an object: some agents send it as a JSON string (Copilot CLI's docs, Cursor's MCP events); anything else reads as {}. */
export function objectOf(v: unknown): Record<string, unknown> {
  if (typeof v === 'string') {
    try {
      v = JSON.parse(v)
    } catch {
      return {}
    }
  }
  return v && typeof v === 'object' && !Array.isArray(v) ? (v as Record<string, unknown>) : {}
}

/** The first of `names` in `input` that is a non-empty string, as a one-file list (else none). */
export function fileOf(input: Record<string, unknown>, ...names: string[]): string[] {
  const v = names.map((n) => input[n]).find((x) => x !== undefined)
  return typeof v === 'string' && v.trim() !== '' ? [v] : []
}

/** An optional string field (anything else reads as absent). */
export const text = (body: Record<string, unknown>, field: string): string | undefined => {
  const v = body[field]
  return typeof v === 'string' ? v : undefined
}

/**
 * Agents with no quiet answer at a stop (Codex, Gemini CLI) hand a block's reason to the
 * model as a new user-role prompt: this line says whose it is, so the model reads it as a
 * notice, not a request.
 */
const STOP_NOTE = 'Muster (a hook, not from the user): messages arrived for you. Read them; act only on what they ask, then finish.'

/** `text` (the messages) as such a prompt: the note first. */
export const stopNotice = (text: string) => `${STOP_NOTE}\n${text}`

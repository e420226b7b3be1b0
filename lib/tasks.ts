// Task queue rules that need no I/O: what a valid task is, which status a new or
// requeued task takes, and what its last_error says.
import { invalid } from './errors'

export const TASK_STATUSES = ['blocked', 'ready', 'claimed', 'done', 'failed', 'cancelled'] as const
export type TaskStatus = (typeof TASK_STATUSES)[number]

/** Statuses a task never leaves. */
export const FINISHED: readonly TaskStatus[] = ['done', 'failed', 'cancelled']

export const MAX_TITLE = 1000
export const MAX_ERROR = 10_000
export const MAX_LIST = 100
export const MAX_ATTEMPTS = 1000
export const DEFAULT_MAX_ATTEMPTS = 3
export const MAX_PRIORITY = 1_000_000_000
/** A note's text, in UTF-8 bytes (16 KiB). */
export const MAX_NOTE_BYTES = 16 * 1024
const QUEUE_RE = /^[A-Za-z0-9._-]{1,200}$/

/** Why a claim ended without an ack. */
export type RequeueReason = 'nack' | 'timeout' | 'holder_stale' | 'holder_deregistered'

/** A queue name: letters, digits, `-`, `_`, `.` (like a webhook id), 1 to 200 characters. */
export function checkQueue(queue: string): string {
  if (!QUEUE_RE.test(queue)) throw invalid('invalid queue: 1 to 200 letters, digits, "-", "_" or "."')
  return queue
}

export interface TaskInput {
  title?: unknown
  payload?: unknown
  priority?: unknown
  depends_on?: unknown
  requires?: unknown
  max_attempts?: unknown
  dedupe_key?: unknown
  project?: unknown
  paths?: unknown
}

export interface NewTask {
  queue: string
  title: string
  payload: unknown
  priority: number
  depends_on: number[]
  requires: string[]
  max_attempts: number
  dedupe_key: string | null
  /** The files the task will touch (validated as for reservations by the service); null or absent for none. */
  project?: string | null
  paths?: string[] | null
}

const isInt = (v: unknown, min: number, max: number): v is number => typeof v === 'number' && Number.isInteger(v) && v >= min && v <= max

/** Checks and completes a create body; 400 names the first bad field. */
export function checkTask(queue: string, body: TaskInput): NewTask {
  checkQueue(queue)
  if (typeof body.title !== 'string' || body.title.trim() === '') throw invalid('title is required')
  if (body.title.length > MAX_TITLE) throw invalid(`invalid title: at most ${MAX_TITLE} characters`)
  const priority = body.priority ?? 0
  if (!isInt(priority, -MAX_PRIORITY, MAX_PRIORITY)) throw invalid(`invalid priority: expected an integer from -${MAX_PRIORITY} to ${MAX_PRIORITY}`)
  const deps = body.depends_on ?? []
  if (!Array.isArray(deps) || deps.length > MAX_LIST || !deps.every((d) => isInt(d, 1, Number.MAX_SAFE_INTEGER)))
    throw invalid(`invalid depends_on: expected at most ${MAX_LIST} task ids`)
  const requires = body.requires ?? []
  if (!Array.isArray(requires) || requires.length > MAX_LIST || !requires.every((c) => typeof c === 'string' && c.trim() !== '' && c.length <= 200))
    throw invalid(`invalid requires: expected at most ${MAX_LIST} capabilities of 1 to 200 characters`)
  const maxAttempts = body.max_attempts ?? DEFAULT_MAX_ATTEMPTS
  if (!isInt(maxAttempts, 1, MAX_ATTEMPTS)) throw invalid(`invalid max_attempts: expected an integer from 1 to ${MAX_ATTEMPTS}`)
  const dedupe = body.dedupe_key ?? null
  if (dedupe !== null && (typeof dedupe !== 'string' || dedupe === '' || dedupe.length > 200))
    throw invalid('invalid dedupe_key: expected 1 to 200 characters')
  return {
    queue,
    title: body.title,
    payload: body.payload ?? null,
    priority,
    depends_on: [...new Set(deps as number[])],
    requires: [...new Set(requires as string[])],
    max_attempts: maxAttempts,
    dedupe_key: dedupe,
  }
}

/** An error text for nack: at most MAX_ERROR characters. */
export function checkError(error: unknown): string | null {
  if (error === undefined || error === null) return null
  if (typeof error !== 'string' || error.length > MAX_ERROR) throw invalid(`invalid error: expected a string of at most ${MAX_ERROR} characters`)
  return error
}

/** A note's text: 1 to MAX_NOTE_BYTES bytes, not blank. */
export function checkNote(text: unknown): string {
  if (typeof text !== 'string' || text.trim() === '') throw invalid('text is required: what the next attempt should know')
  if (Buffer.byteLength(text) > MAX_NOTE_BYTES) throw invalid(`invalid text: at most ${MAX_NOTE_BYTES} bytes (16 KiB) of UTF-8`)
  return text
}

/** What a new task starts as, from the statuses of its dependencies. */
export type Start = { status: 'ready' | 'blocked' } | { status: 'failed'; last_error: string }

export function initialStatus(deps: { id: number; status: TaskStatus }[]): Start {
  const broken = deps.find((d) => d.status === 'failed' || d.status === 'cancelled')
  if (broken) return { status: 'failed', last_error: dependencyError(broken.id, broken.status) }
  return { status: deps.every((d) => d.status === 'done') ? 'ready' : 'blocked' }
}

/** last_error of a task failed by a dependency that failed or was cancelled. */
export const dependencyError = (id: number, status: TaskStatus): string =>
  `dependency ${id} ${status === 'cancelled' ? 'was cancelled' : 'failed'}`

/** A claim that ends without an ack goes back to ready, or fails once every attempt is spent. */
export const afterRequeue = (attempts: number, maxAttempts: number): 'ready' | 'failed' => (attempts >= maxAttempts ? 'failed' : 'ready')

const REQUEUE_ERRORS: Record<Exclude<RequeueReason, 'nack'>, string> = {
  timeout: 'claim was not acked or extended in time (visibility timeout)',
  holder_stale: 'claimer went stale',
  holder_deregistered: 'claimer deregistered',
}

/** last_error after a claim ended without an ack: the nack's error, else why the claim was lost. */
export const requeueError = (reason: RequeueReason, error: string | null = null): string =>
  reason === 'nack' ? (error ?? 'nacked without an error') : REQUEUE_ERRORS[reason]

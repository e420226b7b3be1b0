// JSON work too large for the request thread, done on one worker thread: the diff of
// two large versions, the check of a large JSON body. Parsing 10 MB of small values
// takes a quarter of a second and a diff of two seconds, during which no other
// request is answered (issue 38); on the worker only other large jobs wait.
import { nestedDeeperThan } from './json'
import { workerUrl } from './workers'

/** At most this many bytes of JSON are worked on in the request thread (a few milliseconds); more go to the worker. */
export const INLINE_JSON_BYTES = 64 * 1024

export type JsonJob = { id: number } & ({ kind: 'diff'; a: Uint8Array; b: Uint8Array } | { kind: 'check'; bytes: Uint8Array; parse: boolean })
/** The diff of two stored versions as JSON text, or which of them (1 or 2) is not JSON. */
export type DiffText = { json: string } | { notJson: 1 | 2 }
type Answers = { diff: DiffText; check: JsonProblem }
export type JsonAnswer = { id: number; answer: DiffText | JsonProblem } | { id: number; error: string }

/** What is wrong with JSON bytes: nesting deeper than MAX_DEPTH (lib/json.ts), not JSON at all, or nothing. */
export type JsonProblem = 'deep' | 'not_json' | null

/** The depth check of a JSON body, and with `parse` whether it is JSON at all, in whichever thread calls it. */
export function jsonProblem(bytes: Uint8Array, parse: boolean): JsonProblem {
  if (nestedDeeperThan(bytes)) return 'deep'
  if (!parse) return null
  try {
    JSON.parse(new TextDecoder().decode(bytes))
    return null
  } catch {
    return 'not_json'
  }
}

let worker: Worker | null = null
let nextId = 1
const pending = new Map<number, { resolve: (a: any) => void; reject: (e: Error) => void }>()

function jsonWorker(): Worker {
  if (worker) return worker
  const w = new Worker(workerUrl('lib/json-worker.ts'))
  ;(w as unknown as { unref(): void }).unref() // an idle worker must not keep the process alive
  w.onmessage = (e: MessageEvent<JsonAnswer>) => {
    const p = pending.get(e.data.id)
    pending.delete(e.data.id)
    if (p) 'error' in e.data ? p.reject(new Error(`JSON worker: ${e.data.error}`)) : p.resolve(e.data.answer)
  }
  w.onerror = (e) => {
    // A crashed worker is replaced with the next job; what it held fails now.
    if (worker === w) worker = null
    w.terminate()
    for (const [id, p] of pending) pending.delete(id), p.reject(new Error(`JSON worker failed: ${e.message}`))
  }
  return (worker = w)
}

/** Runs a job on the worker (jobs run one at a time, in order). Bytes are copied, not transferred: they may be a cache's own. */
export function offThread<K extends JsonJob['kind']>(job: Extract<JsonJob, { kind: K }> extends infer J ? Omit<J, 'id'> & { kind: K } : never): Promise<Answers[K]> {
  const id = nextId++
  return new Promise((resolve, reject) => {
    pending.set(id, { resolve, reject })
    jsonWorker().postMessage({ ...job, id })
  })
}

/** jsonProblem, off the request thread when the bytes are large. */
export const jsonProblemOf = (bytes: Uint8Array, parse: boolean): JsonProblem | Promise<JsonProblem> =>
  bytes.byteLength <= INLINE_JSON_BYTES ? jsonProblem(bytes, parse) : offThread({ kind: 'check', bytes, parse })

// JSON diff between two versions, as {operation, path, old_value, new_value}
// entries (path is a JSON pointer). fast-json-patch does the comparison. Versions
// above INLINE_DIFF_BYTES are parsed and compared on a worker thread: two 10 MB
// values took 2.3 s of the request thread, and every other request waited (issue 38).
import type jsonpatchModule from 'fast-json-patch'
import { workerUrl } from './workers'

// Required with the first diff, not when the server starts.
const patches = (): typeof jsonpatchModule => require('fast-json-patch')

export interface DiffEntry {
  operation: string
  path: string
  old_value: unknown
  new_value: unknown
}

const isContainer = (v: unknown) => typeof v === 'object' && v !== null

export function jsonDiff(before: unknown, after: unknown): DiffEntry[] {
  // compare() only walks objects and arrays; a changed scalar root is one replace at "".
  if (!isContainer(before) || !isContainer(after) || Array.isArray(before) !== Array.isArray(after)) {
    return JSON.stringify(before) === JSON.stringify(after)
      ? []
      : [{ operation: 'replace', path: '', old_value: before, new_value: after }]
  }
  const jsonpatch = patches()
  return jsonpatch.compare(before as object, after as object).map((op) => ({
    operation: op.op,
    path: op.path,
    old_value: op.op === 'add' ? null : jsonpatch.getValueByPointer(before, op.path) ?? null,
    new_value: 'value' in op ? op.value : null,
  }))
}

/** The diff of two stored versions as JSON text, or which of them (1 or 2) is not JSON. */
export type DiffText = { json: string } | { notJson: 1 | 2 }

/**
 * Both versions together at most this many bytes are diffed on the request thread
 * (a few milliseconds at most); larger ones on the worker, where a 10 MB pair's
 * seconds hold up only other large diffs.
 */
export const INLINE_DIFF_BYTES = 64 * 1024

/** Parses both versions and diffs them, in whichever thread calls it. */
export function diffText(a: Uint8Array, b: Uint8Array): DiffText {
  const parse = (bytes: Uint8Array) => {
    try {
      return { value: JSON.parse(new TextDecoder().decode(bytes)) as unknown }
    } catch {
      return null
    }
  }
  const before = parse(a)
  if (!before) return { notJson: 1 }
  const after = parse(b)
  if (!after) return { notJson: 2 }
  return { json: JSON.stringify(jsonDiff(before.value, after.value)) }
}

export interface DiffJob {
  id: number
  a: Uint8Array
  b: Uint8Array
}
export type DiffAnswer = { id: number; diff: DiffText } | { id: number; error: string }

let worker: Worker | null = null
let nextId = 1
const pending = new Map<number, { resolve: (d: DiffText) => void; reject: (e: Error) => void }>()

function diffWorker(): Worker {
  if (worker) return worker
  const w = new Worker(workerUrl('lib/jsondiff-worker.ts'))
  ;(w as unknown as { unref(): void }).unref() // an idle worker must not keep the process alive
  w.onmessage = (e: MessageEvent<DiffAnswer>) => {
    const p = pending.get(e.data.id)
    pending.delete(e.data.id)
    if (p) 'error' in e.data ? p.reject(new Error(`diff worker: ${e.data.error}`)) : p.resolve(e.data.diff)
  }
  w.onerror = (e) => {
    // A crashed worker is replaced on the next diff; what it held fails now.
    if (worker === w) worker = null
    w.terminate()
    for (const [id, p] of pending) pending.delete(id), p.reject(new Error(`diff worker failed: ${e.message}`))
  }
  return (worker = w)
}

/** The diff of two stored versions: small ones at once, large ones on the worker (one at a time, in order). */
export function diffVersions(a: Uint8Array, b: Uint8Array): Promise<DiffText> {
  if (a.byteLength + b.byteLength <= INLINE_DIFF_BYTES) return Promise.resolve(diffText(a, b))
  const id = nextId++
  return new Promise((resolve, reject) => {
    pending.set(id, { resolve, reject })
    // Copied, not transferred: the values may be the document cache's own.
    diffWorker().postMessage({ id, a, b } satisfies DiffJob)
  })
}

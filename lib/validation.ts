// Runs validations: small contents inline, large ones on a worker thread, so a
// 10 MB file (about a second of matching) never holds up other requests.
import { evaluate, type RuleDraft, type Subject, type Violation } from './rules'
import type { Answer, Job } from './rules-worker'
import { workerUrl } from './workers'

/** Below this many characters matching takes well under a millisecond per rule: not worth a thread hop. */
export const INLINE_LIMIT = 64 * 1024

let worker: Worker | null = null
let nextId = 1
const pending = new Map<number, { resolve: (v: Violation[]) => void; reject: (e: Error) => void }>()

function failAll(err: Error): void {
  for (const p of pending.values()) p.reject(err)
  pending.clear()
}

function getWorker(): Worker {
  if (worker) return worker
  const w = new Worker(workerUrl('lib/rules-worker.ts'))
  ;(w as unknown as { unref(): void }).unref() // an idle worker must not keep the process alive
  w.onmessage = (e: MessageEvent<Answer>) => {
    const p = pending.get(e.data.id)
    if (!p) return
    pending.delete(e.data.id)
    'error' in e.data ? p.reject(new Error(e.data.error)) : p.resolve(e.data.violations)
  }
  w.onerror = (e) => {
    // A crashed worker is replaced on the next call; what it held fails now.
    worker = null
    w.terminate()
    failAll(new Error(`validation worker failed: ${e.message}`))
  }
  return (worker = w)
}

/** The violations of `subject` under `rules` (semantics in lib/rules.ts). */
export function validate(rules: RuleDraft[], subject: Subject): Promise<Violation[]> {
  if (subject.content.length < INLINE_LIMIT) return Promise.resolve(evaluate(rules, subject))
  const id = nextId++
  return new Promise((resolve, reject) => {
    pending.set(id, { resolve, reject })
    getWorker().postMessage({ id, rules, subject } satisfies Job)
  })
}

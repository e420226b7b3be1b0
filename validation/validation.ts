// Runs validations: cheap ones inline, the rest on a worker thread with a time
// limit, so neither a big file nor a slow pattern ever holds up other requests.
import { AppError } from '../lib/errors'
import { findings, matchingCost, type Findings, type RuleDraft, type Subject } from './rules'
import type { Answer, Job } from './rules-worker'
import { workerUrl } from '../lib/workers'

/** Worst-case matching work (validation/rules.ts matchingCost) done inline (docs/how-it-works.md says what it costs). Above it, a thread hop is cheaper than the risk. */
export const INLINE_BUDGET = 256 * 1024

/**
 * A validation's result with the violations already written as JSON: where they
 * were found (the worker, for big ones), so the request thread neither receives
 * thousands of objects by structured clone nor serialises them again.
 */
export interface Validated {
  /** The JSON array of the listed violations. */
  violations: string
  count: number
  truncated: boolean
}

export const validated = (f: Findings): Validated => ({ violations: JSON.stringify(f.violations), count: f.count, truncated: f.truncated })

let worker: Worker | null = null
let nextId = 1
interface Pending {
  job: Job
  resolve: (v: Validated) => void
  reject: (e: Error) => void
  /** Armed when the worker starts the job. */
  start: () => void
  timer?: ReturnType<typeof setTimeout>
}
const pending = new Map<number, Pending>()

function settle(id: number): Pending | undefined {
  const p = pending.get(id)
  if (!p) return
  pending.delete(id)
  clearTimeout(p.timer)
  return p
}

/** Replaces the worker; the jobs it held are sent to the new one (a job that timed out is settled first). */
function restart(): void {
  worker?.terminate()
  worker = null
  for (const p of pending.values()) getWorker().postMessage(p.job)
}

function getWorker(): Worker {
  if (worker) return worker
  const w = new Worker(workerUrl('validation/rules-worker.ts'))
  ;(w as unknown as { unref(): void }).unref() // an idle worker must not keep the process alive
  w.onmessage = (e: MessageEvent<Answer>) => {
    if ('started' in e.data) return pending.get(e.data.id)?.start()
    const p = settle(e.data.id)
    if (!p) return
    'error' in e.data ? p.reject(new Error(e.data.error)) : p.resolve(e.data.found)
  }
  w.onerror = (e) => {
    // A crashed worker is replaced on the next call; what it held fails now.
    if (worker === w) worker = null
    w.terminate()
    const err = new Error(`validation worker failed: ${e.message}`)
    for (const id of [...pending.keys()]) settle(id)!.reject(err)
  }
  return (worker = w)
}

/**
 * The violations of `subject` under `rules` (semantics in validation/rules.ts), at most
 * MAX_VIOLATIONS of them listed, as JSON text (Validated). A validation on the worker still running after
 * `timeoutMs` is abandoned (the worker is replaced) and fails with 413.
 */
export function validate(rules: RuleDraft[], subject: Subject, timeoutMs: number): Promise<Validated> {
  if (matchingCost(rules, subject) <= INLINE_BUDGET) return Promise.resolve(validated(findings(rules, subject)))
  const id = nextId++
  const job: Job = { id, rules, subject }
  return new Promise((resolve, reject) => {
    const p: Pending = { job, resolve, reject, start: () => {} }
    p.start = () => {
      clearTimeout(p.timer)
      p.timer = setTimeout(() => {
        settle(id)
        reject(new AppError('too_large', `validation took longer than ${timeoutMs} ms and was stopped: send a smaller file or use simpler patterns`))
        restart()
      }, timeoutMs)
    }
    pending.set(id, p)
    getWorker().postMessage(job)
  })
}

// Worker entry: evaluates rules against one content off the request thread. Its
// compiled-pattern cache (validation/rules.ts) lives here, warm across requests.
import { findings, type RuleDraft, type Subject } from './rules'
import { validated, type Validated } from './validation'

export interface Job {
  id: number
  rules: RuleDraft[]
  subject: Subject
}
export type Answer = { id: number; started: true } | { id: number; found: Validated } | { id: number; error: string }

const scope = globalThis as unknown as Worker
scope.onmessage = (e: MessageEvent<Job>) => {
  const { id, rules, subject } = e.data
  // The time limit counts from here: waiting behind another job does not use it up.
  scope.postMessage({ id, started: true } satisfies Answer)
  try {
    scope.postMessage({ id, found: validated(findings(rules, subject)) } satisfies Answer)
  } catch (err) {
    scope.postMessage({ id, error: (err as Error)?.message ?? String(err) } satisfies Answer)
  }
}

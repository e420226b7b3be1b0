// Worker entry: evaluates rules against one content off the request thread. Its
// compiled-pattern cache (lib/rules.ts) lives here, warm across requests.
import { findings, type Findings, type RuleDraft, type Subject } from './rules'

export interface Job {
  id: number
  rules: RuleDraft[]
  subject: Subject
}
export type Answer = { id: number; findings: Findings } | { id: number; error: string }

const scope = globalThis as unknown as Worker
scope.onmessage = (e: MessageEvent<Job>) => {
  const { id, rules, subject } = e.data
  try {
    scope.postMessage({ id, findings: findings(rules, subject) } satisfies Answer)
  } catch (err) {
    scope.postMessage({ id, error: (err as Error)?.message ?? String(err) } satisfies Answer)
  }
}

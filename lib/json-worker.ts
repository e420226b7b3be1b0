// Worker entry: JSON work too large for the request thread (lib/json-thread.ts).
import { diffText } from './jsondiff'
import { jsonProblem, type JsonAnswer, type JsonJob } from './json-thread'

const scope = globalThis as unknown as Worker
scope.onmessage = (e: MessageEvent<JsonJob>) => {
  const job = e.data
  try {
    const answer = job.kind === 'diff' ? diffText(job.a, job.b) : jsonProblem(job.bytes, job.parse)
    scope.postMessage({ id: job.id, answer } satisfies JsonAnswer)
  } catch (err) {
    scope.postMessage({ id: job.id, error: (err as Error)?.message ?? String(err) } satisfies JsonAnswer)
  }
}

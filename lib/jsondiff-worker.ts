// Worker entry: diffs of large versions off the request thread (lib/jsondiff.ts).
import { diffText, type DiffAnswer, type DiffJob } from './jsondiff'

const scope = globalThis as unknown as Worker
scope.onmessage = (e: MessageEvent<DiffJob>) => {
  const { id, a, b } = e.data
  try {
    scope.postMessage({ id, diff: diffText(a, b) } satisfies DiffAnswer)
  } catch (err) {
    scope.postMessage({ id, error: (err as Error)?.message ?? String(err) } satisfies DiffAnswer)
  }
}

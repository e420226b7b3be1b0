// JSON diff between two versions, as {operation, path, old_value, new_value}
// entries (path is a JSON pointer). fast-json-patch does the comparison. Large
// versions are parsed and compared on a worker thread (lib/json-thread.ts): two
// 10 MB values took 2.3 s of the request thread, and every other request waited.
import type jsonpatchModule from 'fast-json-patch'
import { INLINE_JSON_BYTES, offThread } from './json-thread'

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

/** The diff of two stored versions: small ones at once, larger ones (INLINE_JSON_BYTES together) on the JSON worker. */
export function diffVersions(a: Uint8Array, b: Uint8Array): Promise<DiffText> {
  if (a.byteLength + b.byteLength <= INLINE_JSON_BYTES) return Promise.resolve(diffText(a, b))
  return offThread({ kind: 'diff', a, b })
}

// JSON diff between two versions, as {operation, path, old_value, new_value}
// entries (path is a JSON pointer). fast-json-patch does the comparison.
import type jsonpatchModule from 'fast-json-patch'

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

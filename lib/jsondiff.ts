// JSON diff between two versions, as {operation, path, old_value, new_value}
// entries (path is a JSON pointer). fast-json-patch's compare() does the comparison;
// large versions are parsed and compared on a worker thread (lib/json-thread.ts),
// never the request thread.
import type jsonpatchModule from 'fast-json-patch'
import { INLINE_JSON_BYTES, offThread, type DiffText } from './json-thread'
export type { DiffText } from './json-thread'

// Required with the first diff, not when the server starts.
const patches = (): typeof jsonpatchModule => require('fast-json-patch')

export interface DiffEntry {
  operation: string
  path: string
  old_value: unknown
  new_value: unknown
}

const isContainer = (v: unknown) => typeof v === 'object' && v !== null

/**
 * The value at a JSON pointer (RFC 6901), own members only: the package's own lookup
 * refuses a `__proto__` segment, which a stored document may well have as a key.
 */
function valueAt(root: unknown, pointer: string): unknown {
  let v = root
  for (const segment of pointer.split('/').slice(1)) {
    const key = segment.replace(/~1/g, '/').replace(/~0/g, '~')
    if (!isContainer(v) || !Object.hasOwn(v as object, key)) return null
    v = (v as Record<string, unknown>)[key]
  }
  return v
}

export function jsonDiff(before: unknown, after: unknown): DiffEntry[] {
  // compare() only walks objects and arrays; a changed scalar root is one replace at "".
  if (!isContainer(before) || !isContainer(after) || Array.isArray(before) !== Array.isArray(after)) {
    return JSON.stringify(before) === JSON.stringify(after)
      ? []
      : [{ operation: 'replace', path: '', old_value: before, new_value: after }]
  }
  return patches()
    .compare(before as object, after as object)
    .map((op) => ({
      operation: op.op,
      path: op.path,
      old_value: op.op === 'add' ? null : (valueAt(before, op.path) ?? null),
      new_value: 'value' in op ? op.value : null,
    }))
}


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

// JSON diff between two versions, as {operation, path, old_value, new_value}
// entries (path is a JSON pointer). The comparison is fast-json-patch's compare(),
// the same operations in the same order (test/jsondiff.test.ts checks it against
// the package), walked here with array indexes as numbers: compare() builds a
// string key per array element and looks each old value up again by its pointer,
// which made two 10 MB versions take seconds. Large versions are also parsed and
// compared on a worker thread (lib/json-thread.ts), never the request thread.
import { INLINE_JSON_BYTES, offThread } from './json-thread'

export interface DiffEntry {
  operation: string
  path: string
  old_value: unknown
  new_value: unknown
}

const isContainer = (v: unknown): v is object => typeof v === 'object' && v !== null

/** A key as a JSON pointer segment (RFC 6901). */
const escape = (key: string) => (key.includes('/') || key.includes('~') ? key.replace(/~/g, '~0').replace(/\//g, '~1') : key)

/**
 * One member present on both sides, at `parent` + "/" + `key`: recurse into two containers
 * of one kind, else replace when they differ. The pointer is built only when it is used.
 */
function step(before: unknown, after: unknown, parent: string, key: string | number, out: DiffEntry[]): void {
  if (isContainer(before) && isContainer(after) && Array.isArray(before) === Array.isArray(after)) walk(before, after, parent, key, out)
  else if (before !== after) out.push({ operation: 'replace', path: `${parent}/${key}`, old_value: before, new_value: after })
}

/** Two containers of one kind: old members last to first (changed or removed), then new ones in order (added). */
function walk(before: object, after: object, parent: string, key: string | number | null, out: DiffEntry[]): void {
  let removed = false
  if (Array.isArray(before)) {
    const now = after as unknown[]
    if (!before.length && !now.length) return
    const path = key === null ? parent : `${parent}/${key}`
    for (let i = before.length - 1; i >= 0; i--) {
      if (i < now.length) step(before[i], now[i], path, i, out)
      else out.push({ operation: 'remove', path: `${path}/${i}`, old_value: before[i], new_value: null }), (removed = true)
    }
    for (let i = before.length; i < now.length; i++) out.push({ operation: 'add', path: `${path}/${i}`, old_value: null, new_value: now[i] })
    return
  }
  const was = before as Record<string, unknown>
  const now = after as Record<string, unknown>
  const oldKeys = Object.keys(was)
  const newKeys = Object.keys(now)
  if (!oldKeys.length && !newKeys.length) return
  const path = key === null ? parent : `${parent}/${key}`
  for (let i = oldKeys.length - 1; i >= 0; i--) {
    const k = oldKeys[i]!
    if (Object.hasOwn(now, k)) step(was[k], now[k], path, escape(k), out)
    else out.push({ operation: 'remove', path: `${path}/${escape(k)}`, old_value: was[k], new_value: null }), (removed = true)
  }
  if (!removed && newKeys.length === oldKeys.length) return
  for (const k of newKeys) if (!Object.hasOwn(was, k)) out.push({ operation: 'add', path: `${path}/${escape(k)}`, old_value: null, new_value: now[k] })
}

export function jsonDiff(before: unknown, after: unknown): DiffEntry[] {
  // Only objects and arrays are walked; a changed scalar root is one replace at "".
  if (!isContainer(before) || !isContainer(after) || Array.isArray(before) !== Array.isArray(after)) {
    return JSON.stringify(before) === JSON.stringify(after)
      ? []
      : [{ operation: 'replace', path: '', old_value: before, new_value: after }]
  }
  const out: DiffEntry[] = []
  walk(before, after, '', null, out)
  return out
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

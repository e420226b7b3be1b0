// --fields a,b.c: keeps only the named fields of the result, in the order
// given, in every output mode. A dotted name reaches into nested objects (and
// into each element of an array on the way); a list is narrowed row by row.
import { UsageError } from './errors'

export type FieldPath = string[]

export function parseFields(spec: string): FieldPath[] {
  const paths = spec
    .split(',')
    .map((f) => f.trim())
    .filter(Boolean)
    .map((f) => f.split('.'))
  if (!paths.length || paths.some((p) => p.some((seg) => seg === '')))
    throw new UsageError(`option '--fields <list>': expected comma-separated field names such as id,name,holders.instance_name, got '${spec}'`)
  return paths
}

const isObject = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v)

/** `value` narrowed to `paths`. */
export function pickFields(value: unknown, paths: FieldPath[]): unknown {
  if (Array.isArray(value)) return value.map((v) => pickFields(v, paths))
  if (!isObject(value)) return value
  // Paths grouped by their first name, in the order first named.
  const groups = new Map<string, FieldPath[]>()
  for (const [head, ...rest] of paths) groups.set(head!, [...(groups.get(head!) ?? []), rest])
  const out: Record<string, unknown> = {}
  for (const [head, rests] of groups) {
    if (!(head in value)) continue
    const inner = value[head]
    if (rests.some((r) => r.length === 0)) out[head] = inner
    else if (isObject(inner) || Array.isArray(inner)) out[head] = pickFields(inner, rests)
  }
  return out
}

/** The top-level field names of `value` (of its rows, for a list), to tell what --fields can name. */
export function fieldNames(value: unknown): string[] {
  const names = new Set<string>()
  for (const row of Array.isArray(value) ? value : [value]) if (isObject(row)) for (const k of Object.keys(row)) names.add(k)
  return [...names]
}

// A YAML emitter for JSON values (`-o yaml`). Our own rather than Bun.YAML.stringify
// because that one leaves `2026-11-25` and `12:30` plain, which YAML 1.1 readers
// (PyYAML, js-yaml) turn into a date and the number 750. Here a string is plain only
// when no YAML reader can take it for anything else; every other string is written
// double-quoted with JSON's escapes, which YAML reads the same way.
import type { Paint } from './color'
import { paint } from './color'

/** Starts with a letter, `_` or `/` (so never a number, date, time or .inf), holds no indicator. */
const PLAIN = /^[A-Za-z_/][\w ./@+=,()?&%~*!-]*(:[\w./@+=,()?&%~*!-][\w ./@+=,()?&%~*!-]*)*$/
/** YAML 1.1 reads these as booleans or null, in any case. */
const RESERVED = /^(y|n|yes|no|true|false|on|off|null)$/i
/** Characters some YAML readers take as line breaks or refuse, escaped beyond what JSON escapes. */
const AWKWARD = /[\u007f-\u009f\u2028\u2029\ufeff]/g

function quote(s: string): string {
  if (PLAIN.test(s) && !RESERVED.test(s) && !s.endsWith(' ')) return s
  return JSON.stringify(s).replace(AWKWARD, (c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, '0')}`)
}

const isObject = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v)

/** `value` as a YAML document (block style, two-space indent), ending in a newline. */
export function toYaml(value: unknown, p: Paint = paint(false)): string {
  const scalar = (v: unknown): string => {
    if (v === null || v === undefined) return p.dim('null')
    if (typeof v === 'string') return p.string(quote(v))
    if (typeof v === 'number') return p.number(Number.isFinite(v) ? String(v) : '.nan')
    if (typeof v === 'boolean') return p.bool(String(v))
    if (Array.isArray(v)) return '[]'
    return '{}'
  }
  const nested = (v: unknown) => (Array.isArray(v) && v.length > 0) || (isObject(v) && Object.keys(v).length > 0)
  const entries = (o: Record<string, unknown>) => Object.entries(o).filter(([, v]) => v !== undefined)
  // Lines of `v` at `indent`; a sequence item's first line is joined to its "- ".
  const block = (v: unknown, indent: string): string[] => {
    if (Array.isArray(v)) {
      return v.flatMap((item) => {
        if (!nested(item)) return [`${indent}- ${scalar(item)}`]
        const [first, ...rest] = block(item, `${indent}  `)
        return [`${indent}- ${first!.slice(indent.length + 2)}`, ...rest]
      })
    }
    return entries(v as Record<string, unknown>).flatMap(([k, item]) => {
      const key = `${indent}${p.key(quote(k))}:`
      return nested(item) ? [key, ...block(item, Array.isArray(item) ? indent : `${indent}  `)] : [`${key} ${scalar(item)}`]
    })
  }
  return (nested(value) ? block(value, '') : [scalar(value)]).join('\n') + '\n'
}

// `-o table`: a list of objects as aligned columns, one object as key/value
// lines. Columns come from the rows' own keys (a small nested object, such as a
// queue's counts, becomes dotted columns), so no command declares its columns.
// On a terminal the table is fitted to its width: columns empty in every row
// are left out, the widest are cut with "…", and what still does not fit is
// named on stderr.
import type { Paint } from './color'

export interface TableOptions {
  paint: Paint
  /** The terminal's columns; undefined: no fitting (stdout is not a terminal). */
  width?: number
  /** Leave out columns empty in every row (not when the person chose them with --fields). */
  hideEmpty: boolean
}

export interface Rendered {
  text: string
  /** Lines for stderr: what was left out, or that there was nothing. */
  notes: string[]
}

const isObject = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v)
const isEmpty = (v: unknown) => v === null || v === undefined || v === '' || (Array.isArray(v) && v.length === 0)
const width = (s: string) => Bun.stringWidth(s)
/** A nested object with at most this many keys (across all rows) is spread into dotted columns. */
const SPREAD_KEYS = 8
/** A column is never cut narrower than this (or its header). */
const MIN_WIDTH = 12

/** A name to show for an element of a list inside a cell (a lock's holders, a task's notes). */
function label(v: unknown): string | undefined {
  if (!isObject(v)) return v === null || v === undefined ? undefined : String(v)
  const key = ['name', ...Object.keys(v).filter((k) => k.endsWith('_name')), 'id'].find((k) => v[k] !== undefined && v[k] !== null)
  return key === undefined ? undefined : String(v[key])
}

/** One value as text on one line. */
export function cellText(v: unknown): string {
  if (v === null || v === undefined) return ''
  if (typeof v === 'string') return v.replace(/\r?\n/g, '↵')
  if (Array.isArray(v)) {
    const labels = v.map(label)
    return labels.every((l) => l !== undefined) ? labels.join(', ') : `${v.length} items`
  }
  if (isObject(v)) return JSON.stringify(v)
  return String(v)
}

const ISO_TIME = /^(\d{4}-\d\d-\d\d)T(\d\d:\d\d:\d\d)(\.\d+)?Z$/

/** A cell of a table: as cellText, with a UTC timestamp to the second ("2026-11-25 23:47:28Z"), which is never cut. */
function rowCell(v: unknown): string {
  const m = typeof v === 'string' ? ISO_TIME.exec(v) : null
  return m ? `${m[1]} ${m[2]}Z` : cellText(v)
}

function truncate(s: string, w: number): string {
  if (width(s) <= w) return s
  let out = ''
  for (const ch of s) {
    if (width(out + ch) > w - 1) break
    out += ch
  }
  return `${out}…`
}

/** Each row's columns: its own keys, with small nested objects spread into `key.sub`. */
function columnsOf(rows: Record<string, unknown>[]): { names: string[]; get: (row: Record<string, unknown>, name: string) => unknown } {
  const top: string[] = []
  const subs = new Map<string, string[]>()
  for (const row of rows)
    for (const [k, v] of Object.entries(row)) {
      if (!top.includes(k)) top.push(k)
      if (isObject(v)) {
        const known = subs.get(k) ?? []
        for (const sk of Object.keys(v)) if (!known.includes(sk)) known.push(sk)
        subs.set(k, known)
      }
    }
  const spread = (k: string) => {
    const keys = subs.get(k)
    return !!keys && keys.length > 0 && keys.length <= SPREAD_KEYS && rows.every((r) => r[k] === undefined || r[k] === null || isObject(r[k]))
  }
  const names = top.flatMap((k) => (spread(k) ? subs.get(k)!.map((sk) => `${k}.${sk}`) : [k]))
  const get = (row: Record<string, unknown>, name: string) => {
    if (name in row) return row[name]
    const dot = name.indexOf('.')
    if (dot === -1) return undefined
    const outer = row[name.slice(0, dot)]
    return isObject(outer) ? outer[name.slice(dot + 1)] : undefined
  }
  return { names, get }
}

const STATUS = /(^|[_.])status$/

/** Rows of objects as aligned columns under a header. */
export function renderRows(rows: unknown[], o: TableOptions): Rendered {
  if (!rows.length) return { text: '', notes: ['no rows'] }
  const p = o.paint
  if (!rows.every(isObject)) return { text: rows.map((r) => (isObject(r) ? JSON.stringify(r) : cellText(r))).join('\n') + '\n', notes: [] }
  const objects = rows as Record<string, unknown>[]
  const { names: all, get } = columnsOf(objects)
  let names = o.hideEmpty ? all.filter((n) => objects.some((r) => !isEmpty(get(r, n)))) : all
  if (!names.length) names = all
  const cells = objects.map((r) => names.map((n) => rowCell(get(r, n))))
  const isTime = (v: unknown) => typeof v === 'string' && ISO_TIME.test(v)
  const times = names.map((n) => objects.some((r) => isTime(get(r, n))) && objects.every((r) => get(r, n) == null || isTime(get(r, n))))
  const numeric = names.map((n) => objects.every((r) => typeof get(r, n) === 'number' || get(r, n) === null || get(r, n) === undefined))
  let widths = names.map((n, i) => Math.max(width(n), ...cells.map((row) => width(row[i]!))))
  const notes: string[] = []
  if (o.width) {
    const span = (ws: number[]) => ws.reduce((a, b) => a + b, 0) + 2 * (ws.length - 1)
    // Keep the columns that fit when cut to their floor; then cut the widest of those only as far as needed.
    const floors = widths.map((w, i) => (times[i] ? w : Math.min(w, Math.max(MIN_WIDTH, width(names[i]!)))))
    let keep = names.length
    while (keep > 1 && span(floors.slice(0, keep)) > o.width) keep--
    if (keep < names.length) {
      const dropped = names.slice(keep)
      notes.push(`${dropped.length} column(s) not shown for the terminal's width: ${dropped.join(', ')}; choose columns with --fields or see everything with -o yaml`)
      names = names.slice(0, keep)
      widths = widths.slice(0, keep)
      floors.length = keep
    }
    while (span(widths) > o.width) {
      let widest = -1
      widths.forEach((w, i) => {
        if (w > floors[i]! && (widest === -1 || w > widths[widest]!)) widest = i
      })
      if (widest === -1) break
      widths[widest]!--
    }
  }
  const line = (texts: string[], style: (text: string, i: number) => string) =>
    texts
      .slice(0, names.length)
      .map((t, i) => {
        const cut = truncate(t, widths[i]!)
        const pad = ' '.repeat(widths[i]! - width(cut))
        const styled = style(cut, i)
        // The last column is not padded, so lines carry no trailing blanks.
        return numeric[i] ? pad + styled : i === names.length - 1 ? styled : styled + pad
      })
      .join('  ')
  const header = line(names, (t) => p.bold(t))
  const body = cells.map((row, r) =>
    line(row, (t, i) => (STATUS.test(names[i]!) && typeof get(objects[r]!, names[i]!) === 'string' ? p.status(t) : t)),
  )
  return { text: [header, ...body].map((l) => l.trimEnd()).join('\n') + '\n', notes }
}

/** One object as `key  value` lines; nested objects as dotted keys, lists of objects as tables under their key. */
export function renderObject(obj: Record<string, unknown>, o: TableOptions): Rendered {
  const p = o.paint
  const lines: [string, unknown][] = []
  const walk = (v: Record<string, unknown>, prefix: string) => {
    for (const [k, x] of Object.entries(v)) {
      if (x === undefined) continue
      if (isObject(x) && Object.keys(x).length) walk(x, `${prefix}${k}.`)
      else lines.push([prefix + k, x])
    }
  }
  walk(obj, '')
  const keyWidth = Math.max(0, ...lines.map(([k]) => width(k)))
  const out: string[] = []
  const notes: string[] = []
  for (const [k, v] of lines) {
    const key = p.key(k) + ' '.repeat(keyWidth - width(k))
    if (Array.isArray(v) && v.length && v.every(isObject)) {
      out.push(key)
      const sub = renderRows(v, { ...o, width: o.width === undefined ? undefined : o.width - 2 })
      out.push(...sub.text.trimEnd().split('\n').map((l) => `  ${l}`))
      notes.push(...sub.notes)
      continue
    }
    const text = isEmpty(v) ? p.dim(v === null ? 'null' : Array.isArray(v) ? '[]' : '""') : cellText(v)
    const styled = typeof v === 'string' && STATUS.test(k) ? p.status(text) : text
    // A string of several lines keeps them, each under the value column.
    const shown = typeof v === 'string' && v.includes('\n') ? v.split(/\r?\n/).join(`\n${' '.repeat(keyWidth + 2)}`) : styled
    out.push(`${key}  ${shown}`)
  }
  return { text: out.length ? out.join('\n') + '\n' : '', notes }
}

/** Whatever a command returned, for `-o table`. */
export function renderTable(value: unknown, o: TableOptions): Rendered {
  if (Array.isArray(value)) return renderRows(value, o)
  if (isObject(value)) return renderObject(value, o)
  return { text: value === null || value === undefined ? '' : `${cellText(value)}\n`, notes: [] }
}

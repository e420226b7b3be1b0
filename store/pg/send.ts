// Writes a unit sends without waiting for their answers (store/pg/units.ts), and how
// the ones sent between two awaited statements become one statement: each part a
// data-modifying CTE of one WITH, so a state PUT's version row, pointer, event and
// audit entry cost PostgreSQL (and the client) one statement instead of four.
// PostgreSQL runs every data-modifying CTE once, to completion, whether read or not.
// The parts of one statement share a snapshot (none sees another's rows except
// through RETURNING) and run in no set order, so one statement never holds two
// writes to the same table: a second audit entry goes in the next statement, and
// its id stays after the first one's.
import { toPg } from './db'

/** A write without an answer: INSERT, UPDATE or DELETE parts, without WITH of their own. */
export interface Sendable {
  /** `$n` over the sendable's arguments; `@k` names the rows part k RETURNS. */
  readonly parts: string[]
  /** How many arguments it takes. */
  readonly params: number
  readonly id: number
  /** The tables its parts write. */
  readonly tables: string[]
}

let ids = 0

/** Parts in SQLite's `?` / `?n` form (see Sendable.parts for `@k`). */
export function sendable(...parts: string[]): Sendable {
  const pg = parts.map(toPg)
  const params = Math.max(0, ...pg.flatMap((p) => [...p.matchAll(/\$(\d+)/g)].map((m) => Number(m[1]))))
  const tables = pg.map((p) => /^\s*(?:INSERT INTO|UPDATE|DELETE FROM)\s+(\w+)/i.exec(p)?.[1] ?? '')
  if (tables.includes('')) throw new Error(`a sendable part must be an INSERT, UPDATE or DELETE: ${parts.join('; ')}`)
  return { parts: pg, params, id: ids++, tables }
}

/** `items` cut, in order, into runs that write no table twice (each run one statement). */
export function runs(items: Sendable[]): Sendable[][] {
  const out: Sendable[][] = []
  let run: Sendable[] = []
  let tables = new Set<string>()
  for (const s of items) {
    if (s.tables.some((t) => tables.has(t))) out.push(run), (run = []), (tables = new Set())
    run.push(s)
    for (const t of s.tables) tables.add(t)
  }
  out.push(run)
  return out
}

/** Combined texts by the sendables' ids; past this many, new mixes go one sendable per statement. */
const texts = new Map<string, string>()
const MAX_TEXTS = 256

/** One statement for `items` (in order), or null when they are best sent one by one. */
export function combined(items: Sendable[]): string | null {
  if (items.length === 1 && items[0].parts.length === 1) return items[0].parts[0]
  const key = items.map((s) => s.id).join(',')
  let text = texts.get(key)
  if (text === undefined) {
    if (texts.size >= MAX_TEXTS && items.length > 1) return null
    const ctes: string[] = []
    let offset = 0
    for (const s of items) {
      const base = ctes.length
      const at = offset
      for (const part of s.parts)
        ctes.push(`w${ctes.length} AS (${part.replace(/\$(\d+)/g, (_, n) => `$${Number(n) + at}`).replace(/@(\d+)/g, (_, k) => `w${base + Number(k)}`)})`)
      offset += s.params
    }
    texts.set(key, (text = `WITH ${ctes.join(', ')} SELECT 1`))
  }
  return text
}

// Table modules on PostgreSQL: their statements run on the pool (reads) or on the
// running unit's transaction (writes), each turned into `$n` form once.
import type { Dialect, Runner, Stmt } from '../runner'
import { exec, toPg, type Handle } from './db'
import type { PgUnits } from './units'
import { sendable, type Sendable } from './send'

/**
 * `handle` is asked on every call: for writes it is the transaction of the unit running now,
 * and `units` (writes only) sends the statements whose answers nobody reads.
 */
export function pgRunner(handle: () => Handle, units?: PgUnits): Runner {
  const texts: string[] = []
  const sendables: Sendable[] = []
  const text = (s: Stmt<unknown>) => (texts[s.id] ??= toPg(s.sql))
  const run = async <Row>(s: Stmt<Row>, args: unknown[]) => exec<Row>(handle(), text(s), args)
  const resolved = Promise.resolve()
  return {
    all: (s, ...args) => run(s, args),
    get: async (s, ...args) => (await run(s, args))[0] ?? null,
    run: async (s, ...args) => (await run(s, args)).count,
    send: units ? (s, ...args) => (units.send((sendables[s.id] ??= sendable(s.sql)), args), resolved) : undefined,
  }
}

export const PG: Dialect = {
  elements: (p) => `jsonb_array_elements_text(${p}::text::jsonb) WITH ORDINALITY AS x(value, key)`,
  // As JSON text (json keeps each element as JSON.stringify wrote it): jsonb would refuse
  // an element holding \u0000, which SQLite reads fine.
  hasElement: (column, p) => `${p} IN (SELECT json_array_elements(${column}::json)::text)`,
  element: (value) => JSON.stringify(value),
  noLimit: null,
  seq: 'seq',
  total: (e) => `COALESCE(SUM(${e}), 0)::float8`,
  // Through the shortest text of the float: a plain ::numeric cast would keep only 15 significant digits.
  round: (e, digits) => `ROUND(${e}::text::numeric, ${digits})::float8`,
  // An array built first (an InitPlan), then an index scan for its elements.
  inRows: (column, subquery) => `${column} = ANY(ARRAY(${subquery}))`,
  // plainto_tsquery takes plain text: every word ANDed, no operator syntax.
  matches: (p) => `m.search @@ plainto_tsquery('simple', ${p})`,
  words: (words) => words.join(' '),
  wordsIndexedLater: false,
}

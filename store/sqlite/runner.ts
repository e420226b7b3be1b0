// Table modules on SQLite: each statement prepared once per connection, run synchronously.
import type { Database, Statement } from 'bun:sqlite'
import type { Dialect, Param, Runner, Stmt } from '../runner'

/**
 * `sql` with every placeholder (`?`, `?NNN`) outside quotes written `+?`: the same value to
 * SQLite, but one the query planner cannot look into. A plan that looked at a bound value
 * (a `LIMIT ?`, an `= ?` column beside an ORDER BY) makes SQLite prepare the statement
 * again at every bind, which cost more than the statement's run; a statement prepared
 * once per connection is planned for every value anyway.
 */
export function opaqueParams(sql: string): string {
  let out = ''
  let quote: string | null = null
  for (let i = 0; i < sql.length; i++) {
    const c = sql[i]
    if (quote) {
      if (c === quote) quote = null
    } else if (c === "'" || c === '"') quote = c
    else if (c === '?') out += '+'
    out += c
  }
  return out
}

export function sqliteRunner(db: Database): Runner {
  const slots: Statement[] = []
  const prepared = (s: Stmt<unknown>) => (slots[s.id] ??= db.prepare(opaqueParams(s.sql)))
  // A throw becomes a rejection, as on PostgreSQL (inline: these run on every statement).
  return {
    all<Row>(s: Stmt<Row>, ...args: Param[]) {
      try {
        return Promise.resolve(prepared(s).all(...args) as Row[])
      } catch (err) {
        return Promise.reject(err)
      }
    },
    get<Row>(s: Stmt<Row>, ...args: Param[]) {
      try {
        return Promise.resolve((prepared(s).get(...args) as Row | null) ?? null)
      } catch (err) {
        return Promise.reject(err)
      }
    },
    run(s, ...args) {
      try {
        return Promise.resolve(prepared(s).run(...args).changes)
      } catch (err) {
        return Promise.reject(err)
      }
    },
  }
}

/**
 * The reads of committed data: on the writer connection whenever it has no transaction
 * open (nothing uncommitted to see there, and its page cache is warm), else on the reader.
 * The reader's cache is dropped at every commit (WAL): a key lookup on it after each write
 * read its pages again from the WAL. Statements run synchronously, so no unit can begin
 * during a read. Writes outside a unit stay refused, as on the reader alone.
 */
export function committedReads(writer: Database, reader: Database): Runner {
  const w = sqliteRunner(writer)
  const r = sqliteRunner(reader)
  return {
    all: (s, ...args) => (writer.inTransaction ? r : w).all(s, ...args),
    get: (s, ...args) => (writer.inTransaction ? r : w).get(s, ...args),
    run: (s, ...args) => r.run(s, ...args),
  }
}

export const SQLITE: Dialect = {
  elements: (p) => `json_each(${p}) AS x`,
  hasElement: (column, p) => `EXISTS (SELECT 1 FROM json_each(${column}) WHERE value = ${p})`,
  element: (value) => value,
  noLimit: -1,
  seq: 'rowid',
  total: (e) => `TOTAL(${e})`,
  round: (e, digits) => `ROUND(${e}, ${digits})`,
  inRows: (column, subquery) => `${column} IN (${subquery})`,
  matches: (p) => `m.id IN (SELECT rowid FROM messages_fts WHERE messages_fts MATCH ${p})`,
  // Each word a quoted phrase: quotes, stars, colons or NEAR in a word are text, never FTS5 syntax.
  words: (words) => words.map((w) => `"${w.replaceAll('"', '""')}"`).join(' '),
  wordsIndexedLater: true,
}

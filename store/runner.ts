// What a table module needs of a database: statements declared once with SQLite's
// `?` placeholders, a Runner that runs them (store/sqlite/runner.ts over bun:sqlite,
// store/pg/runner.ts over Bun's SQL), and the Dialect fragments where the SQL differs.

/** A statement's text; `Row` only types what it returns. */
export interface Stmt<Row = Record<string, unknown>> {
  /** Dense, one per text: runners keep what they prepared in a slot array by it. */
  readonly id: number
  readonly sql: string
  readonly row?: Row
}

const byText = new Map<string, Stmt<unknown>>()

/**
 * The statement of `sql`: the same object for the same text, so a filter's shape built
 * per call (audit or rules lists) is still prepared once per connection.
 */
export function stmt<Row = Record<string, unknown>>(sql: string): Stmt<Row> {
  let s = byText.get(sql)
  if (!s) byText.set(sql, (s = { id: byText.size, sql }))
  return s as Stmt<Row>
}

export type Param = string | number | boolean | null | Uint8Array

/** Runs statements on one connection (SQLite) or on a pool or the running unit's transaction (PostgreSQL). */
export interface Runner {
  all<Row>(s: Stmt<Row>, ...args: Param[]): Promise<Row[]>
  get<Row>(s: Stmt<Row>, ...args: Param[]): Promise<Row | null>
  /** How many rows the statement changed. */
  run(s: Stmt<unknown>, ...args: Param[]): Promise<number>
  /**
   * Runs a write whose answer nobody reads, inside the running unit: PostgreSQL sends it
   * without waiting (the unit's end waits for it, and its failure fails the unit). A
   * runner without it runs the statement as `run`.
   */
  send?(s: Stmt<unknown>, ...args: Param[]): Promise<void>
}

/** `s` through the runner's `send` where it has one, else `run`. */
export function send(w: Runner, s: Stmt<unknown>, ...args: Param[]): Promise<void> {
  return w.send ? w.send(s, ...args) : w.run(s, ...args).then(() => {})
}

/** The few fragments the two backends spell differently. */
export interface Dialect {
  /** The elements of the JSON array bound at `param`, as a table `x(value, key)`: key orders them as in the array. */
  elements(param: string): string
  /** True when the JSON array of strings in `column` holds the string bound (through `element`) at `param`. */
  hasElement(column: string, param: string): string
  /** How `hasElement` wants its string bound. */
  element(value: string): string
  /** The LIMIT that means "no limit". */
  noLimit: number | null
  /** Insertion order of a table keyed by text (SQLite's rowid; a `seq` column on PostgreSQL). */
  seq: string
  /** A floating-point sum that is 0 over no rows (SQLite's TOTAL): integer sums could overflow. */
  total(expr: string): string
  /** A float rounded to `digits` decimals. */
  round(expr: string, digits: number): string
  /**
   * True when `column` is among the rows of `subquery`, looked up by `column`'s index whatever
   * the plan: PostgreSQL's generic plan of an IN (subquery) may hash-join a scan of the table.
   */
  inRows(column: string, subquery: string): string
  /** True for the message `m` whose subject and body hold every word bound (through `words`) at `param`: each database's full-text index. */
  matches(param: string): string
  /** How `matches` wants its words bound. */
  words(words: string[]): string
  /**
   * True when the full-text index takes the messages in batches (messagesWrites.indexWords, SQLite's
   * FTS5), so a search brings it up to date first; false when each row carries its own (PostgreSQL's
   * generated tsvector).
   */
  wordsIndexedLater: boolean
}

/** BIGINT (and COUNT, SUM) columns come back from PostgreSQL as strings; ours never exceed 2^53. */
export const int = (v: unknown): number => (typeof v === 'number' ? v : Number(v))
export const intOrNull = (v: unknown): number | null => (v === null || v === undefined ? null : int(v))

/** What one unit of work may do besides its SQL: run code once its batch has committed. */
export interface UnitHooks {
  /** Runs after the COMMIT that makes this unit durable; dropped if the unit rolls back. */
  afterCommit(fn: () => void): void
}

// Backup and restore on PostgreSQL, in the embedded backend's format: a backup is
// the same SQLite file `GET /api/backup` gives on SQLite (so it moves between
// backends), copied from one consistent snapshot; a restore checks the file as
// the embedded backend does, then replaces every table's rows in one transaction
// and tells every replica to start its event feed over (RESET_CHANNEL).
import type { SQL } from 'bun'
import { Database } from 'bun:sqlite'
import { basename, dirname } from 'node:path'
import { openDatabase } from '../sqlite/db'
import { checkBackup, removeTemp } from '../backup'
import { IDENTITY_TABLES, WRITE_LOCK, rethrow } from './db'
import { int } from '../runner'
import { ANCHOR_EVERY } from '../versioned'

export const RESET_CHANNEL = 'muster_reset'
const BATCH_ROWS = 500

/** The tables a backup holds, and their columns, as this build's SQLite schema has them. */
function tablesOf(db: Database): { name: string; columns: string[] }[] {
  const all = db.query<{ name: string; sql: string }, []>("SELECT name, sql FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%' ORDER BY name").all()
  // A full-text table (and its shadow tables, and how far it runs: messages_fts_through) is SQLite's index of another
  // table: a snapshot's is empty, and the server that takes it indexes the rows by its first search (store/messages.ts indexWords).
  const virtual = all.filter((t) => /^CREATE VIRTUAL TABLE/i.test(t.sql)).map((t) => t.name)
  const names = all.map((t) => t.name).filter((n) => !virtual.some((v) => n === v || n.startsWith(`${v}_`)))
  return names.map((name) => ({ name, columns: db.query<{ name: string }, []>(`PRAGMA table_info(${name})`).all().map((c) => c.name) }))
}

const ORDER: Record<string, string> = { ...IDENTITY_TABLES, instances: 'seq' }

/**
 * What the embedded schema keeps in place of PostgreSQL's (space, key, version) index
 * (store/sqlite/db.ts, the chain migration): each version's predecessor and every ANCHOR_EVERY-th
 * version. A snapshot derives them from that index; a restore leaves them out.
 */
const DERIVED_COLUMNS: Record<string, Record<string, string>> = {
  doc_versions: { prev: 'LAG(id) OVER (PARTITION BY space, key ORDER BY version)' },
}
const DERIVED_TABLES: Record<string, string> = {
  doc_anchors: `SELECT space, key, version, id AS version_id FROM doc_versions WHERE version % ${ANCHOR_EVERY} = 0`,
}

/** The query that reads table `t`'s rows, as the backup's columns, out of PostgreSQL. */
function selectFor(t: { name: string; columns: string[] }): string {
  if (DERIVED_TABLES[t.name]) return DERIVED_TABLES[t.name]
  const derived = DERIVED_COLUMNS[t.name] ?? {}
  const columns = t.columns.map((c) => (derived[c] ? `${derived[c]} AS "${c}"` : `"${c}"`)).join(', ')
  // Insertion order, so SQLite's rowid order (which some lists use for ties) matches.
  const order = ORDER[t.name] ? ` ORDER BY ${ORDER[t.name]}` : ''
  return `SELECT ${columns} FROM ${t.name}${order}`
}

/** The tables and columns of a backup that PostgreSQL keeps. */
const keptByPg = (tables: { name: string; columns: string[] }[]) =>
  tables
    .filter((t) => !DERIVED_TABLES[t.name])
    .map((t) => ({ name: t.name, columns: t.columns.filter((c) => !DERIVED_COLUMNS[t.name]?.[c]) }))

const quoted = (columns: string[]) => columns.map((c) => `"${c}"`).join(', ')

/** Writes every table of the database into a new SQLite file `target`, from one snapshot. */
export async function pgSnapshot(sql: SQL, target: string): Promise<void> {
  const out = openDatabase(dirname(target), basename(target))
  try {
    // A self-contained file (no -wal beside it), as SQLite's VACUUM INTO makes.
    out.exec('PRAGMA journal_mode = DELETE')
    const tables = tablesOf(out)
    await sql.begin('ISOLATION LEVEL REPEATABLE READ READ ONLY', async (tx) => {
      out.exec('BEGIN')
      for (const t of tables) {
        out.run(`DELETE FROM ${t.name}`) // rows the migrations seed (the fence counter) come from the database too
        const insert = out.prepare(`INSERT INTO ${t.name} (${quoted(t.columns)}) VALUES (${t.columns.map(() => '?').join(', ')})`)
        const rows = await tx.unsafe(selectFor(t))
        for (const row of rows) insert.run(...t.columns.map((c) => sqliteValue(row[c])))
      }
      // SQLite's AUTOINCREMENT counter for events: never hand out an id the cluster already used.
      const [{ value }] = await tx.unsafe('SELECT value FROM event_counter')
      out.run("INSERT OR REPLACE INTO sqlite_sequence (name, seq) VALUES ('events', ?)", [int(value)])
      out.exec('COMMIT')
    }).catch(rethrow)
    out.close()
  } catch (err) {
    out.close()
    removeTemp(target)
    throw new Error(`backup failed: ${(err as Error).message}`)
  }
}

function sqliteValue(v: unknown): string | number | null | Uint8Array {
  if (v === null || v === undefined) return null
  if (v instanceof Uint8Array) return v
  if (typeof v === 'bigint') return Number(v)
  return v as string | number
}

/**
 * Checks `file` (400 and nothing changed when it is not a sound backup of this
 * build's schema), then makes its rows the database's, in one transaction that
 * holds the write lock: no replica writes in between. `file` is removed.
 */
export async function pgRestore(sql: SQL, file: string): Promise<void> {
  await checkBackup(file)
  const src = new Database(file, { readonly: true })
  try {
    const tables = keptByPg(tablesOf(src))
    await sql.begin(async (tx) => {
      await tx.unsafe(`SELECT pg_advisory_xact_lock(${WRITE_LOCK})`)
      await tx.unsafe(`TRUNCATE ${tables.map((t) => t.name).join(', ')}`)
      for (const t of tables) {
        const rows = src.query<Record<string, unknown>, []>(`SELECT ${quoted(t.columns)} FROM ${t.name}`).all()
        for (let i = 0; i < rows.length; i += BATCH_ROWS) {
          const batch = rows.slice(i, i + BATCH_ROWS)
          const args: unknown[] = []
          const values = batch.map((row) => `(${t.columns.map((c) => (args.push(row[c]), `$${args.length}`)).join(', ')})`)
          await tx.unsafe(`INSERT INTO ${t.name} (${quoted(t.columns)}) VALUES ${values.join(', ')}`, args)
        }
      }
      for (const [table, column] of Object.entries(IDENTITY_TABLES))
        await tx.unsafe(
          `SELECT setval(pg_get_serial_sequence('${table}', '${column}'), COALESCE(MAX(${column}), 0) + 1, false) FROM ${table}`,
        )
      const seq = src.query<{ seq: number }, []>("SELECT seq FROM sqlite_sequence WHERE name = 'events'").get()?.seq ?? 0
      await tx.unsafe('UPDATE event_counter SET value = (SELECT GREATEST($1::bigint, COALESCE(MAX(id), 0)) FROM events)', [seq])
      await tx.unsafe(`SELECT pg_notify('${RESET_CHANNEL}', '')`)
    }).catch(rethrow)
  } finally {
    src.close()
    removeTemp(file)
  }
}

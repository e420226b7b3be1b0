// Planner statistics kept up with a table's growth. Bun's client prepares each statement
// once per connection, and PostgreSQL soon keeps one generic plan of it for good. Made
// while a table was nearly empty, that plan scans the table (cheaper than an index, then)
// and goes on scanning it once it holds thousands of rows: an inbox read or an overlap
// check then reads the whole table, once per row of the other side of a join. Only new
// statistics make every session plan such a statement anew, and autovacuum takes them
// on its own schedule (once a minute per database at most, and later on a busy server).
//
// So the leader looks every few seconds for a table that has at least doubled (and
// passed MIN_ROWS) since its last ANALYZE and analyzes it. No statement shape can stand
// in for this: PostgreSQL scans whatever its statistics call tiny, = ANY(ARRAY(…)) too;
// nor can plan_cache_mode = force_custom_plan, which would plan every query on every
// execution. Shrinking tables are left to autovacuum: an index plan made on a big table
// stays cheap on a small one.
import type { SQL } from 'bun'
import { log } from '../../obs/log'

const EVERY_MS = 3_000
/** Below this a scan costs little whatever the plan (and autovacuum looks after 50 changes). */
export const MIN_ROWS = 500
/** ANALYZE waits for no VACUUM or DDL holding the table: it is tried again at the next look. */
const LOCK_TIMEOUT = '1s'

// reltuples is -1 until a table is first analyzed or vacuumed; n_live_tup counts the rows as
// every session's committed inserts and deletes reach the statistics (within a second). Only
// tables this role may analyze: on another's, ANALYZE only warns, and would be tried every look.
const GROWN = `SELECT quote_ident(s.schemaname) || '.' || quote_ident(s.relname) AS name
  FROM pg_stat_user_tables s JOIN pg_class c ON c.oid = s.relid
  WHERE s.schemaname = current_schema() AND pg_has_role(c.relowner, 'USAGE')
    AND s.n_live_tup >= ${MIN_ROWS} AND s.n_live_tup >= 2 * GREATEST(c.reltuples, 0)`

/** Analyzes the tables that grew past twice their analyzed size; their names. */
export async function analyzeGrown(sql: SQL): Promise<string[]> {
  const grown = (await sql.unsafe(GROWN)) as { name: string }[]
  const done: string[] = []
  for (const { name } of grown) {
    try {
      await sql.begin(async (tx) => {
        await tx.unsafe(`SET LOCAL lock_timeout = '${LOCK_TIMEOUT}'`)
        await tx.unsafe(`ANALYZE ${name}`)
      })
      done.push(name)
    } catch (err) {
      log.debug({ err, table: name }, 'ANALYZE of a grown table failed; tried again at the next look')
    }
  }
  return done
}

/** Runs analyzeGrown every few seconds while `leader()` says this replica runs the jobs; returns the stop. */
export function keepStatistics(sql: SQL, leader: () => boolean): () => Promise<void> {
  let running: Promise<void> | null = null
  const timer = setInterval(() => {
    if (!leader() || running) return
    running = analyzeGrown(sql)
      .then((tables) => void (tables.length && log.debug({ tables }, 'analyzed tables that grew')))
      .catch((err) => log.debug({ err }, 'looking for grown tables failed'))
      .finally(() => (running = null))
  }, EVERY_MS)
  timer.unref()
  return async () => {
    clearInterval(timer)
    await running
  }
}

// Which replica runs the jobs (pruning, liveness, compliance, TTL expiry, webhook
// dispatch): the one whose session holds a PostgreSQL advisory lock. The lock goes
// with its session, so when the leader dies (or its connection does) PostgreSQL
// frees it and another replica's next try, within a second, takes over.
import { SQL } from 'bun'
import { log } from '../../obs/log'
import { LEADER_LOCK } from './db'
import { pgWhere } from './errors'

const TRY_EVERY_MS = 1000

export class Leader {
  held = false
  private sql: SQL
  private timer: ReturnType<typeof setInterval> | null = null
  private trying: Promise<void> | null = null
  /** Where the lock is tried, for the log (no password). */
  private where: string

  constructor(url: string) {
    this.where = pgWhere(url)
    // One connection of its own: the lock lives in that session.
    this.sql = new SQL({ url, max: 1, idleTimeout: 0, connectionTimeout: 5 })
  }

  start(): Promise<void> {
    this.timer = setInterval(() => void this.tryOnce(), TRY_EVERY_MS)
    return this.tryOnce()
  }

  private tryOnce(): Promise<void> {
    this.trying ??= (async () => {
      try {
        // Still ours in this very session (a reconnected session holds nothing), else try to take it.
        const [row] = await this.sql.unsafe(
          `SELECT CASE WHEN EXISTS (SELECT 1 FROM pg_locks WHERE locktype = 'advisory' AND pid = pg_backend_pid()
             AND objid = ${LEADER_LOCK} AND granted) THEN true ELSE pg_try_advisory_lock(${LEADER_LOCK}) END AS held`,
        )
        this.set(row.held === true)
      } catch (err) {
        this.set(false)
        log.debug({ err }, `leader check failed on PostgreSQL at ${this.where}`)
      }
    })().finally(() => (this.trying = null))
    return this.trying
  }

  private set(held: boolean): void {
    if (held !== this.held) log.info(held ? 'this replica now runs the jobs (leader)' : 'this replica no longer runs the jobs')
    this.held = held
  }

  async stop(): Promise<void> {
    if (this.timer) clearInterval(this.timer)
    await this.trying
    this.held = false
    await this.sql.close({ timeout: 2 }).catch(() => {})
  }
}

// One server per data dir. The lock is an exclusive SQLite lock on a side file:
// SQLite takes it with fcntl (Bun and Node expose no flock), the kernel drops it
// when the process ends however it ends (kill -9 included), so a crash never
// leaves a stale lock behind, and no pid file can be mistaken for a live owner.
import { Database } from 'bun:sqlite'
import { mkdirSync } from 'node:fs'
import { join } from 'node:path'

export const LOCK_FILE = 'muster.lock'

/** Thrown when another process holds the data dir. */
export class DataDirInUse extends Error {}

/** Takes the data dir's lock for the life of this process; `release` gives it back (stop). */
export function lockDataDir(dataDir: string): { release(): void } {
  mkdirSync(dataDir, { recursive: true })
  const db = new Database(join(dataDir, LOCK_FILE), { create: true })
  try {
    // EXCLUSIVE locking mode keeps the lock after the write transaction that takes it.
    db.exec('PRAGMA busy_timeout = 0')
    db.exec('PRAGMA locking_mode = EXCLUSIVE')
    db.exec('PRAGMA journal_mode = DELETE')
    db.exec('CREATE TABLE IF NOT EXISTS owner (pid INTEGER)')
    db.exec('BEGIN EXCLUSIVE')
    db.exec('DELETE FROM owner')
    db.query('INSERT INTO owner (pid) VALUES (?)').run(process.pid)
    db.exec('COMMIT')
  } catch (err) {
    db.close()
    if (/locked|busy/i.test((err as Error).message)) throw new DataDirInUse(`data dir ${dataDir} is in use by another muster-server`)
    throw err
  }
  return { release: () => db.close() }
}

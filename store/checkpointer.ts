// Runs SQLite WAL checkpoints on a worker thread with its own connection, so the
// request thread never stalls copying the WAL back into the database file.
const scope = globalThis as unknown as Worker

scope.onmessage = (e: MessageEvent<{ file: string; intervalMs: number }>) => {
  const { Database } = require('bun:sqlite') as typeof import('bun:sqlite')
  const db = new Database(e.data.file)
  db.exec('PRAGMA busy_timeout = 5000')
  setInterval(() => {
    try {
      db.query('PRAGMA wal_checkpoint(PASSIVE)').get()
    } catch (err) {
      scope.postMessage({ error: (err as Error)?.message ?? String(err) })
    }
  }, e.data.intervalMs)
}

// Runs SQLite WAL checkpoints on a worker thread with its own connection, so the
// request thread never stalls copying the WAL back into the database file or syncing it.
//
// Under a steady write load a passive checkpoint never lets the WAL start over: the
// writer restarts it only when it begins a transaction with every frame already
// copied, and a new COMMIT always lands first. The writer's own autocheckpoint used to
// end that, inline in a COMMIT (a copy and two fsyncs with the event loop frozen, the
// slowest requests waiting on them). Instead, once the WAL holds `turnoverFrames`,
// this worker asks the main thread for a turnover: the main thread holds new write
// units back (reads go on), this worker runs one checkpoint, which now reaches the end
// of the WAL, and the writer's next transaction starts the WAL over. While writes come
// in, checkpoints run every `busyMs`, so that last one has only a few milliseconds of
// frames to copy.
//
// SQLite syncs the database file only in a checkpoint that reaches the end of the WAL:
// the held one. Left to it, that one fsync writes back every page the passes before it
// copied since the last turnover (tens of MB, all of it a hold). So this worker syncs the
// database file itself once passes have copied SYNC_FRAMES since its last sync (on this
// thread, writes going on), and the held pass's fsync has little left. Not after every
// pass: at a low write rate that was an fsync every `busyMs`, CPU spent per event. Durability is
// unchanged: these are extra syncs; the WAL frames stay until a synced checkpoint has
// copied them.
const scope = globalThis as unknown as Worker

/** `fileFd`: a descriptor of `file` the main thread keeps open (see databaseFd in store/sqlite/index.ts), for the syncs. */
export type ToCheckpointer = { file: string; fileFd: number; busyMs: number; idleMs: number; turnoverFrames: number } | { turnover: true }
export type FromCheckpointer = { error: string } | { wantsTurnover: true } | { turnedOver: true }

type Result = { busy: number; log: number; checkpointed: number }

const CATCH_UP_PASSES = 6
/** Frames (pages) copied into the database file between two syncs of it: 4 MB. */
const SYNC_FRAMES = 1024
const QUICK_PASS_MS = 3

let checkpoint: () => Result | null = () => null

const send = (m: FromCheckpointer) => scope.postMessage(m)

let pass = () => {}

scope.onmessage = (e: MessageEvent<ToCheckpointer>) => {
  const m = e.data
  if ('turnover' in m) {
    // Writes are held back: this pass copies what came since the last one and reaches the end.
    checkpoint()
    send({ turnedOver: true })
    return pass()
  }
  const { Database } = require('bun:sqlite') as typeof import('bun:sqlite')
  const db = new Database(m.file)
  db.exec('PRAGMA busy_timeout = 5000')
  const passive = db.query<Result, []>('PRAGMA wal_checkpoint(PASSIVE)')
  const { fdatasyncSync } = require('node:fs') as typeof import('node:fs')
  const syncDatabase = () => {
    try {
      fdatasyncSync(m.fileFd)
    } catch (err) {
      send({ error: `database sync: ${(err as Error)?.message ?? String(err)}` })
    }
  }
  checkpoint = () => {
    try {
      return passive.get()
    } catch (err) {
      send({ error: (err as Error)?.message ?? String(err) })
      return null
    }
  }
  // The WAL's length when the last turnover was asked for: none is asked again until the WAL
  // has started over (shorter than that), or grown another turnoverFrames (that one did not take).
  let askedAt = -Infinity
  let lastLog = -1
  let lastCopied = 0
  let unsynced = 0
  pass = () => {
    const r = checkpoint()
    if (r) {
      // Copied frames count up from 0 again once the WAL has started over.
      unsynced += r.checkpointed >= lastCopied ? r.checkpointed - lastCopied : r.checkpointed
      lastCopied = r.checkpointed
      if (unsynced >= SYNC_FRAMES) syncDatabase(), (unsynced = 0)
    }
    if (r && r.log < askedAt) askedAt = -Infinity
    if (r && r.log >= m.turnoverFrames && r.log >= askedAt + m.turnoverFrames) {
      // Passes at once, each with only what came during the last, until one is quick (or
      // CATCH_UP_PASSES): the fewer frames are left for the held pass, the shorter writes wait.
      for (let i = 0; i < CATCH_UP_PASSES; i++) {
        const started = performance.now()
        checkpoint()
        if (performance.now() - started < QUICK_PASS_MS) break
      }
      askedAt = r.log
      return send({ wantsTurnover: true })
    }
    const active = !!r && r.log !== lastLog
    lastLog = r?.log ?? -1
    setTimeout(pass, active ? m.busyMs : m.idleMs)
  }
  setTimeout(pass, m.busyMs)
}

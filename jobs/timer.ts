// Runs a background task every `ms`, never two at once; a failure is logged and
// the next tick runs as usual. Returns the function that stops it and waits for a
// run in progress (up to STOP_WAIT_MS), so shutdown does not close the store under a job.
// A run is logged only when it did something (a task returns what it did, as counts):
// an idle server's log stays empty even at debug, where expiry alone would add four
// lines a second.
import { isOutage, log, logFailure } from '../obs/log'
import type { Ctx } from '../services/context'

/** Jobs that run more often than this log their runs at debug, the others at info. */
const QUIET_BELOW_MS = 30_000
/** How long stopping waits for a run in progress: one stuck on a database that stopped answering must not hold shutdown. */
const STOP_WAIT_MS = 3_000

/** What one run did, as counts (`{ released: 2 }`); nothing, or only zeros, when it found nothing to do. */
export type Done = Record<string, number> | void

/** The `job <name> ran` line with what the run did, when it did anything. */
export function logRun(name: string, everyMs: number, done: Done, durationMs: number): void {
  if (!done || !Object.values(done).some((n) => n > 0)) return
  const entry = { job: name, duration_ms: Math.round(durationMs), ...done }
  if (everyMs < QUIET_BELOW_MS) log.debug(entry, `job ${name} ran`)
  else log.info(entry, `job ${name} ran`)
}

/**
 * Runs of job `name` (about every `ms`), one at a time: `start` begins one unless one is going;
 * `stop` waits for the one going (up to STOP_WAIT_MS). Each is logged as `every` logs its runs.
 */
export function jobRuns(name: string, ms: number, task: () => Promise<Done> | Done): { start(): void; stop(): Promise<void> } {
  let running: Promise<void> | null = null
  // During a database outage every run fails alike: said once, and once more when a run succeeds again.
  let inOutage = false
  const run = async () => {
    const started = performance.now()
    try {
      const done = await task()
      if (inOutage) log.info({ job: name, duration_ms: Math.round(performance.now() - started), ...done }, `job ${name} ran again: the database is back`)
      else logRun(name, ms, done, performance.now() - started)
      inOutage = false
    } catch (err) {
      if (!(inOutage && isOutage(err))) logFailure(`job ${name} failed`, err, { job: name })
      inOutage = isOutage(err)
    } finally {
      running = null
    }
  }
  return {
    start: () => void (running ??= run()),
    stop: async () => void (running && (await Promise.race([running, Bun.sleep(STOP_WAIT_MS)]))),
  }
}

export function every(name: string, ms: number, task: () => Promise<Done> | Done): () => Promise<void> {
  const runs = jobRuns(name, ms, task)
  const timer = setInterval(runs.start, ms)
  return async () => {
    clearInterval(timer)
    await runs.stop()
  }
}

/** A job that runs on one replica only (store.isLeader): on the others each tick does nothing. */
export function onLeader(ctx: Ctx, name: string, ms: number, task: () => Promise<Done> | Done): () => Promise<void> {
  return every(name, ms, () => (ctx.store.isLeader() ? task() : undefined))
}

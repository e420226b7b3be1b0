// Runs a background task every `ms`, never two at once; a failure is logged and
// the next tick runs as usual. Returns the function that stops it and waits for a
// run in progress (up to STOP_WAIT_MS), so shutdown does not close the store under a job. Every run is
// logged: at info for jobs that run at most twice a minute, at debug for the
// frequent ones (metrics flush, TTL expiry), which would drown the log at info.
import { isOutage, log, logFailure } from '../obs/log'
import type { Ctx } from '../services/context'

const QUIET_BELOW_MS = 30_000
/** How long stopping waits for a run in progress: one stuck on a database that stopped answering must not hold shutdown. */
const STOP_WAIT_MS = 3_000

export function every(name: string, ms: number, task: () => Promise<unknown> | unknown): () => Promise<void> {
  let running: Promise<void> | null = null
  // During a database outage every run fails alike: said once, and once more when a run succeeds again.
  let inOutage = false
  const run = async () => {
    const started = performance.now()
    try {
      await task()
      const entry = { job: name, duration_ms: Math.round(performance.now() - started) }
      if (inOutage) log.info(entry, `job ${name} ran again: the database is back`)
      else if (ms < QUIET_BELOW_MS) log.debug(entry, `job ${name} ran`)
      else log.info(entry, `job ${name} ran`)
      inOutage = false
    } catch (err) {
      if (!(inOutage && isOutage(err))) logFailure(`job ${name} failed`, err, { job: name })
      inOutage = isOutage(err)
    } finally {
      running = null
    }
  }
  const timer = setInterval(() => {
    running ??= run()
  }, ms)
  return async () => {
    clearInterval(timer)
    if (running) await Promise.race([running, Bun.sleep(STOP_WAIT_MS)])
  }
}

/** A job that runs on one replica only (store.isLeader): on the others each tick does nothing. */
export function onLeader(ctx: Ctx, name: string, ms: number, task: () => Promise<unknown> | unknown): () => Promise<void> {
  return every(name, ms, () => (ctx.store.isLeader() ? task() : undefined))
}

// Overdue acks: a message with ack_within_ms that a named recipient has not acked by
// its deadline raises message.overdue once per recipient. The job sleeps until the
// earliest open deadline (read from the store) instead of ticking: a send with an
// earlier one re-arms it as its message.sent arrives through the bus (from any
// replica), and a re-read every few seconds covers leadership moving here.
import type { Ctx } from '../services/context'
import { raiseOverdue } from '../services/messages'
import { nowMs } from '../lib/time'
import { isOutage, logFailure } from '../obs/log'
import { logRun } from './timer'

/** The longest sleep: how soon a replica that just became leader (or a database back from an outage) looks again. */
export const OVERDUE_RECHECK_MS = 2_000
/** How long stopping waits for a run in progress. */
const STOP_WAIT_MS = 3_000

export function startOverdueJob(ctx: Ctx): () => Promise<void> {
  let timer: ReturnType<typeof setTimeout> | undefined
  let running: Promise<void> | null = null
  let again = false
  let stopped = false
  let inOutage = false

  const arm = (ms: number) => {
    clearTimeout(timer)
    if (!stopped) timer = setTimeout(wake, Math.max(0, Math.min(ms, OVERDUE_RECHECK_MS)))
  }

  /** Raises what is due, then sleeps until the next deadline. */
  async function run(): Promise<void> {
    if (!ctx.store.isLeader()) return arm(OVERDUE_RECHECK_MS)
    try {
      let next = await ctx.store.messages.nextDue()
      if (next !== null && Date.parse(next) <= nowMs()) {
        const started = performance.now()
        logRun('overdue', OVERDUE_RECHECK_MS, { raised: (await raiseOverdue(ctx)).length }, performance.now() - started)
        next = await ctx.store.messages.nextDue()
      }
      inOutage = false
      // +1: a timer may fire a millisecond early, and due_at <= now must hold when it does.
      arm(next === null ? OVERDUE_RECHECK_MS : Date.parse(next) - nowMs() + 1)
    } catch (err) {
      if (!(inOutage && isOutage(err))) logFailure('job overdue failed', err, { job: 'overdue' })
      inOutage = isOutage(err)
      arm(OVERDUE_RECHECK_MS)
    }
  }

  /** One run at a time; a wake during a run runs once more after it (it may bring an earlier deadline). */
  function wake(): void {
    if (stopped) return
    if (running) return void (again = true)
    running = run().finally(() => {
      running = null
      if (again) (again = false), wake()
    })
  }

  const unlisten = ctx.bus.listen((event) => {
    if (event.topic === 'message.sent' && ctx.store.isLeader()) wake()
  })
  wake()

  return async () => {
    stopped = true
    unlisten()
    clearTimeout(timer)
    if (running) await Promise.race([running, Bun.sleep(STOP_WAIT_MS)])
  }
}

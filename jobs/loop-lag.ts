// The event loop's lag (muster_event_loop_lag_seconds): a timer due every PROBE_MS, and how
// late it fires. The server answers every request on one JavaScript thread; while that thread
// is busy (a long statement, a collection, a queue of requests) the timer waits with them, so
// the lag tells a stalled or saturated server from a slow client or network. One probe per
// process, however many servers it runs: they share the thread, and the histogram.
import { loopLag } from '../obs/prometheus'

export const PROBE_MS = 20

let users = 0
let timer: ReturnType<typeof setTimeout> | null = null

function tick(due: number): void {
  timer = setTimeout(() => {
    const now = performance.now()
    loopLag.observe(Math.max(0, now - due) / 1000)
    tick(now + PROBE_MS)
  }, PROBE_MS)
  // The probe never keeps a process alive that has nothing else to do.
  timer.unref?.()
}

/** Starts the probe (once per process); returns the function that stops this server's use of it. */
export function startLoopLagProbe(): () => void {
  if (users++ === 0) tick(performance.now() + PROBE_MS)
  let stopped = false
  return () => {
    if (stopped) return
    stopped = true
    if (--users === 0 && timer) clearTimeout(timer), (timer = null)
  }
}

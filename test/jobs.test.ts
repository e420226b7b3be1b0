// jobs/timer.ts: how a background job stops. Shutdown stops every job before it closes
// the store, so a run in progress must end first, yet a stuck one must not hold the exit.
import { describe, expect, test } from 'bun:test'
import { every } from '../jobs/timer'

describe('stopping a job', () => {
  test('waits for the run in progress, and no run starts after it', async () => {
    let runs = 0
    let finished = 0
    const stop = every('slow', 10, async () => {
      runs++
      await Bun.sleep(150)
      finished++
    })
    while (runs === 0) await Bun.sleep(5)
    await stop()
    expect(finished).toBe(runs)
    await Bun.sleep(50)
    expect(runs).toBe(finished)
  })

  test('gives up on a run that never ends after 3 s', async () => {
    let started = false
    const stop = every('stuck', 10, () => {
      started = true
      return new Promise(() => {})
    })
    while (!started) await Bun.sleep(5)
    const t0 = performance.now()
    await stop()
    const waited = performance.now() - t0
    expect(waited).toBeGreaterThanOrEqual(2_900)
    expect(waited).toBeLessThan(4_500)
  })
})

// Any authenticated call made with a valid instance token is a sign of life, as
// good as a heartbeat: it refreshes last_seen and turns a stale instance active.
// Written at most once per TOUCH_EVERY_MS per instance (never slower than half
// the stale timeout), so an agent's burst of calls costs one write, not one each.
// The writes due are made together (at most BATCH_MS later, a quarter of the throttle on
// a short stale timeout), one statement for all the instances seen since the last one
// went in: a fleet of agents calling every few seconds costs a write a batch, not a write
// unit per agent. A stale instance's call is written at once: it turns active before its
// next call is answered.
// One throttle per server (app.ts puts it on the Ctx): servers in one process keep apart.
import { logFailure } from '../obs/log'
import type { Ctx } from './context'
import { heartbeat } from './instances'

export const TOUCH_EVERY_MS = 5000
/** How long the heartbeats due wait, at most, to be written together. */
const BATCH_MS = 250
/**
 * Instances remembered at most. Only those seen within the last two throttle windows are
 * kept (older ones would be written anyway), so this is reached only by that many instances
 * in one window; past it the memory is simply forgotten (a few extra writes).
 */
const MAX_REMEMBERED = 100_000

export class ImplicitHeartbeats {
  // When each instance was last written, in two generations: an entry in `older` is at most
  // two windows old, so a turn of generations forgets what is due anyway without a walk
  // over the map (deleting from the front of a Map leaves holes every later walk skips).
  private touched = new Map<string, number>()
  private older = new Map<string, number>()
  private turnedAt = Date.now()
  private every: number
  private batchMs: number
  /** Instances the liveness check marked stale (instance.stale, from any replica), until a call of theirs is written. */
  private stale = new Set<string>()
  /** Due, not yet written. */
  private due = new Set<string>()
  /** A batch is scheduled: in batchMs, or after the batch being written. */
  private scheduled = false
  private writing: Promise<void> | null = null

  constructor(staleTimeoutMs: number, bus: { listen(l: (event: { topic: string; data: unknown }) => void): unknown }) {
    this.every = Math.min(TOUCH_EVERY_MS, staleTimeoutMs / 2)
    this.batchMs = Math.min(BATCH_MS, this.every / 4)
    bus.listen(({ topic, data }) => {
      const id = (data as { id?: unknown }).id
      if (topic === 'instance.stale' && typeof id === 'string' && this.stale.size < MAX_REMEMBERED) this.stale.add(id)
    })
  }

  /** A call by `instanceId` was seen: writes its heartbeat unless one was written within the throttle. */
  seen(ctx: Ctx, instanceId: string): void {
    const now = Date.now()
    if (now - this.turnedAt >= this.every) {
      this.older = now - this.turnedAt >= 2 * this.every ? new Map() : this.touched
      this.touched = new Map()
      this.turnedAt = now
    }
    const last = this.touched.get(instanceId) ?? this.older.get(instanceId)
    if (last !== undefined && now - last < this.every) return
    if (this.touched.size >= MAX_REMEMBERED) this.touched.clear()
    this.touched.set(instanceId, now)
    if (this.stale.delete(instanceId))
      return ctx.background.track(heartbeat(ctx, undefined, instanceId).catch((err) => logFailure('implicit heartbeat failed', err, { instance_id: instanceId })))
    this.due.add(instanceId)
    if (this.scheduled) return
    this.scheduled = true
    const turn = this.writing ?? new Promise<void>((resolve) => setTimeout(resolve, this.batchMs))
    ctx.background.track(turn.then(() => this.write(ctx)))
  }

  private write(ctx: Ctx): Promise<void> {
    this.scheduled = false
    const ids = [...this.due]
    this.due.clear()
    const batch = ctx.store
      .write((tx) => tx.instances.heartbeatAll(ids))
      .catch((err) => logFailure('implicit heartbeat failed', err, { instances: ids.length }))
      .finally(() => {
        if (this.writing === batch) this.writing = null
      })
    return (this.writing = batch)
  }
}

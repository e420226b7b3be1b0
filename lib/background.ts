// Work that runs after a response has been sent (agent metric counts, implicit
// heartbeats). One per server (app.ts puts it on the Ctx): its shutdown waits for
// all of it before the store closes, so none is lost, and never for another
// server's work in the same process.
export class Background {
  private running = new Set<Promise<unknown>>()

  track(work: Promise<unknown>): void {
    this.running.add(work)
    void work.finally(() => this.running.delete(work))
  }

  /** Resolves when every tracked piece of work has settled. */
  async settle(): Promise<void> {
    while (this.running.size) await Promise.allSettled([...this.running])
  }
}

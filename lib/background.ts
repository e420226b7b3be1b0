// Work that runs after a response has been sent (audit entries, change events).
// Shutdown waits for all of it before the store closes, so none is lost.
const background = new Set<Promise<unknown>>()

export function track(work: Promise<unknown>): void {
  background.add(work)
  void work.finally(() => background.delete(work))
}

/** Resolves when every tracked piece of work has settled. */
export async function settleBackground(): Promise<void> {
  while (background.size) await Promise.allSettled([...background])
}

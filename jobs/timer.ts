// Runs a background task every `ms`, never two at once; a failure is logged and
// the next tick runs as usual. Returns the function that stops it.
export function every(name: string, ms: number, task: () => Promise<unknown> | unknown): () => void {
  let running = false
  const timer = setInterval(async () => {
    if (running) return
    running = true
    try {
      await task()
    } catch (err) {
      console.error(`job ${name} failed:`, err)
    } finally {
      running = false
    }
  }, ms)
  return () => clearInterval(timer)
}

// The messages' word index where it takes them in batches (SQLite's FTS5: store/messages.ts
// indexWords): a while after a message is sent, every message sent since goes into the index
// in one unit, so FTS5 writes its index once for them all rather than in each send's COMMIT.
// A search brings the index up to date itself (services/messages.ts): this keeps that batch
// small, and the index current for a database copied elsewhere.
import type { Ctx } from '../services/context'
import { indexWords } from '../services/messages'
import { isOutage, logFailure } from '../obs/log'

/** How long after a message.sent its batch is indexed. */
export const WORD_INDEX_MS = 1_000
/** How long stopping waits for a batch in progress. */
const STOP_WAIT_MS = 3_000

export function startWordIndexJob(ctx: Ctx): () => Promise<void> {
  let timer: ReturnType<typeof setTimeout> | undefined
  let running: Promise<void> | null = null
  let stopped = false
  let inOutage = false

  const run = () => {
    timer = undefined
    running = indexWords(ctx)
      .then(() => void (inOutage = false))
      .catch((err) => {
        if (!(inOutage && isOutage(err))) logFailure('job word-index failed', err, { job: 'word-index' })
        inOutage = isOutage(err)
        // Another try with the next message, or the next search.
      })
      .finally(() => (running = null))
  }
  const schedule = () => {
    if (!stopped && timer === undefined && ctx.store.messages.wordsBehind()) timer = setTimeout(run, WORD_INDEX_MS)
  }

  const unlisten = ctx.bus.listen((event) => {
    if (event.topic === 'message.sent') schedule()
  })
  // What a crash left out of the index (messages sent within the last batch's wait) goes in now.
  schedule()

  return async () => {
    stopped = true
    unlisten()
    clearTimeout(timer)
    if (running) await Promise.race([running, Bun.sleep(STOP_WAIT_MS)])
  }
}

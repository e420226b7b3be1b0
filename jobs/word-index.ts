// The messages' word index where it takes them in batches (SQLite's FTS5: store/messages.ts
// indexWords): a while after a message is sent, every message sent since goes into the index
// in one unit, so FTS5 writes its index once for them all rather than in each send's COMMIT.
// A search brings the index up to date itself (services/messages.ts): this keeps that batch
// small, and the index current for a database copied elsewhere.
import type { Ctx } from '../services/context'
import { indexWords } from '../services/messages'
import { jobRuns } from './timer'

/** How long after a message.sent its batch is indexed. */
export const WORD_INDEX_MS = 1_000

export function startWordIndexJob(ctx: Ctx): () => Promise<void> {
  const runs = jobRuns('word-index', WORD_INDEX_MS, () => indexWords(ctx))
  let timer: ReturnType<typeof setTimeout> | undefined
  let stopped = false
  // One batch a WORD_INDEX_MS at most: a send while one waits joins it. A failed batch is tried again with the next send, or the next search.
  const schedule = () => {
    if (stopped || timer !== undefined || !ctx.store.messages.wordsBehind()) return
    timer = setTimeout(() => {
      timer = undefined
      runs.start()
    }, WORD_INDEX_MS)
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
    await runs.stop()
  }
}

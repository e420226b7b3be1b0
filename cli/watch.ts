// `state watch` and `events wait`: long-polls that stay within the server's
// 60 s cap per request and chain requests for longer timeouts.
import { apiPath, request, requestJson } from './client'
import { note, printJson, printRawResponse } from './output'

/** The server holds one request at most this long. */
const MAX_WAIT_MS = 60_000

const chunks = (deadline: number) => Math.max(1, Math.min(MAX_WAIT_MS, deadline - Date.now()))

/**
 * Waits for the value of `key` to differ from `etag` (default: the current one;
 * a missing key waits for its creation), prints the new value raw and exits 0.
 * A deletion is the server's 404 (exit 1); no change in time prints nothing.
 */
export async function watchState(key: string, o: { timeout: number; etag?: string }): Promise<void> {
  const path = apiPath('/api/state', key)
  let tag = o.etag
  if (tag === undefined) {
    const res = await fetchCurrent(path)
    tag = res ?? '*'
  }
  if (!/^(\*|".*")$/.test(tag)) tag = `"${tag}"`
  const deadline = Date.now() + o.timeout
  while (Date.now() < deadline) {
    const res = await request('GET', path, { query: { wait: `${chunks(deadline)}ms` }, headers: { 'if-none-match': tag } })
    if (res.status === 200) return printRawResponse(res)
    await res.body?.cancel()
  }
  note(`no change within ${o.timeout} ms`)
}

/** The current ETag, or null when the key does not exist. */
async function fetchCurrent(path: string): Promise<string | null> {
  try {
    const res = await request('GET', path)
    await res.body?.cancel()
    return res.headers.get('etag')
  } catch (err) {
    if ((err as { status?: number }).status === 404) return null
    throw err
  }
}

/** Waits for events matching topic/source after `after` (default: from now on); prints them as a JSON array ([] on timeout). */
export async function waitEvents(o: { topic?: string; source?: string; after?: number; timeout: number }): Promise<void> {
  let after = o.after
  if (after === undefined) {
    const newest = (await requestJson('GET', '/api/events/history', { query: { last: 1 } })) as { id: number }[]
    after = newest[0]?.id ?? 0
  }
  const deadline = Date.now() + o.timeout
  for (;;) {
    const query = { after_id: after, topic: o.topic, source: o.source, wait: `${chunks(deadline)}ms` }
    const found = (await requestJson('GET', '/api/events/history', { query })) as unknown[]
    if (found.length || Date.now() >= deadline) return printJson(found)
  }
}

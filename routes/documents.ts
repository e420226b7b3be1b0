// Helpers shared by the two versioned-document resources (state and specs):
// conditional writes from headers, and the raw read with ETag / 304.
import type { WriteCondition } from '../store/versioned'
import type { Doc } from '../store/versioned'
import { invalid } from '../lib/errors'
import { etag, notModified } from './http'

/** Compare-and-swap conditions: If-Match, ?if_version=N, and If-None-Match: * (create-only, PUT only). */
export function writeCondition(request: Request, query: { if_version?: string }, forPut: boolean): WriteCondition {
  const cond: WriteCondition = {}
  const ifMatch = request.headers.get('if-match')
  if (ifMatch) cond.ifMatch = ifMatch.split(',').map((t) => t.trim().replace(/^W\//, '').replace(/^"|"$/g, ''))
  if (query.if_version !== undefined) {
    if (!/^\d+$/.test(query.if_version)) throw invalid('invalid if_version: expected an integer >= 0')
    cond.ifVersion = Number(query.if_version)
  }
  if (forPut && request.headers.get('if-none-match')?.trim() === '*') cond.createOnly = true
  return cond
}

/** The stored bytes with Content-Type, ETag and X-Service-Version; 304 when If-None-Match matches. */
export function rawResponse(request: Request, doc: Doc, withEtag = true): Response {
  const headers: Record<string, string> = {
    'content-type': doc.content_type,
    'x-service-version': String(doc.version),
  }
  if (withEtag) {
    headers.etag = etag(doc.hash)
    if (notModified(request, doc.hash)) return new Response(null, { status: 304, headers })
  }
  return new Response(doc.value as Uint8Array<ArrayBuffer>, { headers })
}

/** Decodes a key taken from a wildcard path; an empty or undecodable one is 400. */
export function keyParam(raw: string | undefined, what = 'key'): string {
  let key: string
  try {
    key = decodeURIComponent(raw ?? '')
  } catch {
    throw invalid(`invalid ${what}: bad percent-encoding`)
  }
  if (key === '') throw invalid(`${what} is required`)
  if (key.length > 1024) throw invalid(`${what} is longer than 1024 characters`)
  return key
}

// The versioned-document reader shared by state, specs and contracts: the raw
// read with ETag / 304, a version, the history, a diff; and the compare-and-swap
// conditions of a write.
import { t } from 'elysia'
import type { Doc, HistoryItem, WriteCondition } from '../store/versioned'
import { invalid, notFound } from '../lib/errors'
import { diffVersions } from '../lib/jsondiff'
import { intParam } from './params'

/** The quoted ETag for a SHA-256 hash. */
export const etag = (hash: string) => `"${hash}"`

/** True when an If-None-Match header matches the current hash. */
export function notModified(request: Request, hash: string): boolean {
  const header = request.headers.get('if-none-match')
  if (!header) return false
  return header.split(',').some((t) => {
    const tag = t.trim().replace(/^W\//, '')
    return tag === '*' || tag === etag(hash)
  })
}

/** Compare-and-swap conditions: If-Match, ?if_version=N, and If-None-Match: * (create-only, PUT only). */
export function writeCondition(request: Request, query: { if_version?: string }, forPut: boolean): WriteCondition {
  const cond: WriteCondition = {}
  const ifMatch = request.headers.get('if-match')
  if (ifMatch) cond.ifMatch = ifMatch.split(',').map((t) => t.trim().replace(/^W\//, '').replace(/^"|"$/g, ''))
  if (query.if_version !== undefined) {
    if (query.if_version === '') throw invalid('invalid if_version: expected an integer >= 0')
    cond.ifVersion = intParam(query.if_version, 'if_version', 0)
  }
  if (forPut && request.headers.get('if-none-match')?.trim() === '*') cond.createOnly = true
  return cond
}

const docHeaders = (doc: Doc, withEtag: boolean): Record<string, string> => ({
  'content-type': doc.content_type,
  'x-service-version': String(doc.version),
  ...(withEtag ? { etag: etag(doc.hash) } : {}),
})

/** The stored bytes with Content-Type, ETag and X-Service-Version; 304 when If-None-Match matches. */
export function rawResponse(request: Request, doc: Doc, withEtag = true): Response {
  if (withEtag && notModified(request, doc.hash)) return new Response(null, { status: 304, headers: docHeaders(doc, true) })
  return new Response(doc.value as Uint8Array<ArrayBuffer>, { headers: docHeaders(doc, withEtag) })
}

/** A watch's answer: 200 with the new value, or 304 with the unchanged ETag (none for a key that still does not exist). */
export function watchResponse(result: { changed: Doc } | { unchanged: Doc | null }): Response {
  if ('changed' in result) return new Response(result.changed.value as Uint8Array<ArrayBuffer>, { headers: docHeaders(result.changed, true) })
  return new Response(null, { status: 304, headers: result.unchanged ? { etag: etag(result.unchanged.hash) } : {} })
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

/** Where a versioned document is read from (one key of state, one spec, one contract). */
export interface DocSource {
  get(): Promise<Doc | null>
  getVersion(version: number): Promise<Doc | null>
  history(limit: number): Promise<HistoryItem[] | null>
}

export const DocReadQuery = t.Object({
  history: t.Optional(t.String({ description: '1 for the version list' })),
  limit: t.Optional(t.String({ description: 'history length, default 50' })),
  version: t.Optional(t.String({ description: 'read this version' })),
  diff: t.Optional(t.String({ description: 'v1,v2: JSON diff between two versions' })),
})

/**
 * One read of a versioned document: its history, a diff of two versions, one
 * version, or the current value (precedence in that order). `what` names it in
 * 404s ("key", "spec", "contract").
 */
export async function readDocument(
  src: DocSource,
  query: { history?: string; limit?: string; version?: string; diff?: string },
  request: Request,
  what: string,
  key: Record<string, string>,
): Promise<unknown> {
  const missing = async (version: number) => {
    if (!(await src.get())) return notFound(`${what} not found`)
    return notFound(`version ${version} not found`)
  }
  if (query.history !== undefined && query.history !== '' && query.history !== '0') {
    const versions = await src.history(intParam(query.limit, 'limit', 50, 1))
    if (!versions) throw notFound(`${what} not found`)
    return { ...key, versions }
  }
  if (query.diff !== undefined) {
    const m = /^(\d+),(\d+)$/.exec(query.diff)
    if (!m) throw invalid('invalid diff: expected diff=v1,v2')
    const [v1, v2] = [intParam(m[1], 'diff', 0), intParam(m[2], 'diff', 0)]
    const [a, b] = await Promise.all([src.getVersion(v1), src.getVersion(v2)])
    if (!a || !b) throw await missing(!a ? v1 : v2)
    const d = await diffVersions(a.value, b.value)
    if ('notJson' in d) throw invalid(`version ${d.notJson === 1 ? v1 : v2} is not JSON; diff needs JSON values`)
    // The diffs arrive as JSON text (a large pair's from the worker): spliced in, not parsed again.
    return new Response(`${JSON.stringify({ ...key, v1, v2 }).slice(0, -1)},"diffs":${d.json}}`, { headers: { 'content-type': 'application/json' } })
  }
  if (query.version !== undefined) {
    const version = intParam(query.version, 'version', 0, 1)
    const doc = await src.getVersion(version)
    if (!doc) throw await missing(version)
    return rawResponse(request, doc, false)
  }
  const doc = await src.get()
  if (!doc) throw notFound(`${what} not found`)
  return rawResponse(request, doc)
}

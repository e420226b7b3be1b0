// /api/state: the versioned key/value store.
import { t } from 'elysia'
import { Type } from '@sinclair/typebox'
import { CasQuery, Deleted, IntQuery, withExample } from '../http/models'
import { invalid } from '../lib/errors'
import type { Ctx } from '../services/context'
import { deleteState, putState, rollbackState } from '../services/state'
import { audited, auditedAnswer } from '../http/audit'
import type { AuditScope } from '../services/audit'
import { checkJsonBytes, isJsonType, rawBodyDoc, readBody } from '../http/body'
import { DocReadQuery, keyParam, notModified, rawResponse, readDocument, watchResponse, writeCondition } from '../http/documents'
import { errorResponse } from '../http/errors'
import { heldUntil } from '../http/caller'
import type { FastRoute } from '../http/api'
import type { Doc } from '../store/versioned'
import { Lru, cacheShares } from '../lib/lru'
import { waitParam } from '../services/holders'
import { watchState } from '../services/watches'

// TypeBox's own Integer, not Elysia's (a string-or-integer transform): a response schema with a
// transform is run through the uncompiled Value.Encode on every PUT (6% of its CPU); the check
// and the OpenAPI document ("type": "integer") are the same.
const Meta = t.Object({ key: t.String(), version: Type.Integer(), hash: t.String(), content_type: t.String(), updated_at: t.String() })
const Listed = t.Object({ key: t.String(), version: Type.Integer(), content_type: t.String(), updated_at: t.String() })
const RolledBack = t.Object({
  key: t.String(),
  version: Type.Integer({ description: 'the new version, holding the value of rolled_back' }),
  hash: t.String(),
  rolled_back: Type.Integer({ description: 'the version whose value was stored again' }),
  updated_at: t.String(),
})
const StateReadQuery = t.Object({
  ...DocReadQuery.properties,
  wait: t.Optional(t.String({ description: 'with If-None-Match: hold until the value changes, up to this long (e.g. 25s, at most 60s); 304 when it does not' })),
})

/** The audit action of a state PUT, by either way in. */
export const STATE_PUT = 'state.put'

/** A state PUT from its request: the route's handler, and the fast write's (stateFastRoutes). */
export async function putFromRequest(ctx: Ctx, request: Request, key: string, query: { if_version?: string }, audit: AuditScope) {
  const cond = writeCondition(request, query, true)
  const value = await readBody(request)
  if (value.byteLength === 0) throw invalid('request body is empty')
  const label = request.headers.get('content-type')?.trim()
  const contentType = label || 'application/json'
  // Anything stored as JSON is depth-checked (readers parse it); bytes labelled JSON must also be
  // JSON. Unlabelled bytes (as the CLI sends files) and other types are stored as they are.
  if (isJsonType(contentType)) await checkJsonBytes(value, !!label)
  return putState(ctx, audit, key, value, contentType, cond)
}

export function stateRoutes(ctx: Ctx) {
  return audited(ctx)
    .get('/api/state', () => ctx.store.state.list(), {
      response: { 200: t.Array(Listed) },
      detail: { summary: 'List state keys', tags: ['state'] },
    })
    .get(
      '/api/state/*',
      async ({ params, query, request }) => {
        const key = keyParam(params['*'])
        const known = request.headers.get('if-none-match')
        // A watch is of the current value: with history, diff or version the read is that read.
        const plain = query.history === undefined && query.diff === undefined && query.version === undefined
        if (known && plain && query.wait !== undefined) {
          const ms = waitParam(query.wait) ?? 0
          return watchResponse(await watchState(ctx, key, known.trim() === '*' ? '*' : (hash) => notModified(request, hash), ms, heldUntil(ctx, request)))
        }
        const source = {
          get: () => ctx.store.state.get(key),
          getVersion: (v: number) => ctx.store.state.getVersion(key, v),
          history: (limit: number) => ctx.store.state.history(key, limit),
        }
        return readDocument(source, query, request, 'key', { key })
      },
      {
        query: StateReadQuery,
        detail: {
          summary: 'Read a value (raw), its history, a version, or a diff; or watch it (?wait= with If-None-Match)',
          description:
            'Precedence when combined: history, then diff, then version. With `wait` and `If-None-Match: "<etag>"` the request is held until the ETag differs ' +
            '(200 with the value), the key is deleted (404) or `wait` ends (304); `If-None-Match: *` waits for the key to exist.',
          tags: ['state'],
        },
      },
    )
    .put(
      '/api/state/*',
      ({ params, query, request, audit }) => putFromRequest(ctx, request, keyParam(params['*']), query, audit),
      {
        parse: 'none',
        query: CasQuery,
        response: { 200: Meta },
        audit: STATE_PUT,
        detail: { summary: 'Write a value (raw body, at most 10 MB)', tags: ['state'], requestBody: withExample(rawBodyDoc('*/*', 'The value, stored as sent with its Content-Type (none: application/json). A body labelled application/json or +json must be JSON'), '{"step":1}') },
      },
    )
    .post(
      '/api/state/*',
      async ({ params, query, request, audit }) => {
        const key = keyParam(params['*'])
        if (query.rollback === undefined || !/^\d+$/.test(query.rollback) || !(Number(query.rollback) >= 1 && Number.isSafeInteger(Number(query.rollback))))
          throw invalid('rollback must be a version number >= 1')
        const r = await rollbackState(ctx, audit, key, Number(query.rollback), writeCondition(request, query, false))
        return { key: r.key, version: r.version, hash: r.hash, rolled_back: r.rolled_back, updated_at: r.updated_at }
      },
      {
        query: t.Object({
          rollback: IntQuery('the version to store again', { minimum: 1, maximum: Number.MAX_SAFE_INTEGER }),
          if_version: t.Optional(t.String({ description: 'compare-and-swap on the current version' })),
        }),
        response: { 200: RolledBack },
        audit: 'state.rollback',
        detail: { summary: 'Roll back: store version N as a new version', tags: ['state'] },
      },
    )
    .delete(
      '/api/state/*',
      async ({ params, query, request, audit }) => {
        const key = keyParam(params['*'])
        await deleteState(ctx, audit, key, writeCondition(request, query, false))
        return { deleted: key }
      },
      {
        query: CasQuery,
        response: { 200: Deleted },
        audit: 'state.delete',
        detail: { summary: 'Delete a key and its history', tags: ['state'] },
      },
    )
}

const PREFIX = '/api/state/'

/**
 * Answers of cached values up to KEEP_ANSWER_BYTES are kept whole (an eighth of --cache-size
 * in all: lib/lru.ts cacheShares), for a clone per read: a new Response with its headers
 * costs three times more, and copies the value each time (a kept one holds its own copy,
 * hence the bound).
 */
const KEEP_ANSWER_BYTES = 16 * 1024

/**
 * The plain GET and PUT of /api/state/<key> (no query string), on Bun's own router
 * (http/api.ts FastRoute): the hottest read, an agent polling a key, answered
 * synchronously from the document cache when the value is there, and the hottest
 * write. Each answers as the route above does a plain request: for a read ETag and
 * 304, for a write the same handler body and audit.
 */
export function stateFastRoutes(ctx: Ctx): FastRoute[] {
  // Keyed by the cached document itself: a write caches a new object, so a kept answer is never stale.
  // Weighed twice its value: the key keeps its document's bytes alive after the document cache dropped it.
  const answers = new Lru<Doc, { response: Response; bytes: number }>(cacheShares(ctx.config.cacheBytes).answers, (a) => 2 * a.bytes + 300)
  const answer = (request: Request, doc: Doc | null, cached: boolean) => {
    if (!doc) return errorResponse(404, 'key not found')
    if (!cached || doc.value.byteLength > KEEP_ANSWER_BYTES || request.headers.has('if-none-match')) return rawResponse(request, doc)
    return answers.getOr(doc, () => ({ response: rawResponse(request, doc), bytes: doc.value.byteLength })).response.clone()
  }
  const read = (request: Request, path: string) => {
    let key: string
    try {
      key = keyParam(path.slice(PREFIX.length))
    } catch (err) {
      return errorResponse(400, (err as Error).message)
    }
    // Returning a Response, not a Promise, is what lets Bun answer at once.
    const doc = ctx.store.state.cached(key)
    if (doc !== undefined) return answer(request, doc, true)
    return ctx.store.state.get(key).then((doc) => answer(request, doc, false))
  }
  const write = (request: Request, path: string) =>
    auditedAnswer(ctx, request, STATE_PUT, async (scope) => Response.json(await putFromRequest(ctx, request, keyParam(path.slice(PREFIX.length)), {}, scope)))
  return [
    { method: 'GET', pattern: '/api/state/*', handle: read },
    { method: 'PUT', pattern: '/api/state/*', handle: write },
  ]
}

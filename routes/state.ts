// /api/state: the versioned key/value store.
import { t } from 'elysia'
import { Type } from '@sinclair/typebox'
import { CasQuery } from '../http/models'
import { invalid } from '../lib/errors'
import type { Ctx } from '../services/context'
import { deleteState, putState, rollbackState } from '../services/state'
import { audited } from '../http/audit'
import type { AuditScope } from '../services/audit'
import { checkDepth, isJsonType, parseJsonBody, rawBodyDoc, readBody } from '../http/body'
import { DocReadQuery, keyParam, notModified, readDocument, watchResponse, writeCondition } from '../http/documents'
import { waitParam } from '../services/holders'
import { watchState } from '../services/watches'

// TypeBox's own Integer, not Elysia's (a string-or-integer transform): a response schema with a
// transform is run through the uncompiled Value.Encode on every PUT (6% of its CPU); the check
// and the OpenAPI document ("type": "integer") are the same.
const Meta = t.Object({ key: t.String(), version: Type.Integer(), hash: t.String(), content_type: t.String(), updated_at: t.String() })
const StateReadQuery = t.Object({
  ...DocReadQuery.properties,
  wait: t.Optional(t.String({ description: 'with If-None-Match: hold until the value changes, up to this long (e.g. 25s, at most 60s); 304 when it does not' })),
})

/** The audit action of a state PUT, by either way in. */
export const STATE_PUT = 'state.put'

/**
 * A state PUT from its request: this route's handler, and the fast write that answers
 * plain PUTs outside the framework (http/fast-state.ts).
 */
export async function putFromRequest(ctx: Ctx, request: Request, key: string, query: { if_version?: string }, audit: AuditScope) {
  const cond = writeCondition(request, query, true)
  const value = await readBody(request)
  if (value.byteLength === 0) throw invalid('request body is empty')
  const label = request.headers.get('content-type')?.trim()
  const contentType = label || 'application/json'
  // Anything stored as JSON is depth-checked (readers parse it); bytes labelled JSON must also be
  // JSON. Unlabelled bytes (as the CLI sends files) and other types are stored as they are.
  const json = isJsonType(contentType)
  if (json) checkDepth(value)
  if (label && json) parseJsonBody(value)
  return putState(ctx, audit, key, value, contentType, cond)
}

export function stateRoutes(ctx: Ctx) {
  return audited(ctx)
    .get('/api/state', () => ctx.store.state.list(), {
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
          return watchResponse(await watchState(ctx, key, known.trim() === '*' ? '*' : (hash) => notModified(request, hash), ms))
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
        detail: { summary: 'Write a value (raw body, at most 10 MB)', tags: ['state'], requestBody: rawBodyDoc('*/*', 'The value, stored as sent with its Content-Type (none: application/json). A body labelled application/json or +json must be JSON') },
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
        query: t.Object({ rollback: t.Optional(t.String()), if_version: t.Optional(t.String()) }),
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
        audit: 'state.delete',
        detail: { summary: 'Delete a key and its history', tags: ['state'] },
      },
    )
}

// /api/state: the versioned key/value store.
import { t } from 'elysia'
import { invalid } from '../lib/errors'
import type { Ctx } from '../services/context'
import { deleteState, putState, rollbackState } from '../services/state'
import { audited } from '../http/audit'
import { isJsonType, parseJsonBody, rawBodyDoc, readBody } from '../http/body'
import { DocReadQuery, keyParam, readDocument, writeCondition } from '../http/documents'

const Meta = t.Object({ key: t.String(), version: t.Integer(), hash: t.String(), content_type: t.String(), updated_at: t.String() })
const CasQuery = t.Object({ if_version: t.Optional(t.String({ description: 'compare-and-swap on the current version' })) })

export function stateRoutes(ctx: Ctx) {
  return audited(ctx)
    .get('/api/state', () => ctx.store.state.list(), {
      detail: { summary: 'List state keys', tags: ['state'] },
    })
    .get(
      '/api/state/*',
      ({ params, query, request }) => {
        const key = keyParam(params['*'])
        const source = {
          get: () => ctx.store.state.get(key),
          getVersion: (v: number) => ctx.store.state.getVersion(key, v),
          history: (limit: number) => ctx.store.state.history(key, limit),
        }
        return readDocument(source, query, request, 'key', { key })
      },
      {
        query: DocReadQuery,
        detail: {
          summary: 'Read a value (raw), its history, a version, or a diff',
          description: 'Precedence when combined: history, then diff, then version.',
          tags: ['state'],
        },
      },
    )
    .put(
      '/api/state/*',
      async ({ params, query, request, audit }) => {
        const key = keyParam(params['*'])
        const cond = writeCondition(request, query, true)
        const value = await readBody(request)
        if (value.byteLength === 0) throw invalid('request body is empty')
        const label = request.headers.get('content-type')?.trim()
        // Bytes labelled JSON must be JSON (readers parse them); unlabelled or other types are stored as is.
        if (label && isJsonType(label)) parseJsonBody(value)
        const contentType = label || 'application/json'
        return putState(ctx, audit, key, value, contentType, cond)
      },
      {
        parse: 'none',
        query: CasQuery,
        response: { 200: Meta },
        audit: 'state.put',
        detail: { summary: 'Write a value (raw body, at most 10 MB)', tags: ['state'], requestBody: rawBodyDoc('*/*', 'The value, stored as sent with its Content-Type (none: application/json). A body labelled application/json or +json must be JSON') },
      },
    )
    .post(
      '/api/state/*',
      async ({ params, query, request, audit }) => {
        const key = keyParam(params['*'])
        if (query.rollback === undefined || !/^\d+$/.test(query.rollback) || Number(query.rollback) < 1)
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

// The floor under bench/state.ts's GET and PUT: the state route's own work behind a bare
// Bun.serve, with none of the API app's per-request services (router, auth, agent metrics,
// audit scope lookup, access-log line, Prometheus numbers). A GET is the store's read and
// Muster's response for it (rawResponse), kept and cloned per read as Muster's fast route keeps
// it (http/fast-state.ts); a PUT is the route's handler body
// (putFromRequest: body checks, then the state service, its version, event and audit rows in
// the group commit). How far Muster is from this is what its request handling costs; how far
// this is from the hello-world is what the store and the answer cost.
// Usage: bun bench/floor.ts <data dir>; prints "floor on <url>," when listening.
import { openStore } from '../store'
import type { Ctx } from '../services/context'
import { scopeFor } from '../services/audit'
import { putFromRequest, STATE_PUT } from '../routes/state'
import { keyParam, rawResponse } from '../http/documents'
import { pathOf } from '../http/url'
import { resourceOf } from '../http/audit'
import type { Doc } from '../store/versioned'
import { serveReference } from './reference'

const store = openStore(process.argv[2])
// The state service reads nothing of its context but the store.
const ctx = { store } as unknown as Ctx
const anonymous = { actor: 'anonymous', instanceId: null, role: 'admin', tokenId: null } as const
// Keyed by the cached document, as Muster's kept answers are: a write caches a new one.
const kept = new WeakMap<Doc, Response>()
// The key as the fast route takes it: the path's, decoded and checked.
const keyOf = (url: string) => keyParam(pathOf(url).slice('/api/state/'.length))

serveReference('floor', {
  GET: async (request) => {
    const key = keyOf(request.url)
    const cached = store.state.cached(key)
    const doc = cached === undefined ? await store.state.get(key) : cached
    if (!doc) return new Response('key not found', { status: 404 })
    let answer = kept.get(doc)
    if (!answer) kept.set(doc, (answer = rawResponse(request, doc)))
    return answer.clone()
  },
  PUT: async (request) =>
    Response.json(await putFromRequest(ctx, request, keyOf(request.url), {}, scopeFor(anonymous, STATE_PUT, resourceOf(request.url)))),
})

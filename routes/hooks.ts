// /api/hooks/{agent}: the endpoint each agent's hooks post its lifecycle events to (Claude
// Code's http hooks, `muster hook <agent>`); /api/sessions: the hook sessions (for the dashboard).
import { t } from 'elysia'
import type { Ctx } from '../services/context'
import { ADAPTERS, handleHook, hookHeaders, HOOK_AGENTS, type HookIdentity } from '../services/hooks'
import { invalid, notFound } from '../lib/errors'
import { IntQuery, Nullable, checks } from '../http/models'
import { audited } from '../http/audit'
import { credentialFor, heldUntil, ownerOf } from '../http/caller'
import { bodyReader } from '../http/schema-body'
import type { FastRoute } from '../http/api'

/**
 * Who the session acts as, for `muster hook` (cli/hooks.ts), which hands it to the agent's
 * shell: in headers, never in the body, which the agent puts in its model's context.
 */
function identityHeaders(i: HookIdentity): Record<string, string> {
  const h: Record<string, string> = { 'x-muster-instance-id': i.instanceId, 'x-muster-instance-name': encodeURIComponent(i.name), 'x-muster-session': encodeURIComponent(i.sessionId) }
  if (i.token) h['x-muster-instance-token'] = i.token
  if (i.held !== undefined) h['x-muster-held'] = String(i.held)
  h['cache-control'] = 'no-store'
  return h
}

const SessionSchema = t.Object({
  session_id: t.String(),
  agent: t.String({ description: HOOK_AGENTS.join(' | ') }),
  instance_id: t.String({ description: 'the instance the session acts as (after SessionEnd: the one it was)' }),
  name: t.String(),
  root: t.String(),
  project: t.String(),
  started_at: t.String(),
  ended_at: Nullable(t.String()),
})

/** Sessions GET /api/sessions answers by default, and at most. */
const SESSIONS_LIMIT = 1000
const SESSIONS_MAX = 10_000

/** The event as the agent sent it: a JSON object (else 400); its adapter checks its fields. */
function hookEvent(raw: unknown): Record<string, unknown> {
  // JSON sent without a JSON content type arrives as text: it is still the event.
  let body = raw
  if (typeof raw === 'string') {
    try {
      body = JSON.parse(raw)
    } catch {
      throw invalid('the hook event must be a JSON object')
    }
  }
  if (!body || typeof body !== 'object' || Array.isArray(body)) throw invalid('the hook event must be a JSON object')
  return body as Record<string, unknown>
}

/** An agent's event, answered: the route's handler, and the fast one's (hooksFastRoutes). */
async function answerHook(ctx: Ctx, agent: string, body: unknown, request: Request) {
  const adapter = ADAPTERS.get(agent)
  if (!adapter) throw notFound(`unknown agent "${agent}": expected one of ${HOOK_AGENTS.join(', ')}`)
  const { role, tokenId } = credentialFor(request)
  return handleHook(ctx, adapter, hookEvent(body), { ...hookHeaders(request.headers), role, tokenId, owner: ownerOf(request), signal: request.signal, until: heldUntil(ctx, request) })
}

const PREFIX = '/api/hooks/'

/**
 * The hooks' events on Bun's own router (http/api.ts FastRoute): every edit of every agent
 * comes here twice (PreToolUse, PostToolUse). Only a JSON body (as the agents and `muster hook`
 * send it) to an agent's plain name; any other goes to the full route, which reads it as before.
 */
export function hooksFastRoutes(ctx: Ctx): FastRoute[] {
  const read = bodyReader(t.Unknown())
  return [
    {
      method: 'POST',
      pattern: '/api/hooks/:agent',
      takes: (request, path) => request.headers.get('content-type') === 'application/json' && ADAPTERS.has(path.slice(PREFIX.length)),
      async handle(request, path) {
        const { answer, identity } = await answerHook(ctx, path.slice(PREFIX.length), await read(request), request)
        return Response.json(answer, identity ? { headers: identityHeaders(identity) } : undefined)
      },
    },
  ]
}

export function hooksRoutes(ctx: Ctx) {
  return audited(ctx)
    .post(
      '/api/hooks/:agent',
      async ({ params, body, request, set }) => {
        const { answer, identity } = await answerHook(ctx, params.agent, body, request)
        if (identity) Object.assign(set.headers, identityHeaders(identity))
        return answer
      },
      {
        params: t.Object({ agent: t.String({ ...checks({ enum: HOOK_AGENTS }) }) }),
        body: t.Unknown({
          description: "the hook event exactly as the agent sends it (Claude Code's: {session_id, hook_event_name, cwd, …}; each agent's own: docs/agents/)",
          examples: [{ session_id: '9b2f6c1e-3d4a-4e5f-8a7b-1c2d3e4f5a6b', hook_event_name: 'UserPromptSubmit', cwd: '/work/shop', prompt: 'fix the invoice totals' }],
        }),
        response: { 200: t.Record(t.String(), t.Unknown(), { description: "the answer in the agent's own shape: {} (no opinion), Claude Code's hookSpecificOutput, {decision, reason}, …" }) },
        detail: {
          summary: "An agent's hook event (Claude Code, Codex, Gemini CLI, Copilot CLI, Cursor, Cline, OpenCode)",
          description:
            'A session is an instance (registered on its first event, each event a heartbeat, deregistered on SessionEnd; SessionEnd with reason clear or resume keeps it 60 s for the next SessionStart of the same agent, name and root to take over). The answers to SessionStart and SessionEnd carry, in headers only, who the session acts as: X-Muster-Instance-Id, X-Muster-Instance-Name, X-Muster-Session, and on SessionStart X-Muster-Instance-Token (for `muster hook` to hand to the agent\'s shell; never in the body the model reads), on SessionEnd X-Muster-Held. PreToolUse of a file-writing tool is denied when another instance holds the file exclusively; SessionStart answers a briefing; UserPromptSubmit, PostToolUse and Stop deliver new messages. Headers: X-Muster-Agent, X-Muster-Project, X-Muster-Root, X-Muster-Reserve (edit-reserve mode), X-Muster-Capabilities, X-Muster-Approval-Wait. PermissionRequest makes an approval (docs/api/approvals.md) and its answer waits for a rule or a person: allow or deny, or {} when the wait runs out; Notification of an agent waiting for its user makes a "needs input" approval. Never answers allow on its own.',
          tags: ['hooks'],
        },
      },
    )
    .get(
      '/api/sessions',
      async ({ query }) => {
        const limit = query.limit === undefined ? SESSIONS_LIMIT : Number(query.limit)
        if (!Number.isInteger(limit) || limit < 1 || limit > SESSIONS_MAX) throw invalid(`invalid limit: expected an integer from 1 to ${SESSIONS_MAX}`)
        return ctx.store.sessions.list(limit)
      },
      {
        query: t.Object({ limit: IntQuery('at most this many', { minimum: 1, maximum: SESSIONS_MAX, default: SESSIONS_LIMIT }) }),
        response: { 200: t.Array(SessionSchema) },
        detail: { summary: 'Agent hook sessions, newest first (tokens never shown)', tags: ['hooks'] },
      },
    )
}

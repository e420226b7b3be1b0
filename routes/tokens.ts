// /api/tokens: agent and viewer tokens, made and revoked by the admin (access.md);
// /api/whoami: what the caller's credential is, for the console and the CLI.
import { t } from 'elysia'
import type { Ctx } from '../services/context'
import { createToken, listTokens, NAME_MAX, revokeToken } from '../services/tokens'
import { TTL_MAX_MS, TTL_MIN_MS } from '../services/holders'
import { audited } from '../http/audit'
import { IdParams, Nullable } from '../http/models'
import { caller, credentialFor } from '../http/caller'

const Role = t.Union([t.Literal('agent'), t.Literal('viewer')])
const TokenSchema = t.Object({
  id: t.String(),
  name: t.String(),
  role: Role,
  created_at: t.String(),
  expires_at: Nullable(t.String()),
  last_used_at: Nullable(t.String({ description: 'within 5 seconds of the latest use; null before the first' })),
})
const CreateBody = t.Object(
  {
    name: t.String({ minLength: 1, maxLength: NAME_MAX, description: 'unique among live tokens', examples: ['ada'] }),
    role: Role,
    ttl_ms: t.Optional(t.Integer({ minimum: TTL_MIN_MS, maximum: TTL_MAX_MS, description: 'the token is refused after this; default: never' })),
  },
  { examples: [{ name: 'ada', role: 'agent' }] },
)

export function tokensRoutes(ctx: Ctx) {
  return audited(ctx)
    .post(
      '/api/tokens',
      async ({ body, audit, set }) => {
        const made = await createToken(ctx, audit, body)
        set.status = 201
        return made
      },
      {
        body: CreateBody,
        response: {
          201: t.Object({
            id: t.String(),
            name: t.String(),
            role: Role,
            token: t.String({ description: 'shown in this answer only; send it as Authorization: Bearer' }),
            created_at: t.String(),
            expires_at: Nullable(t.String()),
          }),
        },
        audit: 'token.create',
        detail: { summary: 'Make an agent or viewer token (admin); the secret is shown once', tags: ['tokens'] },
      },
    )
    .get('/api/tokens', () => listTokens(ctx), {
      response: { 200: t.Array(TokenSchema) },
      detail: { summary: 'Live tokens, never their secrets (admin)', tags: ['tokens'] },
    })
    .delete('/api/tokens/:id', ({ params, audit }) => revokeToken(ctx, audit, params.id), {
      params: IdParams,
      response: { 200: t.Object({ id: t.String(), revoked: t.Literal(true) }) },
      audit: 'token.revoke',
      detail: { summary: 'Revoke a token: refused from the next request on (admin)', tags: ['tokens'] },
    })
    .get(
      '/api/whoami',
      async ({ request }) => {
        const { role, tokenId, name } = credentialFor(request)
        const { instanceId } = await caller(ctx, request)
        const instance = instanceId ? await ctx.store.instances.get(instanceId) : null
        return {
          role,
          auth: !!ctx.config.authToken,
          token: tokenId ? { id: tokenId, name: name! } : null,
          instance: instance ? { id: instance.id, name: instance.name } : null,
        }
      },
      {
        response: {
          200: t.Object({
            role: t.Union([t.Literal('admin'), t.Literal('agent'), t.Literal('viewer')], { description: 'admin also when auth is off' }),
            auth: t.Boolean({ description: 'whether the server checks tokens at all' }),
            token: Nullable(t.Object({ id: t.String(), name: t.String() })),
            instance: Nullable(t.Object({ id: t.String(), name: t.String() })),
          }),
        },
        detail: { summary: "The caller's role, token and instance (X-Instance-Token)", tags: ['tokens'] },
      },
    )
}

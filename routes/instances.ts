// /api/instances: the agent registry. Registration returns the instance token
// once; only its hash is stored, and no other answer carries it.
import { t } from 'elysia'
import { IdParams, checks } from '../http/models'
import type { Ctx } from '../services/context'
import type { AuditScope } from '../services/audit'
import { CAPABILITY_MAX_LENGTH, MAX_CAPABILITIES, MAX_TEXT, activateInstance, assertManages, deregisterInstance, found, heartbeat, registerInstance, setCapabilities, setIntent } from '../services/instances'
import { audited } from '../http/audit'
import { credentialFor, ownerOf } from '../http/caller'

const InstanceSchema = t.Object({
  id: t.String(),
  name: t.String(),
  workspace: t.String(),
  intent: t.String(),
  stack: t.String(),
  capabilities: t.Array(t.String()),
  status: t.Union([t.Literal('active'), t.Literal('stale')]),
  registered_at: t.String(),
  last_seen: t.String(),
})

const RegisterBody = t.Object(
  {
    name: t.String({ description: 'required', ...checks({ minLength: 1, maxLength: MAX_TEXT }) }),
    workspace: t.Optional(t.String({ description: 'a project name here makes compliance check its contracts', ...checks({ maxLength: MAX_TEXT }) })),
    intent: t.Optional(t.String({ description: 'current task', ...checks({ maxLength: MAX_TEXT }) })),
    stack: t.Optional(t.String({ ...checks({ maxLength: MAX_TEXT }) })),
    capabilities: t.Optional(t.Array(t.String({ ...checks({ minLength: 1, maxLength: CAPABILITY_MAX_LENGTH }) }), { ...checks({ maxItems: MAX_CAPABILITIES }) })),
    new: t.Optional(t.Boolean({ description: 'true: a new instance, even where this agent token has a registered instance of this name (which it would resume otherwise)' })),
  },
  { examples: [{ name: 'ada', workspace: 'shop', intent: 'token rotation', stack: 'typescript', capabilities: ['ts', 'auth'] }] },
)

const InstanceFilterQuery = t.Object({
  name: t.Optional(t.String()),
  workspace: t.Optional(t.String()),
  stack: t.Optional(t.String()),
  capability: t.Optional(t.String({ description: 'exact match of one capability' })),
})


export function instancesRoutes(ctx: Ctx) {
  const store = () => ctx.store.instances
  /** 403 unless the caller's token registered instance `id` (or is the admin's). */
  const manages = (request: Request, id: string) => assertManages(ctx, credentialFor(request), id)
  /** heartbeat and activate: change one instance, answer `{id, status}`. */
  const touch =
    <S extends string>(change: typeof heartbeat, status: S) =>
    async ({ params, audit, request }: { params: { id: string }; audit?: AuditScope; request: Request }) => {
      await manages(request, params.id)
      await change(ctx, audit, params.id)
      return { id: params.id, status }
    }
  return audited(ctx)
    .post(
      '/api/instances/register',
      ({ body, audit, request }) => registerInstance(ctx, audit, body, request.headers.get('x-instance-token'), ownerOf(request)),
      {
        body: RegisterBody,
        response: {
          200: t.Composite([
            InstanceSchema,
            t.Object({
              token: t.String({ description: 'shown only here; send it as X-Instance-Token' }),
              resumed: t.Optional(t.Literal(true, { description: 'a registered instance of this name was taken up again (same id and token, grants kept): the X-Instance-Token sent was its, or this agent token registered it' })),
              warning: t.Optional(t.String({ description: 'a new instance was made while another active one has the name' })),
            }),
          ]),
        },
        audit: 'instance.register',
        detail: {
          summary: 'Register an instance (or resume yours); the answer carries its token',
          description:
            'Resumes (same id and token, locks, reservations and claims kept, `resumed: true`) the registered instance of this name whose X-Instance-Token is sent, or, with an agent token and no X-Instance-Token, the one this agent token registered under this name (by REST, MCP or a hook session): one name, one live instance per agent token. `new: true` makes a new instance instead. With the admin token or auth off, a registration without X-Instance-Token makes a new instance.',
          tags: ['instances'],
        },
      },
    )
    .get('/api/instances', ({ query: { name, workspace, stack, capability } }) => store().list({ name, workspace, stack, capability }), {
      query: InstanceFilterQuery,
      response: { 200: t.Array(InstanceSchema) },
      detail: { summary: 'List instances, optionally filtered', tags: ['instances'] },
    })
    .get(
      '/api/instances/stale',
      async () => (await store().stale()).map(({ id, name, workspace, status, last_seen }) => ({ id, name, workspace, status, last_seen })),
      {
        response: {
          200: t.Array(t.Object({ id: t.String(), name: t.String(), workspace: t.String(), status: t.String(), last_seen: t.String() })),
        },
        detail: { summary: 'Instances marked stale by the liveness check', tags: ['instances'] },
      },
    )
    .get('/api/instances/:id', async ({ params }) => found(await store().get(params.id)), {
      params: IdParams,
      response: { 200: InstanceSchema },
      detail: { summary: 'One instance (never its token)', tags: ['instances'] },
    })
    .post('/api/instances/:id/heartbeat', touch(heartbeat, 'ok'), {
      params: IdParams,
      response: { 200: t.Object({ id: t.String(), status: t.Literal('ok') }) },
      detail: { summary: 'Refresh last_seen; a stale instance becomes active', tags: ['instances'] },
    })
    .post('/api/instances/:id/activate', touch(activateInstance, 'active'), {
      params: IdParams,
      response: { 200: t.Object({ id: t.String(), status: t.Literal('active') }) },
      audit: 'instance.activate',
      detail: { summary: 'Force status active', tags: ['instances'] },
    })
    .post(
      '/api/instances/:id/capabilities',
      async ({ params, body, audit, request }) => {
        await manages(request, params.id)
        const instance = await setCapabilities(ctx, audit, params.id, body.capabilities)
        return { id: instance.id, capabilities: instance.capabilities }
      },
      {
        params: IdParams,
        body: t.Object({ capabilities: t.Array(t.String(), { description: 'replaces the list' }) }, { examples: [{ capabilities: ['ts', 'auth', 'billing'] }] }),
        response: { 200: t.Object({ id: t.String(), capabilities: t.Array(t.String()) }) },
        audit: 'instance.capabilities',
        detail: { summary: 'Replace the capabilities', tags: ['instances'] },
      },
    )
    .put('/api/instances/:id/intent', async ({ params, body, audit, request }) => (await manages(request, params.id), setIntent(ctx, audit, params.id, body.intent)), {
      params: IdParams,
      body: t.Object({ intent: t.String({ description: 'current task; also refreshes last_seen' }) }, { examples: [{ intent: 'invoice PDFs' }] }),
      response: { 200: InstanceSchema },
      audit: 'instance.intent',
      detail: { summary: 'Set the current task (REST twin of the MCP tool set_intent)', tags: ['instances'] },
    })
    .delete(
      '/api/instances/:id',
      async ({ params, audit, request }) => {
        await manages(request, params.id)
        return { deleted: (await deregisterInstance(ctx, audit, params.id)).id }
      },
      {
        params: IdParams,
        response: { 200: t.Object({ deleted: t.String() }) },
        audit: 'instance.deregister',
        detail: { summary: 'Deregister', tags: ['instances'] },
      },
    )
}

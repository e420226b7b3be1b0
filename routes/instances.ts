// /api/instances: the agent registry. Registration returns the instance token
// once; only its hash is stored, and no other answer carries it.
import { t } from 'elysia'
import { randomBytes } from 'node:crypto'
import { invalid, notFound } from '../lib/errors'
import type { Ctx } from '../lib/context'
import type { Instance, NewInstance } from '../store/instances'
import { hashToken, noteAudit, routes } from './http'

const MAX_TEXT = 1000
const MAX_CAPABILITIES = 100

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

const RegisterBody = t.Object({
  name: t.String({ description: 'required' }),
  workspace: t.Optional(t.String({ description: 'a project name here makes compliance check its contracts' })),
  intent: t.Optional(t.String({ description: 'current task' })),
  stack: t.Optional(t.String()),
  capabilities: t.Optional(t.Array(t.String())),
})

const InstanceFilterQuery = t.Object({
  name: t.Optional(t.String()),
  workspace: t.Optional(t.String()),
  stack: t.Optional(t.String()),
  capability: t.Optional(t.String({ description: 'exact match of one capability' })),
})

const IdParams = t.Object({ id: t.String() })

function checkText(field: string, value: string | undefined): void {
  if (value !== undefined && value.length > MAX_TEXT) throw invalid(`invalid ${field}: at most ${MAX_TEXT} characters`)
}

function checkCapabilities(caps: string[] | undefined): string[] | undefined {
  if (caps === undefined) return undefined
  if (caps.length > MAX_CAPABILITIES) throw invalid(`invalid capabilities: at most ${MAX_CAPABILITIES}`)
  if (caps.some((c) => c.trim() === '' || c.length > 200)) throw invalid('invalid capabilities: each must be 1 to 200 characters')
  return [...new Set(caps)]
}

/** Validates a registration (the MCP tool reaches it through this route too). */
function checkRegistration(body: NewInstance): NewInstance {
  if (!body.name?.trim()) throw invalid('name is required')
  for (const field of ['name', 'workspace', 'intent', 'stack'] as const) checkText(field, body[field])
  return { ...body, capabilities: checkCapabilities(body.capabilities) }
}

/** Registers and announces an instance; returns it with its token (the only time the token is shown). */
async function registerInstance(ctx: Ctx, body: NewInstance): Promise<Instance & { token: string }> {
  const token = randomBytes(32).toString('hex')
  const instance = await ctx.store.instances.register(checkRegistration(body), hashToken(token))
  await ctx.bus.publish('instance.registered', { id: instance.id, name: instance.name, workspace: instance.workspace, stack: instance.stack }, 'instances')
  return { ...instance, token }
}

function setIntent(ctx: Ctx, id: string, intent: string): Promise<Instance> {
  checkText('intent', intent)
  return ctx.store.instances.setIntent(id, intent).then(found)
}

function found<T>(instance: T | null): T {
  if (!instance) throw notFound('instance not found')
  return instance
}

export function instancesRoutes(ctx: Ctx) {
  const store = () => ctx.store.instances
  /** heartbeat and activate: change one instance, answer `{id, status}`. */
  const touch =
    <S extends string>(change: (id: string) => Promise<Instance | null>, status: S) =>
    async ({ params }: { params: { id: string } }) => {
      found(await change(params.id))
      return { id: params.id, status }
    }
  return routes(ctx)
    .post(
      '/api/instances/register',
      async ({ body, request }) => {
        const instance = await registerInstance(ctx, body)
        noteAudit(request, `${instance.id} (${instance.name})`)
        return instance
      },
      {
        body: RegisterBody,
        response: { 200: t.Composite([InstanceSchema, t.Object({ token: t.String({ description: 'shown only here; send it as X-Instance-Token' }) })]) },
        audit: 'instance.register',
        detail: { summary: 'Register an instance; the answer carries its token, once', tags: ['instances'] },
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
    .post('/api/instances/:id/heartbeat', touch((id) => store().heartbeat(id), 'ok'), {
      params: IdParams,
      response: { 200: t.Object({ id: t.String(), status: t.Literal('ok') }) },
      detail: { summary: 'Refresh last_seen; a stale instance becomes active', tags: ['instances'] },
    })
    .post('/api/instances/:id/activate', touch((id) => store().activate(id), 'active'), {
      params: IdParams,
      response: { 200: t.Object({ id: t.String(), status: t.Literal('active') }) },
      audit: 'instance.activate',
      detail: { summary: 'Force status active', tags: ['instances'] },
    })
    .post(
      '/api/instances/:id/capabilities',
      async ({ params, body, request }) => {
        const instance = found(await store().setCapabilities(params.id, checkCapabilities(body.capabilities)!))
        noteAudit(request, instance.capabilities.join(', '))
        return { id: instance.id, capabilities: instance.capabilities }
      },
      {
        params: IdParams,
        body: t.Object({ capabilities: t.Array(t.String(), { description: 'replaces the list' }) }),
        response: { 200: t.Object({ id: t.String(), capabilities: t.Array(t.String()) }) },
        audit: 'instance.capabilities',
        detail: { summary: 'Replace the capabilities', tags: ['instances'] },
      },
    )
    .put('/api/instances/:id/intent', ({ params, body }) => setIntent(ctx, params.id, body.intent), {
      params: IdParams,
      body: t.Object({ intent: t.String({ description: 'current task; also refreshes last_seen' }) }),
      response: { 200: InstanceSchema },
      audit: 'instance.intent',
      detail: { summary: 'Set the current task (REST twin of the MCP tool set_intent)', tags: ['instances'] },
    })
    .delete(
      '/api/instances/:id',
      async ({ params }) => {
        const gone = found(await store().delete(params.id))
        await ctx.bus.publish('instance.deregistered', { id: gone.id, name: gone.name }, 'instances')
        return { deleted: gone.id }
      },
      {
        params: IdParams,
        response: { 200: t.Object({ deleted: t.String() }) },
        audit: 'instance.deregister',
        detail: { summary: 'Deregister', tags: ['instances'] },
      },
    )
}

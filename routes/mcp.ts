// POST /mcp: the discovery door for LLM agents (MCP over Streamable HTTP,
// stateless: one server and transport per request). Each tool calls the same
// service as its REST twin, as the caller, so validation, events and audit are
// the REST ones; data itself moves over REST.
import { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js'
import { WebStandardStreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/webStandardStreamableHttp.js'
import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js'
import { z } from 'zod'
import type { Ctx } from '../services/context'
import { callerOf } from '../http/caller'
import { audited, resourceOf } from '../http/audit'
import { AppError } from '../lib/errors'
import { STATUS } from '../http/errors'
import { checkRule } from '../lib/rules'
import { scopeFor, type Caller } from '../services/audit'
import { registerInstance, setIntent } from '../services/instances'
import { proposeRule } from '../services/rules'

export const MCP_TOOLS = ['register_instance', 'discover_instances', 'set_intent', 'get_endpoints', 'propose_rule'] as const

/** REST routes an agent needs, by purpose; paths are relative to `rest`. */
const REST_ENDPOINTS = {
  state: 'GET|PUT|DELETE /api/state/{key} (?history=1, ?version=N, ?diff=a,b, POST ?rollback=N); watch: GET ?wait=25s with If-None-Match: "<etag>" (or *)',
  specs: 'GET|PUT|DELETE /api/specs/{project}/{name}',
  contracts: 'GET|PUT /api/contracts/{project}/{name}, POST .../validate, POST .../test',
  events: 'POST /api/events/publish, GET /api/events/history (long-poll: ?after_id=N&wait=25s), WS /api/events/subscribe?pattern=&after_id=',
  locks: 'PUT /api/locks/{name} {ttl_ms?, wait_ms?, limit?, reason?} (X-Instance-Token), DELETE /api/locks/{name} [?force=1], GET /api/locks[?prefix=], GET /api/locks/{name}',
  reservations:
    'POST /api/reservations {project, paths, exclusive?, ttl_ms?, reason?} (X-Instance-Token), GET /api/reservations[?project=&instance_id=], GET|DELETE /api/reservations/{id}, POST /api/reservations/{id}/renew {ttl_ms}',
  check: 'POST /api/reservations/check {project, paths} (pre-commit: 409 with conflicts)',
  instances: 'GET /api/instances, POST /api/instances/{id}/heartbeat, PUT /api/instances/{id}/intent',
  validate: 'POST /api/validate/{project} {content, filename}',
  rules: 'POST /api/rules/propose',
  llm: 'POST /api/llm/usage',
  docs: 'GET /openapi.json',
}

const CLI_COMMANDS = [
  'muster config set server <rest>',
  'muster register <name> --workspace <project>',
  'muster state get|set <key>',
  'muster specs get|set <project>/<name>',
  'muster events publish|history|subscribe',
  'muster validate <project> --file <path>',
  'muster instances list',
  'muster lock acquire|release|list <name> [--ttl D] [--wait D]',
  'muster reserve <project> <glob...> [--shared] [--ttl D]; muster release <id>; muster reservations',
  'muster check <project> <path...> (exit 1 on a conflict)',
  'muster state watch <key>; muster events wait [--topic T]',
]

function result(data: Record<string, unknown>, isError = false): CallToolResult {
  return { content: [{ type: 'text', text: JSON.stringify(data) }], structuredContent: data, ...(isError ? { isError } : {}) }
}

/** The tools of one MCP request, bound to its caller. */
function mcpServer(ctx: Ctx, request: Request, caller: Caller): McpServer {
  const origin = new URL(request.url).origin
  /**
   * A service call's answer as the tool result: `shape` turns the value into the
   * result's object; an error becomes an isError result with the REST error body.
   */
  const call = async <T>(run: () => Promise<T>, shape = (ok: any): Record<string, unknown> => ok): Promise<CallToolResult> => {
    try {
      return result(shape(await run()))
    } catch (err) {
      if (!(err instanceof AppError)) throw err
      const code = STATUS[err.kind]
      return result({ error: err.message, code, ...err.extra }, true)
    }
  }
  /** The audit scope of a tool's write: the action and resource of its REST twin. */
  const scope = (action: string, path: string) => scopeFor(caller, action, resourceOf(origin + path))

  const server = new McpServer({ name: 'muster', version: '0.1.0' })
  const text = z.string().optional()
  server.registerTool(
    'register_instance',
    {
      description: 'Register this agent: id, token (send as X-Instance-Token), heartbeat URL, REST endpoints.',
      inputSchema: { name: z.string(), workspace: text, intent: text, stack: text, capabilities: z.array(z.string()).optional() },
    },
    (args) =>
      call(() => registerInstance(ctx, scope('instance.register', '/api/instances/register'), args), ({ id, token, status }) => {
        const self = `${origin}/api/instances/${id}`
        return {
          id,
          token,
          status,
          headers: { 'X-Instance-Token': token },
          heartbeat: `POST ${self}/heartbeat`,
          intent: `PUT ${self}/intent`,
          rest: origin,
          endpoints: REST_ENDPOINTS,
        }
      }),
  )
  server.registerTool(
    'discover_instances',
    {
      description: 'List registered agents; all filters optional.',
      inputSchema: { name: text, workspace: text, stack: text, capability: text },
    },
    ({ name, workspace, stack, capability }) => call(() => ctx.store.instances.list({ name, workspace, stack, capability }), (instances) => ({ instances })),
  )
  server.registerTool(
    'set_intent',
    { description: 'Set your current task; also counts as a heartbeat.', inputSchema: { instance_id: z.string(), intent: z.string() } },
    ({ instance_id, intent }) => call(() => setIntent(ctx, scope('instance.intent', `/api/instances/${encodeURIComponent(instance_id)}/intent`), instance_id, intent)),
  )
  server.registerTool('get_endpoints', { description: 'REST and CLI endpoints of this server.' }, async () =>
    result({ rest: origin, endpoints: REST_ENDPOINTS, cli: { env: `SERVICE_SERVER=${origin}`, commands: CLI_COMMANDS } }),
  )
  server.registerTool(
    'propose_rule',
    {
      description: 'Propose a validation rule; a human accepts or rejects it.',
      inputSchema: {
        project: z.string(),
        rule_id: z.string(),
        pattern: z.string(),
        message: z.string(),
        severity: text,
        match_type: text,
        stack: text,
        proposed_by: text,
        context: text,
      },
    },
    (args) =>
      call(
        () => proposeRule(ctx, scope('rule.propose', '/api/rules/propose'), checkRule(args)),
        (rule) => ({ project: rule.project, rule_id: rule.rule_id, status: 'proposed' }),
      ),
  )
  return server
}

export function mcpRoutes(ctx: Ctx) {
  return audited(ctx).post(
    '/mcp',
    async ({ request }) => {
      const server = mcpServer(ctx, request, await callerOf(ctx, request))
      const transport = new WebStandardStreamableHTTPServerTransport({ sessionIdGenerator: undefined, enableJsonResponse: true })
      await server.connect(transport)
      try {
        return await transport.handleRequest(request)
      } finally {
        void server.close()
      }
    },
    {
      parse: 'none',
      detail: { summary: `MCP (Streamable HTTP, stateless): tools ${MCP_TOOLS.join(', ')}`, tags: ['mcp'] },
    },
  )
}

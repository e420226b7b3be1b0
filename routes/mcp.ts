// POST /mcp: the discovery door for LLM agents (MCP over Streamable HTTP,
// stateless: one server and transport per request). Each tool calls the same
// service as its REST twin, as the caller, so validation, events and audit are
// the REST ones; data itself moves over REST.
import { t } from 'elysia'
import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js'
import type { Ctx } from '../services/context'
import { caller, ownerOf } from '../http/caller'
import { urlOf } from '../http/url'
import { audited, resourceOf } from '../http/audit'
import { AppError, forbidden } from '../lib/errors'
import { READ_ONLY } from '../http/access'
import { STATUS } from '../http/errors'
import { MATCH_TYPES, SEVERITIES, checkRule } from '../validation/rules'
import { HOOK_AGENTS } from '../services/hooks'
import { scopeFor, type Caller } from '../services/audit'
import { assertManages, registerInstance, setIntent, type Owner } from '../services/instances'
import { proposeRule } from '../services/rules'
import { VERSION } from '../lib/version'
import { rawBodyDoc, checkParsedRequest } from '../http/body'
import { bodyRead } from '../http/holds'
import { withExample } from '../http/models'

export const MCP_TOOLS = ['register_instance', 'discover_instances', 'set_intent', 'get_endpoints', 'propose_rule'] as const

/** REST routes an agent needs, by purpose; paths are relative to `rest`. */
const REST_ENDPOINTS = {
  state: 'GET|PUT|DELETE /api/state/{key} (?history=1, ?version=N, ?diff=a,b, POST ?rollback=N); watch: GET ?wait=25s with If-None-Match: "<etag>" (or *)',
  specs: 'GET|PUT|DELETE /api/specs/{project}/{name} (?history=1, ?version=N, ?diff=a,b)',
  contracts: 'GET|PUT /api/contracts/{project}/{name}, POST .../validate, POST .../test',
  events: 'POST /api/events/publish, GET /api/events/history (long-poll: ?after_id=N&wait=25s), WS /api/events/subscribe?pattern=&after_id=',
  locks: 'PUT /api/locks/{name} {ttl_ms?, wait_ms?, limit?, reason?} (X-Instance-Token), DELETE /api/locks/{name} [?force=1], GET /api/locks[?prefix=], GET /api/locks/{name}',
  reservations:
    'POST /api/reservations {project, paths, exclusive?, ttl_ms?, reason?} (X-Instance-Token), GET /api/reservations[?project=&instance_id=], GET|DELETE /api/reservations/{id}, POST /api/reservations/{id}/renew {ttl_ms}',
  check: 'POST /api/reservations/check {project, paths} (pre-commit: 409 with conflicts)',
  instances: 'GET /api/instances, POST /api/instances/{id}/heartbeat, PUT /api/instances/{id}/intent',
  validate: 'POST /api/validate/{project} {content, filename}',
  rules: 'POST /api/rules/propose, GET /api/rules?status=proposed',
  llm: 'POST /api/llm/usage',
  tasks:
    'POST /api/queues/{queue}/tasks {title, payload?, priority?, depends_on?, requires?, max_attempts?, dedupe_key?, project?, paths?}, ' +
    'POST /api/queues/{queue}/claim {wait_ms?, visibility_ms?} (X-Instance-Token; reserves the task\'s paths), POST /api/tasks/{id}/ack|nack|extend {claim_id}, ' +
    'POST /api/tasks/{id}/notes {text}, GET /api/queues, GET /api/queues/{queue}/tasks?status=, GET|DELETE /api/tasks/{id}',
  inbox:
    'POST /api/messages {to: [name…] or ["*"], subject, body?, thread?, reply_to?, importance?, ack_required?, ack_within_ms?}; ' +
    'GET /api/inbox?after=ID&unacked=1&wait=30s (X-Instance-Token; {messages, cursor}, does not consume), POST /api/messages/{id}/ack (X-Instance-Token)',
  messages: 'GET /api/messages?q=words&from=&to=&thread=&limit= (newest first), GET /api/messages/{id} (with receipts), GET /api/threads/{thread}',
  hooks: `POST /api/hooks/{agent} (agent ${HOOK_AGENTS.join(', ')}): the agent's lifecycle hook events; \`muster init <agent>\` writes the hook config`,
  docs: 'GET /openapi.json',
}

/** Sent once in the `initialize` answer: how an agent should use Muster at all. */
const instructions = (origin: string) =>
  [
    `Muster (${origin}) coordinates AI coding agents that share one server: versioned state, specs, API contracts, events, validation rules, locks, file reservations, a task queue and an inbox.`,
    'This MCP endpoint is only the discovery door: move data over REST or the `muster` CLI, never through MCP, so payloads cost no tokens.',
    'In a session wired with Muster hooks (`muster init <agent>`) you are registered already: your session is an instance and the `muster` CLI in your shell acts as it; register_instance answers that same instance. Use the CLI for everything below.',
    '1. Otherwise call register_instance first (workspace = your project). Keep the token and send it as the X-Instance-Token header on every REST call (the CLI does after `muster register`): it names you in the audit log and counts as your heartbeat.',
    '2. Call get_endpoints for the REST routes (full reference: GET /openapi.json) and the CLI commands.',
    '3. discover_instances shows the other agents and their intents; set_intent tells them what you work on now.',
    '4. propose_rule suggests a validation rule; a human accepts or rejects it.',
    'Coordinate over REST (routes in get_endpoints): locks (PUT /api/locks/{name}), file reservations before you edit (POST /api/reservations), the task queue (POST /api/queues/{queue}/claim), and your inbox: messages to you by name (GET /api/inbox?wait=30s, POST /api/messages/{id}/ack; send with POST /api/messages). Agent hooks post to POST /api/hooks/{agent}.',
    'While idle, keep alive with POST /api/instances/{id}/heartbeat (or `muster heartbeat --every 1m`).',
  ].join('\n')

const CLI_COMMANDS = [
  'muster config set server <rest>',
  'muster register <name> --workspace <project>',
  'muster state get|set <key>',
  'muster specs get|set <project>/<name>',
  'muster events publish|history|subscribe',
  'muster validate <project> --file <path>',
  'muster instances list',
  'muster heartbeat --every 1m',
  'muster task add <queue> --title T | claim <queue> --wait 30s | ack|nack <id> | list [queue]',
  'muster lock acquire|release|list <name> [--ttl D] [--wait D]',
  'muster reserve <project> <glob...> [--shared] [--ttl D]; muster release <id>; muster reservations',
  'muster check <project> <path...> (exit 1 on a conflict)',
  'muster state watch <key>; muster events wait [--topic T]',
  "muster send <name...|'*'> --subject S [--body B | -] [--ack] [--thread T] [--reply-to ID]",
  'muster inbox [--wait D] [--unacked] [--after ID]; muster ack <id>; muster thread <thread>; muster messages [word...]',
]

/** What get_endpoints says of a session wired with hooks. */
const HOOKED_SESSION =
  'In a session wired with Muster hooks you are registered already: the muster CLI in your shell acts as your session\'s instance (no `muster register` needed; `muster register <your name>` answers the same instance).'

function result(data: Record<string, unknown>, isError = false): CallToolResult {
  return { content: [{ type: 'text', text: JSON.stringify(data) }], structuredContent: data, ...(isError ? { isError } : {}) }
}

/** The MCP SDK and zod, loaded on the first /mcp request: they are a large part of start-up otherwise. */
let sdk: Promise<{
  McpServer: typeof import('@modelcontextprotocol/sdk/server/mcp.js').McpServer
  Transport: typeof import('@modelcontextprotocol/sdk/server/webStandardStreamableHttp.js').WebStandardStreamableHTTPServerTransport
  z: typeof import('zod').z
}> | null = null
const loadSdk = () =>
  (sdk ??= Promise.all([
    import('@modelcontextprotocol/sdk/server/mcp.js'),
    import('@modelcontextprotocol/sdk/server/webStandardStreamableHttp.js'),
    import('zod'),
  ]).then(([mcp, transport, zod]) => ({ McpServer: mcp.McpServer, Transport: transport.WebStandardStreamableHTTPServerTransport, z: zod.z })))

/** The tools of one MCP request, bound to its caller. */
function mcpServer(ctx: Ctx, request: Request, caller: Caller, owner: Owner | null, { McpServer, z }: Awaited<ReturnType<typeof loadSdk>>) {
  const origin = urlOf(request).origin
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
  /** A tool that changes something: a viewer token's call is refused as its REST twin would be. */
  const write = <T>(run: () => Promise<T>, shape?: (ok: any) => Record<string, unknown>) =>
    call(() => {
      if (caller.role === 'viewer') throw forbidden(READ_ONLY)
      return run()
    }, shape)
  /** The audit scope of a tool's write: the action and resource of its REST twin. */
  const scope = (action: string, path: string) => scopeFor(caller, action, resourceOf(origin + path))

  const server = new McpServer({ name: 'muster', version: VERSION }, { instructions: instructions(origin) })
  const text = (description: string) => z.string().optional().describe(description)
  server.registerTool(
    'register_instance',
    {
      // Under 100 characters; the instructions say the rest (a hooked session is registered already).
      description: 'Register (or, in a hooked session, find) your instance: id, REST endpoints, token if new.',
      inputSchema: {
        name: z.string().describe('your name, e.g. "claude-frontend"'),
        workspace: text('the project you work on; contracts of the project named like it apply to you'),
        intent: text('what you are doing now'),
        stack: text('technology stack, e.g. "react"; selects stack-specific rules'),
        capabilities: z.array(z.string()).optional().describe('what you can do for other agents, e.g. ["review", "tests"]'),
        new: z.boolean().optional().describe('true: a new instance even where this token registered one of this name (resumed otherwise)'),
      },
      annotations: { readOnlyHint: false, destructiveHint: false, idempotentHint: false, openWorldHint: false },
    },
    (args) =>
      write(() => registerInstance(ctx, scope('instance.register', '/api/instances/register'), args, null, owner), ({ id, token, status, resumed }) => {
        const self = `${origin}/api/instances/${id}`
        // A resumed instance's token is held already (by the session's CLI): it is not put in the model's context.
        const credentials = resumed
          ? { resumed: true, note: 'this is your existing instance (same id, what it holds kept); the muster CLI in your shell already acts as it' }
          : { token, headers: { 'X-Instance-Token': token } }
        return {
          id,
          ...credentials,
          status,
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
      inputSchema: {
        name: text('exact instance name'),
        workspace: text('exact workspace (project)'),
        stack: text('exact stack'),
        capability: text('agents that list this capability'),
      },
      annotations: { readOnlyHint: true, destructiveHint: false, idempotentHint: true, openWorldHint: false },
    },
    ({ name, workspace, stack, capability }) => call(() => ctx.store.instances.list({ name, workspace, stack, capability }), (instances) => ({ instances })),
  )
  server.registerTool(
    'set_intent',
    {
      description: 'Set your current task; also counts as a heartbeat.',
      inputSchema: {
        instance_id: z.string().describe('your id from register_instance'),
        intent: z.string().describe('what you work on now, in a sentence'),
      },
      annotations: { readOnlyHint: false, destructiveHint: false, idempotentHint: true, openWorldHint: false },
    },
    ({ instance_id, intent }) =>
      write(async () => {
        await assertManages(ctx, caller, instance_id)
        return setIntent(ctx, scope('instance.intent', `/api/instances/${encodeURIComponent(instance_id)}/intent`), instance_id, intent)
      }),
  )
  server.registerTool(
    'get_endpoints',
    {
      description: 'REST and CLI endpoints of this server.',
      annotations: { readOnlyHint: true, destructiveHint: false, idempotentHint: true, openWorldHint: false },
    },
    async () =>
      result({
        rest: origin,
        endpoints: REST_ENDPOINTS,
        cli: { env: `SERVICE_SERVER=${origin}`, commands: CLI_COMMANDS },
        hooked_session: HOOKED_SESSION,
      }),
  )
  server.registerTool(
    'propose_rule',
    {
      description: 'Propose a validation rule; a human accepts or rejects it.',
      inputSchema: {
        project: z.string().describe('project the rule is for; _global for every project'),
        rule_id: z.string().describe('unique within the project, e.g. "no-todo"'),
        pattern: z.string().describe('RE2 regex (no backreferences or lookaround), or a custom check name such as no-console-log'),
        message: z.string().describe('shown with each violation'),
        severity: z.enum(SEVERITIES).optional().describe('default error'),
        match_type: z
          .enum(MATCH_TYPES)
          .optional()
          .describe('regex: the pattern must not occur; missing: it must occur; custom: a named check. Default regex'),
        stack: text('only for this stack; empty: every stack'),
        proposed_by: text('default: the calling instance (X-Instance-Token)'),
        context: text('why the rule is needed, for the human reviewer'),
      },
      annotations: { readOnlyHint: false, destructiveHint: false, idempotentHint: false, openWorldHint: false },
    },
    (args) =>
      write(
        () => proposeRule(ctx, scope('rule.propose', '/api/rules/propose'), checkRule(args)),
        (rule) => ({ project: rule.project, rule_id: rule.rule_id, status: 'proposed' }),
      ),
  )
  // The SDK advertises tools.listChanged on the first tool, but a stateless endpoint (one server per
  // request, no stream) can never send that notification, and the list never changes: say so. The
  // SDK merges capabilities and offers no way to drop a key, so false stands for "not supported".
  server.server.registerCapabilities({ tools: { listChanged: false } })
  return server
}

/** A JSON-RPC 2.0 answer to a request: its result, or its error. The SDK writes it, so the schema documents and checks nothing. */
const JsonRpcResponse = t.Object({
  jsonrpc: t.Literal('2.0'),
  id: t.Union([t.String(), t.Integer(), t.Null()]),
  result: t.Optional(t.Record(t.String(), t.Unknown(), { description: 'e.g. {tools: [...]} for tools/list, {content: [...]} for tools/call' })),
  error: t.Optional(t.Object({ code: t.Integer(), message: t.String(), data: t.Optional(t.Unknown()) })),
})

export function mcpRoutes(ctx: Ctx) {
  return audited(ctx).post(
    '/mcp',
    async ({ request }) => {
      const lib = await loadSdk()
      // The SDK reads the body itself; the REST rule on NUL characters (http/body.ts) holds here too.
      const text = await request.text()
      bodyRead(request)
      let parsed: unknown
      try {
        parsed = JSON.parse(text)
      } catch {
        parsed = undefined // not JSON: the SDK answers that itself
      }
      checkParsedRequest(request.url, parsed)
      const message = new Request(request.url, { method: request.method, headers: request.headers, body: text })
      const server = mcpServer(ctx, message, await caller(ctx, request), ownerOf(request), lib)
      const transport = new lib.Transport({ sessionIdGenerator: undefined, enableJsonResponse: true })
      await server.connect(transport)
      try {
        return await transport.handleRequest(message)
      } finally {
        void server.close()
      }
    },
    {
      parse: 'none',
      response: { 200: JsonRpcResponse, 202: t.Void({ description: 'a notification (no id) was accepted; nothing to answer' }) },
      detail: {
        summary: `MCP (Streamable HTTP, stateless): tools ${MCP_TOOLS.join(', ')}`,
        description: 'Send `Accept: application/json, text/event-stream`, as the MCP transport requires (406 otherwise).',
        tags: ['mcp'],
        requestBody: withExample(rawBodyDoc('application/json', 'A JSON-RPC 2.0 message'), { jsonrpc: '2.0', id: 1, method: 'tools/list' }),
      },
    },
  )
}

// POST /mcp: the discovery door for LLM agents (MCP over Streamable HTTP,
// stateless: one server and transport per request). Each tool is a REST call
// made in-process with the caller's headers, so auth, validation, audit and
// events are exactly those of the REST API; data itself moves over REST.
import { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js'
import { WebStandardStreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/webStandardStreamableHttp.js'
import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js'
import { z } from 'zod'
import type { Ctx } from '../lib/context'
import { MATCH_TYPES, SEVERITIES } from '../lib/rules'
import { VERSION } from '../lib/version'
import { callAs, routes } from './http'

export const MCP_TOOLS = ['register_instance', 'discover_instances', 'set_intent', 'get_endpoints', 'propose_rule'] as const

/** REST routes an agent needs, by purpose; paths are relative to `rest`. */
const REST_ENDPOINTS = {
  state: 'GET|PUT|DELETE /api/state/{key} (?history=1, ?version=N, ?diff=a,b, POST ?rollback=N)',
  specs: 'GET|PUT|DELETE /api/specs/{project}/{name} (?history=1, ?version=N, ?diff=a,b)',
  contracts: 'GET|PUT /api/contracts/{project}/{name}, POST .../validate, POST .../test',
  events: 'POST /api/events/publish, GET /api/events/history, WS /api/events/subscribe?pattern=&after_id=',
  instances: 'GET /api/instances, POST /api/instances/{id}/heartbeat, PUT /api/instances/{id}/intent',
  validate: 'POST /api/validate/{project} {content, filename}',
  rules: 'POST /api/rules/propose, GET /api/rules?status=proposed',
  llm: 'POST /api/llm/usage',
  docs: 'GET /openapi.json',
}

/** Sent once in the `initialize` answer: how an agent should use Muster at all. */
const instructions = (origin: string) =>
  [
    `Muster (${origin}) coordinates AI coding agents that share one server: versioned state, specs, API contracts, events, validation rules.`,
    'This MCP endpoint is only the discovery door: move data over REST or the `muster` CLI, never through MCP, so payloads cost no tokens.',
    '1. Call register_instance first (workspace = your project). Keep the token and send it as the X-Instance-Token header on every REST call (the CLI does after `muster register`): it names you in the audit log and counts as your heartbeat.',
    '2. Call get_endpoints for the REST routes (full reference: GET /openapi.json) and the CLI commands.',
    '3. discover_instances shows the other agents and their intents; set_intent tells them what you work on now.',
    '4. propose_rule suggests a validation rule; a human accepts or rejects it.',
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
]

function result(data: Record<string, unknown>, isError = false): CallToolResult {
  return { content: [{ type: 'text', text: JSON.stringify(data) }], structuredContent: data, ...(isError ? { isError } : {}) }
}

/** The tools of one MCP request, bound to its caller's credentials. */
function mcpServer(ctx: Ctx, caller: Request): McpServer {
  const origin = new URL(caller.url).origin
  /**
   * The REST call's answer as the tool result: `shape` turns a success body into the
   * result's object; an error answer passes through as an isError result.
   */
  const rest = async (method: string, path: string, body?: unknown, shape = (ok: any): Record<string, unknown> => ok): Promise<CallToolResult> => {
    const response = await callAs(ctx, caller, method, path, body)
    const answer = await response.json().catch(() => ({ error: `HTTP ${response.status}`, code: response.status }))
    return response.ok ? result(shape(answer)) : result(answer, true)
  }

  const server = new McpServer({ name: 'muster', version: VERSION }, { instructions: instructions(origin) })
  const text = (description: string) => z.string().optional().describe(description)
  server.registerTool(
    'register_instance',
    {
      description: 'Register this agent: id, token (send as X-Instance-Token), heartbeat URL, REST endpoints.',
      inputSchema: {
        name: z.string().describe('your name, e.g. "claude-frontend"'),
        workspace: text('the project you work on; contracts of the project named like it apply to you'),
        intent: text('what you are doing now'),
        stack: text('technology stack, e.g. "react"; selects stack-specific rules'),
        capabilities: z.array(z.string()).optional().describe('what you can do for other agents, e.g. ["review", "tests"]'),
      },
      annotations: { readOnlyHint: false, destructiveHint: false, idempotentHint: false, openWorldHint: false },
    },
    (args) =>
      rest('POST', '/api/instances/register', args, ({ id, token, status }) => {
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
      inputSchema: {
        name: text('exact instance name'),
        workspace: text('exact workspace (project)'),
        stack: text('exact stack'),
        capability: text('agents that list this capability'),
      },
      annotations: { readOnlyHint: true, destructiveHint: false, idempotentHint: true, openWorldHint: false },
    },
    (args) => {
      const query = new URLSearchParams(Object.entries(args).filter((e): e is [string, string] => typeof e[1] === 'string'))
      return rest('GET', `/api/instances${query.size ? `?${query}` : ''}`, undefined, (instances) => ({ instances }))
    },
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
    ({ instance_id, intent }) => rest('PUT', `/api/instances/${encodeURIComponent(instance_id)}/intent`, { intent }),
  )
  server.registerTool(
    'get_endpoints',
    {
      description: 'REST and CLI endpoints of this server.',
      annotations: { readOnlyHint: true, destructiveHint: false, idempotentHint: true, openWorldHint: false },
    },
    async () => result({ rest: origin, endpoints: REST_ENDPOINTS, cli: { env: `SERVICE_SERVER=${origin}`, commands: CLI_COMMANDS } }),
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
    (args) => rest('POST', '/api/rules/propose', args),
  )
  return server
}

export function mcpRoutes(ctx: Ctx) {
  return routes(ctx).post(
    '/mcp',
    async ({ request }) => {
      const server = mcpServer(ctx, request)
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

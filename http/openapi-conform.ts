// Turns the document @elysiajs/openapi generates from the routes into one that
// linters (Redocly's recommended rules, swagger-parser) and client generators
// accept. Everything here is derived from the routes and the conventions in the
// docs/api/, so a route added later is documented the same way without work of its own:
// security schemes, the {error, code} answers, conditional-request headers,
// operation ids, `{key}` (or `{name}`) for wildcard paths, JSON-only request bodies,
// the role each operation needs (`x-access`, with its 403) and the checks handlers make
// themselves (http/models.ts `checks`).
import { READ_ONLY, requiredRole } from './access'
import { HANDLER_CHECKS } from './models'

type Json = Record<string, any>
const METHODS = ['get', 'put', 'post', 'delete', 'patch', 'head', 'options'] as const
/** What a wildcard path's parameter is called in the document (`key` unless named here). */
const WILDCARD_NAMES: Record<string, string> = { '/api/locks/*': 'name' }

export interface ConformOptions {
  version: string
  serverUrl: string
  /** Whether the server runs with --auth-token: the bearer scheme is then required, not optional. */
  bearerRequired: boolean
  /** Operation ids that routes chose (`detail.operationId`); every other operation gets one from its method and path. */
  namedOperations: Set<string>
  /** Routes whose body may be left out, as `PUT /api/locks/*` (the router's method and pattern). */
  optionalBodies?: Set<string>
}

const TAG_DESCRIPTIONS: Record<string, string> = {
  health: 'Liveness of the service itself',
  state: 'Versioned key/value state with history, diffs and compare-and-swap',
  specs: 'Per-project specs (JSON documents, versioned)',
  contracts: 'API contracts per project: documents, payload validation, live tests',
  events: 'Event bus: publish, history, WebSocket subscriptions',
  webhooks: 'Webhooks that receive matching events',
  instances: 'Agent instances: registration, heartbeats, intent, capabilities',
  liveness: 'Marking silent instances stale',
  compliance: 'Scheduled contract checks of active instances',
  rules: 'Validation rules that agents propose and humans accept',
  validate: 'Validating content against a project\'s rules',
  templates: 'Reusable bundles of rules and contracts',
  audit: 'The append-only log of every mutating call',
  metrics: 'Service numbers, per-agent counters, Prometheus metrics',
  llm: 'LLM usage and cost records',
  backup: 'Backup and restore of the whole database',
  tasks: 'Task queues: add, claim, ack, nack',
  mcp: 'Model Context Protocol door for agent discovery',
}

const ERROR_SCHEMA = {
  type: 'object',
  description: 'Every error answer. `code` equals the HTTP status; a failed precondition adds `current_version`.',
  required: ['error', 'code'],
  properties: {
    error: { type: 'string', description: 'what went wrong, for people' },
    code: { type: 'integer', description: 'the HTTP status' },
    current_version: { type: 'integer', description: 'on 412: the version the write did not match' },
  },
}

const ERROR_DESCRIPTIONS: Record<number, [name: string, description: string, example: string]> = {
  400: ['BadRequest', 'Bad input (a parameter, or a body that is not JSON or does not match the schema); nothing changed', 'request body must be JSON: not valid JSON'],
  401: ['Unauthorized', 'Missing or wrong bearer token', 'invalid or missing bearer token'],
  403: [
    'Forbidden',
    "The token's role may not make this call (`x-access` names the role it needs: a viewer token may only read, an agent token may not make admin calls), or X-Instance-Token belongs to an instance another token registered",
    READ_ONLY,
  ],
  404: ['NotFound', 'Unknown resource', 'not found'],
  409: ['Conflict', 'Duplicate id, a lost claim, or a state that forbids the change', 'claim lost'],
  412: ['PreconditionFailed', 'If-Match / if_version / If-None-Match did not hold; nothing changed', 'precondition failed: expected version 2'],
  413: ['PayloadTooLarge', 'Request body over the route\'s limit', 'request body exceeds the 10 MB limit'],
  500: ['InternalError', 'Internal error (logged with its stack on the server)', 'internal server error'],
}

const errorRef = (status: number) => ({ $ref: `#/components/responses/${ERROR_DESCRIPTIONS[status][0]}` })

const HEADER_PARAMS = {
  IfMatch: { name: 'If-Match', in: 'header', required: false, description: 'Compare-and-swap: the ETag (quoted SHA-256) the current value must have', schema: { type: 'string' } },
  IfNoneMatchWrite: { name: 'If-None-Match', in: 'header', required: false, description: '`*`: create only (412 if the resource exists)', schema: { type: 'string' } },
  IfNoneMatchRead: { name: 'If-None-Match', in: 'header', required: false, description: 'An ETag from an earlier read: 304 when it still matches', schema: { type: 'string' } },
}

const DOCUMENT_HEADERS = {
  ETag: { description: 'Quoted SHA-256 of the value', schema: { type: 'string' } },
  'X-Service-Version': { description: 'The version number of the value returned', schema: { type: 'integer' } },
}

/** `getSpecsByProjectAndName`, `postInstancesHeartbeat`: the verb, the fixed segments, and the trailing parameters. */
function operationIdFor(method: string, path: string): string {
  const segments = path.split('/').filter((s) => s && s !== 'api')
  const pascal = (s: string) => s.split(/[^A-Za-z0-9]+/).filter(Boolean).map((w) => w[0].toUpperCase() + w.slice(1)).join('')
  let trailing = segments.length
  while (trailing > 0 && segments[trailing - 1].startsWith('{')) trailing--
  const fixed = segments.slice(0, trailing).filter((s) => !s.startsWith('{')).map(pascal).join('')
  const params = segments.slice(trailing).map((s) => pascal(s.slice(1, -1)))
  return `${method}${fixed}${params.length ? `By${params.join('And')}` : ''}`
}

/** Elysia's numeric coercion shows as `anyOf: [string with format integer, integer]`: clients want the number. */
function unwrapCoercions(schema: any): any {
  if (Array.isArray(schema)) return schema.map(unwrapCoercions)
  if (!schema || typeof schema !== 'object') return schema
  const out: Json = {}
  for (const [k, v] of Object.entries(schema)) out[k] = unwrapCoercions(v)
  const alts = out.anyOf
  if (Array.isArray(alts) && alts.length === 2) {
    const coerced = alts.findIndex((a: Json) => a.type === 'string' && ['integer', 'number', 'boolean'].includes(a.format))
    if (coerced >= 0) {
      const { anyOf: _, ...rest } = out
      return { ...alts[1 - coerced], ...rest }
    }
  }
  return out
}

/** Moves what handlers check themselves (`x-handler-checks`, see http/models.ts) into the schema it belongs to. */
function handlerChecks(schema: any): any {
  if (Array.isArray(schema)) return schema.map(handlerChecks)
  if (!schema || typeof schema !== 'object') return schema
  const { [HANDLER_CHECKS]: checked, ...rest } = schema
  const out: Json = {}
  for (const [k, v] of Object.entries(rest)) out[k] = handlerChecks(v)
  return checked ? { ...out, ...checked } : out
}

/** The router's pattern of a document path: `/api/tasks/{id}` is `/api/tasks/:id` (a wildcard stays `*`). */
const routerPattern = (path: string) => path.replace(/\{([^}]+)\}/g, ':$1')

/**
 * Versioned documents, recognised by their query parameters (docs/api/state.md, compare-and-swap):
 * reads (`history`) return the raw value with its ETag and 304 on If-None-Match;
 * writes (`if_version`) also take If-Match, and If-None-Match: * to create only.
 */
function conditionalRequests(op: Json, method: string, query: Set<string>): void {
  const responses: Json = op.responses
  if (method === 'get' && query.has('history')) {
    op.parameters.push(HEADER_PARAMS.IfNoneMatchRead)
    responses['200'] ??= { description: 'The value as stored, with its Content-Type; `history` and `diff` answer JSON', content: { '*/*': { schema: {} } } }
    responses['200'].headers = { ...DOCUMENT_HEADERS, ...responses['200'].headers }
    responses['304'] = { description: 'Not modified: If-None-Match matched the current ETag' }
  }
  if (query.has('if_version')) {
    op.parameters.push(HEADER_PARAMS.IfMatch)
    if (method === 'put') op.parameters.push(HEADER_PARAMS.IfNoneMatchWrite)
    responses['412'] ??= errorRef(412)
  }
}

function conformOperation(op: Json, method: string, path: string, pattern: string, opts: ConformOptions): void {
  op.summary ??= `${method.toUpperCase()} ${path}`
  const role = requiredRole(method.toUpperCase(), pattern)
  op['x-access'] = role
  // A route naming its own requirement (the instance token for a claim) needs the bearer token too when the server has one.
  if (op.security?.length && opts.bearerRequired) op.security = op.security.map((r: Json) => ({ bearerAuth: [], ...r }))
  op.parameters = (op.parameters ?? []) as Json[]
  const query = new Set<string>(op.parameters.filter((p: Json) => p.in === 'query').map((p: Json) => p.name))
  const hasParams = op.parameters.length > 0 || path.includes('{')

  // JSON endpoints read every body as JSON (docs/api/README.md, conventions): advertise nothing else.
  const content = op.requestBody?.content
  if (op.requestBody && opts.optionalBodies?.has(`${method.toUpperCase()} ${pattern}`)) op.requestBody.required = false
  if (content?.['application/json'])
    for (const type of Object.keys(content)) if (type !== 'application/json') delete content[type]

  const responses: Json = (op.responses ??= {})
  for (const [status, answer] of Object.entries<Json>(responses)) {
    // A t.Void() answer (e.g. 204) comes out as `content: {type: 'void'}`, which is no media type map.
    if (answer.content && Object.keys(answer.content).some((type) => !type.includes('/'))) delete answer.content
    if (Number(status) >= 400) responses[status] = ERROR_DESCRIPTIONS[Number(status)] ? errorRef(Number(status)) : { description: answer.description ?? 'Error', content: { 'application/json': { schema: { $ref: '#/components/schemas/Error' } } } }
    else if (answer.description?.startsWith('Response for status')) answer.description = Number(status) < 300 ? 'OK' : answer.description
  }
  conditionalRequests(op, method, query)
  // A WebSocket upgrade answers 101, never 2xx.
  if (!Object.keys(responses).some((s) => s.startsWith('2') || s === '101')) responses['200'] = { description: 'OK', content: { 'application/json': { schema: {} } } }
  if (hasParams || op.requestBody) responses['400'] ??= errorRef(400)
  if (op.security?.length !== 0) responses['401'] ??= errorRef(401)
  // Roles exist only with tokens: without --auth-token every caller may make every call.
  if (opts.bearerRequired && role !== 'viewer' && op.security?.length !== 0) responses['403'] ??= errorRef(403)
  if (path.includes('{')) responses['404'] ??= errorRef(404)
  if (op.requestBody) responses['413'] ??= errorRef(413)
  responses['500'] ??= errorRef(500)
  if (!op.parameters.length) delete op.parameters
}

/** The WebSocket route appears as method "ws": documented as the GET that upgrades. */
function websocketAsGet(item: Json): void {
  const ws = item.ws
  delete item.ws
  if (!ws || item.get) return
  item.get = {
    ...ws,
    description: `${ws.description ? `${ws.description}\n\n` : ''}A WebSocket upgrade (\`Upgrade: websocket\`); browsers may pass the bearer token as \`?token=\`.`,
    responses: { '101': { description: 'Switching protocols: events follow as JSON text messages' } },
  }
}

export function conformDocument(generated: { paths: Json; components?: Json }, opts: ConformOptions): Json {
  const paths: Json = {}
  for (const [rawPath, rawItem] of Object.entries<Json>(handlerChecks(unwrapCoercions(generated.paths)))) {
    const item = { ...rawItem }
    websocketAsGet(item)
    // The router's wildcard (`/api/state/*`) becomes a named parameter clients can fill.
    const wildcard = rawPath.endsWith('/*')
    const name = WILDCARD_NAMES[rawPath] ?? 'key'
    const path = wildcard ? `${rawPath.slice(0, -2)}/{${name}}` : rawPath
    for (const method of Object.keys(item)) {
      if (!(METHODS as readonly string[]).includes(method)) continue
      const op = item[method]
      if (wildcard) {
        op.parameters = [
          { name, in: 'path', required: true, description: `The ${name}; may contain slashes (send them as is or percent-encoded)`, schema: { type: 'string' } },
          ...(op.parameters ?? []).filter((p: Json) => !(p.in === 'path' && p.name === '*')),
        ]
      }
      conformOperation(op, method, path, routerPattern(rawPath), opts)
    }
    paths[path] = item
  }

  // Operation ids from method and path, unless a route names its own; unique over the document.
  const used = new Set<string>()
  for (const [path, item] of Object.entries<Json>(paths))
    for (const method of METHODS) {
      const op = item[method]
      if (!op) continue
      if (opts.namedOperations.has(op.operationId)) {
        used.add(op.operationId)
        continue
      }
      let id = operationIdFor(method, path)
      for (let n = 2; used.has(id); n++) id = `${operationIdFor(method, path)}${n}`
      used.add(id)
      op.operationId = id
    }

  const usedTags = new Set<string>()
  for (const item of Object.values<Json>(paths)) for (const method of METHODS) for (const tag of item[method]?.tags ?? []) usedTags.add(tag)
  const usedErrors = new Set<number>()
  const refs = JSON.stringify(paths).matchAll(/#\/components\/responses\/(\w+)/g)
  for (const [, name] of refs) usedErrors.add(Number(Object.entries(ERROR_DESCRIPTIONS).find(([, [n]]) => n === name)![0]))

  const bearer = { bearerAuth: [] as string[] }
  const instance = { instanceToken: [] as string[] }
  return {
    openapi: '3.1.0',
    info: {
      title: 'Muster API',
      version: opts.version,
      license: { name: 'MIT', identifier: 'MIT' },
      description:
        'Coordination server for cooperating AI coding agents. Errors are always `{"error", "code"}` with `code` equal to the HTTP status. ' +
        'With `--auth-token`, every call but `GET /health`, `/livez` and `/readyz` sends `Authorization: Bearer <token>`; an agent also sends its instance token as `X-Instance-Token`.',
    },
    servers: [{ url: opts.serverUrl, description: 'this server' }],
    // An agent's calls carry its instance token beside the bearer token; it is optional except where an operation says so.
    security: opts.bearerRequired ? [bearer, { ...bearer, ...instance }] : [{}, instance],
    tags: [...usedTags].sort().map((name) => ({ name, description: TAG_DESCRIPTIONS[name] ?? `Operations on ${name}` })),
    paths,
    components: {
      schemas: { ...handlerChecks(unwrapCoercions(generated.components?.schemas ?? {})), Error: ERROR_SCHEMA },
      responses: Object.fromEntries(
        [...usedErrors].sort().map((status) => {
          const [name, description, message] = ERROR_DESCRIPTIONS[status]
          const example = { error: message, code: status, ...(status === 412 && { current_version: 3 }) }
          return [name, { description, content: { 'application/json': { schema: { $ref: '#/components/schemas/Error' }, example } } }]
        }),
      ),
      securitySchemes: {
        // Listed only when the server has a token: a scheme no operation uses is noise to clients (and to linters).
        ...(opts.bearerRequired && { bearerAuth: { type: 'http', scheme: 'bearer', description: 'The server token (`--auth-token`); required on every call but `GET /health`, `/livez` and `/readyz`' } }),
        instanceToken: { type: 'apiKey', in: 'header', name: 'X-Instance-Token', description: 'The token an instance got at registration: names it in the audit log and agent metrics, and counts as a heartbeat' },
      },
    },
  }
}

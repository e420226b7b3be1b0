// The OpenAPI document as tools see it: Redocly's recommended rules and
// swagger-parser accept the live document, openapi-typescript generates a client
// from it that typechecks, and the conventions (security, {error, code} answers,
// conditional-request headers, `{key}`, JSON-only bodies, roles) hold for every
// operation; every success answer has a schema, and bounds are the handlers' own.
import { afterAll, describe, expect, test } from 'bun:test'
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import SwaggerParser from '@apidevtools/swagger-parser'
import Ajv2020 from 'ajv/dist/2020'
import { Elysia, t } from 'elysia'
import { toOpenAPISchema } from '@elysiajs/openapi'
import { conformDocument } from '../http/openapi-conform'
import { requiredRole } from '../http/access'
import { TTL_MAX_MS, TTL_MIN_MS, WAIT_MAX_MS } from '../services/holders'
import { LIMIT_MAX } from '../services/locks'
import { DEFAULT_MAX_ATTEMPTS, MAX_ATTEMPTS, MAX_PRIORITY, TASK_STATUSES } from '../lib/tasks'
import { IMPORTANCE, INBOX_LIMIT, INBOX_MAX, MAX_RECIPIENTS } from '../services/messages'
import { DEFAULT_LIMIT } from '../http/models'
import { SEVERITIES } from '../validation/rules'
import { call, startServer, tempDir } from './helpers'

const ROOT = join(import.meta.dir, '..')
const TOKEN = 'openapi-token'
const auth = { authorization: `Bearer ${TOKEN}` }
/** The routes open without the token: health and the orchestrator's probes. */
const OPEN = ['/health', '/livez', '/readyz']
const s = await startServer({ args: ['--auth-token', TOKEN] })
afterAll(() => s.cleanup())

const doc = (await call(s.api, 'GET', '/openapi.json', undefined, auth)).body
const dir = tempDir('muster-openapi-')
const file = join(dir, 'openapi.json')
writeFileSync(file, JSON.stringify(doc))
const METHODS = ['get', 'put', 'post', 'delete', 'patch']
const operations = Object.entries<Record<string, any>>(doc.paths).flatMap(([path, item]) =>
  METHODS.filter((m) => item[m]).map((method) => ({ path, method, op: item[method] })),
)

/** Redocly's recommended rules on a document file: the problems as `severity rule pointer`. */
async function redocly(path: string): Promise<string[]> {
  const r = await run(['node', join(ROOT, 'node_modules/.bin/redocly'), 'lint', '--extends=recommended', '--format=json', path])
  return JSON.parse(r.stdout).problems.map((p: any) => `${p.severity} ${p.ruleId} ${p.location[0]?.pointer ?? ''}`)
}

async function run(cmd: string[], cwd = dir) {
  const proc = Bun.spawn(cmd, { cwd, stdout: 'pipe', stderr: 'pipe', env: { ...process.env, REDOCLY_TELEMETRY: 'off', REDOCLY_SUPPRESS_UPDATE_NOTICE: 'true' } })
  const [stdout, stderr, code] = await Promise.all([new Response(proc.stdout).text(), new Response(proc.stderr).text(), proc.exited])
  return { stdout, stderr, code }
}

describe('linters', () => {
  test("Redocly's recommended rules: no errors; the only warnings are the open probes having no 4xx and the WebSocket no 2xx", async () => {
    const problems = await redocly(file)
    expect(problems.filter((p: string) => p.startsWith('error'))).toEqual([])
    expect(problems.sort()).toEqual([
      // The upgrade answers 101 Switching Protocols; a 2xx there would be a lie to clients.
      'warn operation-2xx-response #/paths/~1api~1events~1subscribe/get/responses',
      // The probes are open and take no input: nothing they could answer with a 4xx.
      'warn operation-4xx-response #/paths/~1health/get/responses',
      'warn operation-4xx-response #/paths/~1livez/get/responses',
      'warn operation-4xx-response #/paths/~1readyz/get/responses',
    ])
    // The license the document names is the repository's LICENSE.
    expect(doc.info.license).toEqual({ name: 'MIT', identifier: 'MIT' })
    expect(readFileSync(join(ROOT, 'LICENSE'), 'utf8')).toStartWith('MIT License\n')
  }, 60_000)

  test('without --auth-token the bearer scheme is not offered, and the document lints and validates the same', async () => {
    const open = await startServer()
    try {
      const plain = (await call(open.api, 'GET', '/openapi.json')).body
      expect(plain.security).toEqual([{}, { instanceToken: [] }])
      expect(Object.keys(plain.components.securitySchemes)).toEqual(['instanceToken'])
      // Without tokens there are no roles to refuse: the role is stated, no 403 documented.
      expect(JSON.stringify(plain.paths)).not.toContain('"403"')
      expect(plain.paths['/api/backup'].get['x-access']).toBe('admin')
      expect(plain.servers).toEqual([{ url: open.api, description: 'this server' }])
      const plainFile = join(dir, 'openapi-no-token.json')
      writeFileSync(plainFile, JSON.stringify(plain))
      expect((await redocly(plainFile)).filter((p) => p.startsWith('error'))).toEqual([])
      await SwaggerParser.validate(plainFile)
    } finally {
      await open.cleanup()
    }
  }, 60_000)

  test('swagger-parser validates it (OpenAPI 3.1 schema and $refs)', async () => {
    const api: any = await SwaggerParser.validate(file)
    expect(api.openapi).toBe('3.1.0')
    expect(Object.keys(api.paths).length).toBeGreaterThan(55)
  })

  test('openapi-typescript generates a client that typechecks, and wrong usage does not', async () => {
    const client = join(dir, 'client')
    mkdirSync(client)
    const gen = await run(['node', join(ROOT, 'node_modules/.bin/openapi-typescript'), file, '-o', join(client, 'api.d.ts')])
    expect(gen.code).toBe(0)
    const usage = (body: string) => `import type { components, operations, paths } from './api'
type Registered = paths['/api/instances/register']['post']['responses'][200]['content']['application/json']
type Key = paths['/api/state/{key}']['get']['parameters']['path']['key']
type Error = components['schemas']['Error']
export async function register(base: string, name: string): Promise<Registered> {
  const body: operations['postInstancesRegister']['requestBody']['content']['application/json'] = { name }
  const res = await fetch(base + '/api/instances/register', { method: 'POST', body: JSON.stringify(body) })
  return (await res.json()) as Registered
}
export const key: Key = 'myproj/plan'
export const token = (r: Registered): string => r.token
${body}
`
    const check = async (body: string) => {
      writeFileSync(join(client, 'usage.ts'), usage(body))
      return run(['node', join(ROOT, 'node_modules/.bin/tsc'), '--noEmit', '--strict', '--target', 'es2022', '--module', 'esnext', '--moduleResolution', 'bundler', '--lib', 'es2022,dom', 'usage.ts'], client)
    }
    const good = await check(`export const failure: Error = { error: 'not found', code: 404 }`)
    expect(good.stdout + good.stderr).toBe('')
    expect(good.code).toBe(0)
    const bad = await check(`export const failure: Error = { error: 'not found', code: '404' }`)
    expect(bad.stdout).toContain("Type 'string' is not assignable to type 'number'")
  }, 60_000)
})

describe('a route added later', () => {
  test('is documented by the same rules, without work of its own, and lints clean', async () => {
    const app = new Elysia().post('/api/locks/:name/acquire', () => ({ fence: 1 }), {
      body: t.Object({ ttl_ms: t.Integer() }),
      query: t.Object({ if_version: t.Optional(t.String()) }),
      response: { 200: t.Object({ fence: t.Integer() }), 409: t.Object({ error: t.String(), code: t.Integer(), holder: t.String() }) },
      detail: { summary: 'Acquire a lock', tags: ['locks'] },
    })
    const later = conformDocument(toOpenAPISchema(app), { version: '0.0.0', serverUrl: 'http://localhost:9800', bearerRequired: true, namedOperations: new Set() })
    const op = later.paths['/api/locks/{name}/acquire'].post
    expect(op.operationId).toBe('postLocksAcquire')
    expect(Object.keys(op.requestBody.content)).toEqual(['application/json'])
    expect(op.requestBody.content['application/json'].schema.properties.ttl_ms).toEqual({ type: 'integer' })
    expect(Object.keys(op.responses).sort()).toEqual(['200', '400', '401', '403', '404', '409', '412', '413', '500'])
    expect(op['x-access']).toBe('agent')
    expect(op.responses['409']).toEqual({ $ref: '#/components/responses/Conflict' })
    expect(op.parameters.map((p: any) => `${p.in} ${p.name}`)).toEqual(['path name', 'query if_version', 'header If-Match'])
    const laterFile = join(dir, 'openapi-later.json')
    writeFileSync(laterFile, JSON.stringify(later))
    expect((await redocly(laterFile)).filter((p) => p.startsWith('error'))).toEqual([])
  }, 60_000)
})

describe('conventions on every operation', () => {
  test('security: bearer (and the instance token) everywhere but GET /health and the probes', () => {
    expect(doc.components.securitySchemes).toEqual({
      bearerAuth: expect.objectContaining({ type: 'http', scheme: 'bearer' }),
      instanceToken: expect.objectContaining({ type: 'apiKey', in: 'header', name: 'X-Instance-Token' }),
    })
    expect(doc.security).toEqual([{ bearerAuth: [] }, { bearerAuth: [], instanceToken: [] }])
    expect(doc.paths['/health'].get.security).toEqual([])
    // A route may require the instance token (a claim names its claimer); the bearer token is added to it.
    expect(doc.paths['/api/queues/{queue}/claim'].post.security).toEqual([{ bearerAuth: [], instanceToken: [] }])
    expect(operations.filter(({ op }) => op.security !== undefined).map(({ path }) => path).sort()).toEqual(['/api/queues/{queue}/claim', '/api/tasks/{id}/notes', '/health', '/livez', '/readyz'])
  })

  test('every error answer is the {error, code} schema; 401 and 500 everywhere, 404 where the path has parameters', () => {
    for (const { path, method, op } of operations) {
      const statuses = Object.keys(op.responses)
      for (const status of statuses.filter((s) => Number(s) >= 400)) {
        const answer = op.responses[status].$ref ? doc.components.responses[op.responses[status].$ref.split('/').pop()] : op.responses[status]
        expect([path, method, status, answer.content['application/json'].schema]).toEqual([path, method, status, { $ref: '#/components/schemas/Error' }])
      }
      expect([path, method, statuses.includes('500'), statuses.includes('401') || OPEN.includes(path)]).toEqual([path, method, true, true])
      if (path.includes('{')) expect([path, method, statuses]).toEqual([path, method, expect.arrayContaining(['404'])])
    }
    expect(doc.components.schemas.Error).toEqual(expect.objectContaining({ required: ['error', 'code'] }))
  })

  test('operation ids are unique, read as method + path, and routes may name their own', () => {
    const ids = operations.map(({ op }) => op.operationId)
    expect(new Set(ids).size).toBe(ids.length)
    for (const id of ids) expect(id).toMatch(/^[a-z]+[A-Z][A-Za-z]*$/)
    const idOf = (path: string, method: string) => doc.paths[path][method].operationId
    expect(idOf('/api/state/{key}', 'get')).toBe('getStateByKey')
    expect(idOf('/api/specs/{project}/{name}', 'put')).toBe('putSpecsByProjectAndName')
    expect(idOf('/api/instances/{id}/heartbeat', 'post')).toBe('postInstancesHeartbeat')
    expect(idOf('/api/instances', 'get')).toBe('getInstances')
    expect(idOf('/metrics', 'get')).toBe('getPrometheusMetrics')
  })

  test('state is /api/state/{key} with a path parameter; reads carry ETag and If-None-Match, writes If-Match and 412', () => {
    expect(Object.keys(doc.paths).filter((p) => p.includes('*'))).toEqual([])
    const state = doc.paths['/api/state/{key}']
    for (const method of ['get', 'put', 'post', 'delete'])
      expect(state[method].parameters.find((p: any) => p.in === 'path')).toEqual(expect.objectContaining({ name: 'key', required: true }))
    expect(Object.keys(state.get.responses['200'].headers)).toEqual(['ETag', 'X-Service-Version'])
    expect(state.get.responses['304']).toBeDefined()
    const headers = (op: any) => op.parameters.filter((p: any) => p.in === 'header').map((p: any) => p.name)
    expect(headers(state.get)).toEqual(['If-None-Match'])
    expect(headers(state.put)).toEqual(['If-Match', 'If-None-Match'])
    expect(headers(doc.paths['/api/specs/{project}/{name}'].delete)).toEqual(['If-Match'])
    expect(state.put.responses['412']).toEqual({ $ref: '#/components/responses/PreconditionFailed' })
    expect(Object.keys(state.put.requestBody.content)).toEqual(['*/*'])
  })

  test('{key} works as generated clients fill it: percent-encoded, slashes included', async () => {
    const url = (template: string, key: string) => s.api + template.replace('{key}', encodeURIComponent(key))
    const put = await fetch(url('/api/state/{key}', 'myproj/plan'), { method: 'PUT', headers: { ...auth, 'content-type': 'application/json' }, body: '{"step":1}' })
    expect((await put.json()).key).toBe('myproj/plan')
    expect((await call(s.api, 'GET', '/api/state/myproj/plan', undefined, auth)).body).toEqual({ step: 1 })
  })

  test('request bodies are JSON only (raw routes show their own type); the WebSocket route is a GET', () => {
    const types = operations.filter(({ op }) => op.requestBody).map(({ path, method, op }) => `${method} ${path} ${Object.keys(op.requestBody.content)}`)
    expect(types.filter((t) => !t.endsWith(' application/json'))).toEqual(['put /api/state/{key} */*', 'post /api/restore application/octet-stream'])
    expect(types.length).toBeGreaterThan(25)
    expect(Object.keys(doc.paths['/api/events/subscribe'])).toEqual(['get'])
    expect(Object.keys(doc.paths['/api/events/subscribe'].get.responses)).toContain('101')
  })
})

describe('what clients and "Try it out" read', () => {
  /** Reads that answer the stored value as it is: any bytes, with the Content-Type it was written with. */
  const RAW_READS = ['get /api/contracts/{project}/{name}', 'get /api/specs/{project}/{name}', 'get /api/state/{key}']
  /** The router's pattern of a document path (access.ts keys its lists by it). */
  const pattern = (path: string) => (path === '/api/state/{key}' || path === '/api/locks/{name}' ? path.replace(/\{\w+\}$/, '*') : path.replace(/\{(\w+)\}/g, ':$1'))
  const schemaOf = (path: string, method: string) => doc.paths[path][method].requestBody.content['application/json'].schema

  test('every success answer has a schema, but the raw reads of a stored value', () => {
    const free: string[] = []
    for (const { path, method, op } of operations)
      for (const [status, answer] of Object.entries<any>(op.responses))
        if (status.startsWith('2'))
          for (const media of Object.values<any>(answer.content ?? {})) if (!media.schema || Object.keys(media.schema).length === 0) free.push(`${method} ${path}`)
    expect(free.sort()).toEqual(RAW_READS)
    expect(doc.paths['/api/state'].get.responses['200'].content['application/json'].schema.items.required).toEqual(['key', 'version', 'content_type', 'updated_at'])
  })

  test('every operation states the role it needs, as access.ts decides it; those a viewer or agent token may not call document 403', () => {
    for (const { path, method, op } of operations) {
      const role = requiredRole(method.toUpperCase(), pattern(path))
      expect([method, path, op['x-access']]).toEqual([method, path, role])
      const open = op.security?.length === 0
      expect([method, path, op.responses['403']]).toEqual([method, path, role === 'viewer' || open ? undefined : { $ref: '#/components/responses/Forbidden' }])
    }
    const roles = operations.map(({ op }) => op['x-access'])
    expect(new Set(roles)).toEqual(new Set(['viewer', 'agent', 'admin']))
    expect(doc.paths['/api/backup'].get['x-access']).toBe('admin')
    expect(doc.paths['/api/reservations/check'].post['x-access']).toBe('viewer')
  })

  test('bounds, defaults and allowed values are the constants the handlers check', () => {
    const lock = schemaOf('/api/locks/{name}', 'put').properties
    expect(lock.ttl_ms).toEqual(expect.objectContaining({ type: 'integer', minimum: TTL_MIN_MS, maximum: TTL_MAX_MS }))
    expect(lock.wait_ms).toEqual(expect.objectContaining({ minimum: 0, maximum: WAIT_MAX_MS, default: 0 }))
    expect(lock.limit).toEqual(expect.objectContaining({ minimum: 1, maximum: LIMIT_MAX }))
    const task = schemaOf('/api/queues/{queue}/tasks', 'post').properties
    expect(task.priority).toEqual(expect.objectContaining({ minimum: -MAX_PRIORITY, maximum: MAX_PRIORITY, default: 0 }))
    expect(task.max_attempts).toEqual(expect.objectContaining({ minimum: 1, maximum: MAX_ATTEMPTS, default: DEFAULT_MAX_ATTEMPTS }))
    expect(schemaOf('/api/queues/{queue}/claim', 'post').properties.visibility_ms).toEqual(expect.objectContaining({ minimum: TTL_MIN_MS, maximum: TTL_MAX_MS }))
    const message = schemaOf('/api/messages', 'post').properties
    expect(message.importance).toEqual(expect.objectContaining({ enum: [...IMPORTANCE], default: 'normal' }))
    expect(message.to).toEqual(expect.objectContaining({ minItems: 1, maxItems: MAX_RECIPIENTS }))
    expect(schemaOf('/api/rules/propose', 'post').properties.severity).toEqual(expect.objectContaining({ enum: [...SEVERITIES], default: 'error' }))
    const query = (path: string, name: string) => doc.paths[path].get.parameters.find((p: any) => p.name === name).schema
    expect(query('/api/queues/{queue}/tasks', 'status').enum).toEqual([...TASK_STATUSES])
    // Query parameters the handler reads as integers are integers to clients, with the handler's bounds.
    expect(query('/api/audit', 'limit')).toEqual(expect.objectContaining({ type: 'integer', minimum: 1, default: DEFAULT_LIMIT }))
    expect(query('/api/inbox', 'limit')).toEqual(expect.objectContaining({ type: 'integer', minimum: 1, maximum: INBOX_MAX, default: INBOX_LIMIT }))
    // The handlers' own checks are moved into the document, never left under their private key.
    expect(JSON.stringify(doc)).not.toContain('x-handler-checks')
  })

  test('every request body has an example (restore takes a backup file); an optional body is not required', () => {
    const missing = operations
      .filter(({ op }) => op.requestBody)
      .filter(({ op }) => !Object.values<any>(op.requestBody.content).some((m) => m.example !== undefined || m.schema?.examples?.length))
      .map(({ path, method }) => `${method} ${path}`)
    expect(missing).toEqual(['post /api/restore'])
    // Each example keeps the bounds and types its own schema states (the server accepting it: openapi-tryout.test.ts).
    const ajv = new Ajv2020({ strict: false }) // OpenAPI 3.1 schemas are JSON Schema 2020-12
    for (const { path, method, op } of operations) {
      const schema = op.requestBody?.content['application/json']?.schema
      for (const example of schema?.examples ?? []) expect([method, path, ajv.validate(schema, example) || ajv.errorsText()]).toEqual([method, path, true])
    }
    expect(doc.paths['/api/locks/{name}'].put.requestBody.required).toBe(false)
    expect(doc.paths['/api/queues/{queue}/claim'].post.requestBody.required).toBe(false)
    expect(doc.paths['/api/reservations'].post.requestBody.required).toBe(true)
  })
})

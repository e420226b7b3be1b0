// Swagger UI's "Try it out" on every operation that takes a body: the body it
// fills in (the schema's example, else defaults, minimums and enum values) is sent
// to a real server, with the path parameters of resources made just before, and
// no answer is 400 or 422. Bounds in the document are the handlers' own, so a
// default that a route refuses (`{"ttl_ms": 0}` to a lock) shows up here.
import { afterAll, describe, expect, test } from 'bun:test'
import { call, register, startServer } from './helpers'

const TOKEN = 'tryout-token'
const admin = { authorization: `Bearer ${TOKEN}` }
const s = await startServer({ args: ['--auth-token', TOKEN] })
afterAll(() => s.cleanup())
const doc = (await call(s.api, 'GET', '/openapi.json', undefined, admin)).body

/** The value Swagger UI fills a schema with when the operation has no example. */
function sample(schema: any): unknown {
  if (!schema || typeof schema !== 'object') return undefined
  if (schema.examples?.length) return schema.examples[0]
  if (schema.example !== undefined) return schema.example
  if (schema.default !== undefined) return schema.default
  if (schema.enum?.length) return schema.enum[0]
  if (schema.allOf) return sample(schema.allOf[0])
  if (schema.anyOf) return sample(schema.anyOf[0])
  const type = Array.isArray(schema.type) ? schema.type[0] : schema.type
  switch (type) {
    case 'object':
      return Object.fromEntries(Object.entries<any>(schema.properties ?? {}).map(([k, v]) => [k, sample(v)]))
    case 'array':
      return [sample(schema.items)]
    case 'integer':
    case 'number':
      return schema.minimum ?? 0
    case 'boolean':
      return true
    case 'string':
      return 'a'.repeat(Math.max(schema.minLength ?? 0, 6))
    default:
      return null
  }
}

/** The media type Swagger UI sends (the first the operation lists) and the body it fills in. */
function tryOutBody(op: any): { type: string; body: string } {
  const [type, media] = Object.entries<any>(op.requestBody.content)[0]
  const value = media.example ?? sample(media.schema)
  return { type, body: typeof value === 'string' ? value : JSON.stringify(value) }
}

// The resources the path parameters name, made through the API first.
const ada = await register(s.api, { name: 'ada', workspace: 'shop', capabilities: ['ts'] }, admin)
const asAda = { ...admin, ...ada.h }
const task = await call(s.api, 'POST', '/api/queues/builds/tasks', { title: 'a task to act on' }, admin)
const claimed = await call(s.api, 'POST', '/api/queues/builds/claim', {}, asAda)
expect(claimed.body.id).toBe(task.body.id)
const reservation = await call(s.api, 'POST', '/api/reservations', { project: 'shop', paths: ['docs/**'] }, asAda)

/** The values of the path parameters, by name. */
const PARAMS: Record<string, string> = {
  key: 'shop/plan',
  name: 'deploy', // a lock (specs and contracts name theirs below)
  project: 'shop',
  queue: 'builds',
  id: String(task.body.id),
  ruleID: 'no-todo',
  agent: 'claude-code',
}
/** Operations whose `{id}` (or `{name}`) is some other resource's. */
const OWN_PARAMS: Record<string, Record<string, string>> = {
  'put /api/specs/{project}/{name}': { name: 'plan' },
  'put /api/contracts/{project}/{name}': { name: 'api' },
  'post /api/contracts/{project}/{name}/validate': { name: 'api' },
  'post /api/contracts/{project}/{name}/test': { name: 'api' },
  'post /api/instances/{id}/capabilities': { id: ada.id },
  'put /api/instances/{id}/intent': { id: ada.id },
  'post /api/reservations/{id}/renew': { id: reservation.body.id },
  'put /api/templates/{id}': { id: 'ts-hygiene' },
  'post /api/templates/{id}/apply': { id: 'ts-hygiene' },
  // The webhook the create example makes.
  'patch /api/webhooks/{id}': { id: 'ci' },
  'post /api/webhooks/{id}/redeliver': { id: 'ci' },
  'put /api/budgets/{name}': { name: 'ada-daily' },
  'post /api/approvals/{id}/decision': { id: 'nope' },
}

/**
 * Every operation with a body, in an order where each finds what it acts on (the
 * contract before its validation, the template before its update), and its answer
 * to the example. A 409 is the example meeting the state of the server, not a bad body.
 */
const EXPECTED: [operation: string, answer: number | string][] = [
  ['put /api/state/{key}', 200],
  ['put /api/specs/{project}/{name}', 200],
  ['put /api/contracts/{project}/{name}', 200],
  ['post /api/contracts/{project}/{name}/validate', 200],
  // The example's base_url is a loopback port where nothing listens: the answer reports that.
  ['post /api/contracts/{project}/{name}/test', 200],
  ['post /api/llm/usage', 200],
  ['post /v1/logs', 200],
  ['post /v1/metrics', 200],
  ['put /api/budgets/{name}', 201],
  ['post /api/events/publish', 200],
  ['post /api/instances/register', 200],
  ['post /api/instances/{id}/capabilities', 200],
  ['put /api/instances/{id}/intent', 200],
  ['post /api/rules/propose', 200],
  ['put /api/rules/{project}/{ruleID}', 200],
  ['post /api/rules/import', 200],
  ['put /api/validate/{project}/rules', 200],
  ['post /api/validate/{project}', 200],
  ['post /api/templates', 200],
  ['put /api/templates/{id}', 200],
  ['post /api/templates/{id}/apply', 200],
  ['post /api/queues/{queue}/tasks', 201],
  // ada holds the task made above; the example's claim_id is not that claim's.
  ['post /api/queues/{queue}/claim', 200],
  ['post /api/tasks/{id}/ack', '409 claim lost'],
  ['post /api/tasks/{id}/nack', '409 claim lost'],
  ['post /api/tasks/{id}/extend', '409 claim lost'],
  ['post /api/tasks/{id}/notes', 201],
  ['put /api/locks/{name}', 200],
  ['post /api/reservations', 201],
  ['post /api/reservations/check', 200],
  ['post /api/reservations/{id}/renew', 200],
  ['put /api/projects/{project}', 200],
  ['post /api/hooks/{agent}', 200],
  ['post /api/messages', 201],
  ['post /api/tokens', 201],
  ['post /api/webhooks', 200],
  ['patch /api/webhooks/{id}', 200],
  ['post /api/webhooks/{id}/redeliver', 200],
  // No request is waiting: the decision finds none, the batch skips its ids.
  ['post /api/approvals/{id}/decision', '404 approval nope not found'],
  ['post /api/approvals/decision', 200],
  ['post /api/approval-rules', 201],
  ['post /mcp', 200],
]
/** Left out, and why. */
const SKIPPED: Record<string, string> = {
  // Its body is a backup file (Swagger UI offers a file picker, no example); sending one replaces the database.
  'post /api/restore': 'a file upload that replaces the database',
}

describe('Try it out', () => {
  const withBody = Object.entries<any>(doc.paths).flatMap(([path, item]) =>
    Object.entries<any>(item)
      .filter(([, op]) => op.requestBody)
      .map(([method]) => `${method} ${path}`),
  )

  test('the list covers every operation that takes a body', () => {
    expect([...EXPECTED.map(([op]) => op), ...Object.keys(SKIPPED)].sort()).toEqual(withBody.sort())
  })

  test('every default body is accepted: no 400 or 422, and the answer each example earns', async () => {
    const answers: string[] = []
    for (const [operation] of EXPECTED) {
      const [method, path] = operation.split(' ')
      const op = doc.paths[path][method]
      const values = { ...PARAMS, ...OWN_PARAMS[operation] }
      const url = path.replace(/\{(\w+)\}/g, (_, name) => encodeURIComponent(values[name]))
      const { type, body } = tryOutBody(op)
      // As Swagger UI asks: the first media type of the success answer (MCP's transport also needs event-stream listed).
      const accept = path === '/mcp' ? 'application/json, text/event-stream' : 'application/json'
      const r = await call(s.api, method.toUpperCase(), url, body, { ...asAda, 'content-type': type, accept })
      answers.push(`${operation} ${r.status}${r.status >= 400 ? ` ${r.body?.error}` : ''}`)
    }
    expect(answers.filter((a) => / (400|422) /.test(a))).toEqual([])
    expect(answers).toEqual(EXPECTED.map(([op, answer]) => `${op} ${answer}`))
  }, 60_000)

  test('every read with query defaults is accepted with them filled in, as Swagger UI fills them', async () => {
    const answers: string[] = []
    for (const [path, item] of Object.entries<any>(doc.paths)) {
      const defaults = (item.get?.parameters ?? []).filter((p: any) => p.in === 'query' && p.schema?.default !== undefined)
      if (!defaults.length) continue
      const url = path.replace(/\{(\w+)\}/g, (_, name) => encodeURIComponent(PARAMS[name])) + '?' + new URLSearchParams(defaults.map((p: any) => [p.name, String(p.schema.default)]))
      answers.push(`${url} ${(await call(s.api, 'GET', url, undefined, asAda)).status}`)
    }
    expect(answers.length).toBeGreaterThan(6)
    expect(answers.filter((a) => !a.endsWith(' 200'))).toEqual([])
  })

  test('a body an operation may leave out is sent empty and accepted', async () => {
    const optional = Object.entries<any>(doc.paths).flatMap(([path, item]) =>
      Object.entries<any>(item)
        .filter(([, op]) => op.requestBody && op.requestBody.required === false)
        .map(([method]) => `${method} ${path}`),
    )
    expect(optional.sort()).toEqual(['post /api/queues/{queue}/claim', 'put /api/locks/{name}'])
    expect((await call(s.api, 'PUT', '/api/locks/empty-body', undefined, asAda)).status).toBe(200)
    expect((await call(s.api, 'POST', '/api/queues/empty-body/claim', undefined, asAda)).status).toBe(204)
  })
})

// Pure contract logic: parsing, schema compilation, validation and its error
// pointers, the compiled-contract cache, and compliance planning.
import { describe, expect, test } from 'bun:test'
import {
  ContractCache,
  checkContract,
  compileContract,
  endpointUrl,
  parseEndpointKey,
  sampleQuery,
  type CompiledContract,
} from '../contracts/contract'
import { compliancePlan, workspaceProjects } from '../contracts/compliance'
import { AppError } from '../lib/errors'

const userSchema = {
  type: 'object',
  required: ['name', 'role', 'address'],
  additionalProperties: false,
  properties: {
    name: { type: 'string', minLength: 1 },
    role: { enum: ['admin', 'dev'] },
    email: { type: 'string', format: 'email' },
    address: {
      type: 'object',
      required: ['city'],
      properties: { city: { type: 'string' }, zip: { type: 'string', pattern: '^[0-9]{5}$' } },
    },
    tags: { type: 'array', items: { type: 'string' }, maxItems: 3 },
  },
}

const good = {
  kind: 'contract',
  version: '1.2.0',
  base_url: 'http://localhost:1234/api/',
  endpoints: {
    'POST /users': { request: userSchema, response: { $ref: '#/$defs/id', $defs: { id: { type: 'object', required: ['id'], properties: { id: { type: 'integer' } } } } }, response_status: 201 },
    'GET /users': {
      query: { type: 'object', properties: { limit: { type: 'integer', minimum: 1 }, tag: { type: 'array', items: { type: 'string' } } } },
      response: { type: 'array', items: userSchema },
    },
    'get /users/{id}': { response: userSchema },
  },
}

const compiled = (doc: unknown = good): CompiledContract => compileContract(doc)
const problemsOf = (doc: unknown) => checkContract(doc).problems

describe('parsing a contract', () => {
  test('a good contract compiles; endpoint keys are normalised', () => {
    const c = compiled()
    expect(c.contract.version).toBe('1.2.0')
    expect(c.contract.baseUrl).toBe('http://localhost:1234/api')
    expect([...c.contract.endpoints.keys()]).toEqual(['POST /users', 'GET /users', 'GET /users/{id}'])
    expect(c.endpoint('post   /users')?.key).toBe('POST /users')
    expect(c.endpoint('GET /nope')).toBeUndefined()
    expect(c.contract.endpoints.get('POST /users')!.responseStatus).toEqual([201])
  })

  test('endpoint keys', () => {
    expect(parseEndpointKey('patch /a/b')).toEqual({ method: 'PATCH', path: '/a/b', key: 'PATCH /a/b' })
    expect(parseEndpointKey('FETCH /a')).toBeNull()
    expect(parseEndpointKey('GET a')).toBeNull()
    expect(parseEndpointKey('GET /a?x=1')).toBeNull()
    expect(parseEndpointKey('/a')).toBeNull()
  })

  test('malformed documents: every problem, each with a pointer into the document', () => {
    expect(problemsOf([1])).toEqual([{ field: '', message: 'a contract must be a JSON object' }])
    expect(problemsOf({ kind: 'spec', endpoints: {} })).toEqual([
      { field: '/kind', message: 'kind must be "contract"' },
      { field: '/version', message: 'version is required (a non-empty string or a number)' },
    ])
    expect(problemsOf({ kind: 'contract', version: 1 })).toEqual([
      { field: '/endpoints', message: 'endpoints is required (an object keyed by "METHOD /path")' },
    ])
    const p = problemsOf({
      kind: 'contract',
      version: 1,
      base_url: 'ftp://x',
      extra: true,
      endpoints: {
        'FETCH /a': {},
        'GET /b': { respons: {} },
        'get /b': {},
        'GET /c': { response: 'string', response_status: 700 },
        'GET /d': 5,
      },
    })
    expect(p).toEqual([
      { field: '/extra', message: 'unknown field "extra"' },
      { field: '/base_url', message: 'base_url must be an absolute http or https URL' },
      { field: '/endpoints/FETCH ~1a', message: expect.stringContaining('must be "METHOD /path"') },
      { field: '/endpoints/GET ~1b/respons', message: 'unknown field "respons"' },
      { field: '/endpoints/get ~1b', message: 'endpoint "get /b" duplicates "GET /b"' },
      { field: '/endpoints/GET ~1c/response', message: 'response must be a JSON Schema (an object or a boolean)' },
      { field: '/endpoints/GET ~1c/response_status', message: expect.stringContaining('response_status must be') },
      { field: '/endpoints/GET ~1d', message: 'endpoint "GET /d" must be an object' },
    ])
  })

  test('schemas that do not compile are problems naming the place', () => {
    const doc = (schema: unknown) => ({ kind: 'contract', version: 1, endpoints: { 'GET /x': { response: schema } } })
    expect(problemsOf(doc({ type: 'strng' }))).toEqual([
      { field: '/endpoints/GET ~1x/response/type', message: 'schema is invalid: must be equal to one of the allowed values' },
    ])
    expect(problemsOf(doc({ properties: { a: { minimum: 'x' } } }))).toEqual([
      { field: '/endpoints/GET ~1x/response/properties/a/minimum', message: 'schema is invalid: must be number' },
    ])
    // a misspelt keyword would silently check nothing: refused
    expect(problemsOf(doc({ type: 'object', requierd: ['a'] }))[0].message).toContain('unknown keyword: "requierd"')
    expect(problemsOf(doc({ $ref: '#/$defs/missing' }))[0].message).toContain("can't resolve reference")
    expect(problemsOf(doc({ type: 'string', format: 'colour' }))[0].message).toContain('unknown format "colour"')
    // draft 2020-12 only
    expect(problemsOf(doc({ $schema: 'http://json-schema.org/draft-07/schema#' }))).toEqual([
      {
        field: '/endpoints/GET ~1x/response/$schema',
        message: '$schema "http://json-schema.org/draft-07/schema#" is not supported: contracts use JSON Schema draft 2020-12',
      },
    ])
    expect(problemsOf(doc({ $schema: 'https://json-schema.org/draft/2020-12/schema', type: 'string' }))).toEqual([])
    // annotations stay allowed
    expect(problemsOf(doc({ type: 'string', title: 't', description: 'd', examples: ['a'], example: 'a' }))).toEqual([])
  })

  test('compileContract throws a 400 naming the first problem with all of them attached', () => {
    try {
      compileContract({ kind: 'contract', version: 1, endpoints: { 'GET /x': { response: { type: 'strng' } } }, more: 1 })
      throw new Error('no throw')
    } catch (err) {
      expect(err).toBeInstanceOf(AppError)
      const e = err as AppError
      expect(e.kind).toBe('invalid')
      expect(e.message).toBe('invalid contract: /more: unknown field "more"')
      expect(e.extra.violations).toEqual([{ field: '/more', message: 'unknown field "more"' }])
    }
  })

  test('sections share schemas by $id: refs in any order, repeats only when identical', () => {
    const userDef = { $id: 'https://example.com/user', type: 'object', required: ['name'] }
    const c = compiled({
      kind: 'contract',
      version: 1,
      endpoints: {
        'GET /users': { response: { type: 'array', items: { $ref: 'https://example.com/user' } } }, // defined further down
        'POST /users': { request: userDef, response: userDef },
      },
    })
    expect(c.validate(c.endpoint('GET /users')!, 'response', [{}])).toEqual([{ field: '/0/name', message: 'is required' }])
    expect(c.validate(c.endpoint('POST /users')!, 'response', {})).toEqual([{ field: '/name', message: 'is required' }])
    expect(
      problemsOf({ kind: 'contract', version: 1, endpoints: { 'POST /a': { request: userDef, response: { ...userDef, required: [] } } } }),
    ).toEqual([{ field: '/endpoints/POST ~1a/response/$id', message: '$id "https://example.com/user" is already used by a different schema in this contract' }])
  })

  test('schemas with the same $id in two contracts do not collide', () => {
    const withId = { kind: 'contract', version: 1, endpoints: { 'GET /x': { response: { $id: 'https://example.com/user', type: 'string' } } } }
    expect(problemsOf(withId)).toEqual([])
    expect(problemsOf(withId)).toEqual([])
  })
})

describe('validating payloads', () => {
  const c = compiled()
  const post = c.endpoint('POST /users')!
  const list = c.endpoint('GET /users')!
  const ok = { name: 'ana', role: 'dev', address: { city: 'Oslo', zip: '01234' }, tags: ['a'] }

  test('request: a conforming nested object has no violations', () => {
    expect(c.validate(post, 'request', ok)).toEqual([])
  })

  test('request: required (nested too), type, enum, pattern, format, additional, array items', () => {
    const v = c.validate(post, 'request', {
      role: 'boss',
      email: 'not-an-email',
      address: { zip: 'abc' },
      tags: ['a', 3, 'c', 'd'],
      admin: true,
    })
    expect(v).toEqual(
      expect.arrayContaining([
        { field: '/name', message: 'is required' },
        { field: '/admin', message: 'is not allowed by the schema' },
        { field: '/role', message: 'must be one of "admin", "dev"' },
        { field: '/email', message: 'must match format "email"' },
        { field: '/address/city', message: 'is required' },
        { field: '/address/zip', message: 'must match pattern "^[0-9]{5}$"' },
        { field: '/tags', message: 'must NOT have more than 3 items' },
        { field: '/tags/1', message: 'must be string' },
      ]),
    )
    expect(v).toHaveLength(8)
    expect(c.validate(post, 'request', 'text')).toEqual([{ field: '', message: 'must be object' }])
  })

  test('response: arrays of nested objects point at the element; $ref into $defs works', () => {
    expect(c.validate(list, 'response', [ok, { ...ok, address: { city: 5 } }])).toEqual([
      { field: '/1/address/city', message: 'must be string' },
    ])
    expect(c.validate(post, 'response', { id: 7 })).toEqual([])
    expect(c.validate(post, 'response', { id: 'x' })).toEqual([{ field: '/id', message: 'must be integer' }])
  })

  test('query: string values are coerced to the schema type; a bad one is reported', () => {
    const q = { limit: '5', tag: 'x' }
    expect(c.validate(list, 'query', q)).toEqual([])
    expect(q).toEqual({ limit: '5', tag: 'x' }) // the caller's payload is untouched
    expect(c.validate(list, 'query', { limit: 'many' })).toEqual([{ field: '/limit', message: 'must be integer' }])
    expect(c.validate(list, 'query', { limit: '0' })).toEqual([{ field: '/limit', message: 'must be >= 1' }])
  })

  test('a direction without a schema accepts anything', () => {
    expect(c.validate(list, 'request', { anything: 1 })).toEqual([])
  })

  test('pointer escaping of property names with / and ~', () => {
    const k = compiled({ kind: 'contract', version: 1, endpoints: { 'POST /x': { request: { type: 'object', required: ['a/b', 'c~d'] } } } })
    expect(k.validate(k.endpoint('POST /x')!, 'request', {})).toEqual([
      { field: '/a~1b', message: 'is required' },
      { field: '/c~0d', message: 'is required' },
    ])
  })
})

describe('cache', () => {
  test('compiles once per (project, name, hash); a new hash replaces the entry; forget drops it', () => {
    const cache = new ContractCache(2)
    let loads = 0
    const load = () => (loads++, good)
    const a = cache.get('p', 'c', 'h1', load)
    expect(cache.get('p', 'c', 'h1', load)).toBe(a)
    expect(loads).toBe(1)
    const b = cache.get('p', 'c', 'h2', load)
    expect(b).not.toBe(a)
    expect(loads).toBe(2)
    cache.get('p', 'd', 'h1', load)
    expect(loads).toBe(3)
    expect(cache.get('p', 'c', 'h2', load)).toBe(b) // still there, capacity 2
    cache.get('q', 'e', 'h1', load) // evicts the least recently used: p/d
    cache.get('p', 'd', 'h1', load)
    expect(loads).toBe(5)
    cache.forget('p', 'd')
    cache.get('p', 'd', 'h1', load)
    expect(loads).toBe(6)
  })

  test('problems are cached too', () => {
    const cache = new ContractCache()
    const entry = cache.get('p', 'bad', 'h', () => ({ kind: 'contract' }))
    expect(entry.compiled).toBeNull()
    expect(entry.problems.length).toBeGreaterThan(0)
    expect(cache.compilations).toBe(1)
    cache.get('p', 'bad', 'h', () => ({ kind: 'contract' }))
    expect(cache.compilations).toBe(1)
  })
})

describe('requests and compliance planning', () => {
  test('endpointUrl fills placeholders and builds the query string', () => {
    expect(endpointUrl('http://h/api', '/users/{id}', { id: 'a b/c' }, { limit: 5, tag: ['x', 'y'], f: { a: 1 } })).toBe(
      'http://h/api/users/a%20b%2Fc?limit=5&tag=x&tag=y&f=%7B%22a%22%3A1%7D',
    )
  })

  test('sampleQuery takes default, const, examples, enum of required parameters only', () => {
    expect(sampleQuery(undefined)).toEqual({})
    expect(
      sampleQuery({
        type: 'object',
        required: ['a', 'b', 'c', 'd'],
        properties: { a: { default: 1 }, b: { const: 'x' }, c: { examples: ['e'] }, d: { enum: ['z', 'y'] }, e: { default: 9 } },
      }),
    ).toEqual({ a: 1, b: 'x', c: 'e', d: 'z' })
    expect(sampleQuery({ required: ['a'], properties: { a: { type: 'string' } } })).toBeNull()
  })

  test('compliance calls GET/HEAD endpoints without placeholders whose required query can be sampled', () => {
    const c = compiled({
      kind: 'contract',
      version: 1,
      endpoints: {
        'GET /a': {},
        'HEAD /b': {},
        'POST /c': {},
        'GET /d/{id}': {},
        'GET /e': { query: { type: 'object', required: ['q'], properties: { q: { type: 'string' } } } },
        'GET /f': { query: { type: 'object', required: ['q'], properties: { q: { type: 'string', default: 'x' } } } },
      },
    })
    expect(compliancePlan(c).map((p) => [p.endpoint.key, p.query])).toEqual([
      ['GET /a', {}],
      ['HEAD /b', {}],
      ['GET /f', { q: 'x' }],
    ])
  })

  test('workspaceProjects: the workspace itself and its last path segment', () => {
    expect(workspaceProjects('shop')).toEqual(['shop'])
    expect(workspaceProjects('/home/ana/shop/')).toEqual(['/home/ana/shop/', 'shop'])
    expect(workspaceProjects('C:\\src\\shop')).toEqual(['C:\\src\\shop', 'shop'])
    expect(workspaceProjects('  ')).toEqual([])
  })
})

// API contracts: parsing a contract document, compiling its JSON Schemas
// (draft 2020-12, ajv) and validating payloads against them. Pure: no I/O.
//
// A contract is {kind: "contract", version, base_url?, title?, description?,
// endpoints: {"METHOD /path": {query?, request?, response?, response_status?, description?}}}.
import type Ajv2020 from 'ajv/dist/2020'
import type { ErrorObject, ValidateFunction } from 'ajv/dist/2020'
import { httpUrl, isObject } from '../lib/values'
import { Lru } from '../lib/lru'
import { invalid } from '../lib/errors'

// ajv (some 90 modules) is required when the first schema is compiled, not when the server starts.
const ajvClass = (): typeof Ajv2020 => (require('ajv/dist/2020') as typeof import('ajv/dist/2020')).default
const addFormats = (ajv: Ajv2020) => (require('ajv-formats') as typeof import('ajv-formats')).default(ajv)

export interface Violation {
  /** JSON pointer into the validated payload ("" is the whole payload). */
  field: string
  message: string
}

export type Direction = 'request' | 'response' | 'query'
export const DIRECTIONS = ['request', 'response', 'query'] as const satisfies readonly Direction[]
export const METHODS = ['GET', 'HEAD', 'POST', 'PUT', 'PATCH', 'DELETE', 'OPTIONS'] as const
/** Methods whose test_data is a JSON request body; the others send it as query parameters. */
export const BODY_METHODS = new Set(['POST', 'PUT', 'PATCH'])

export type Schema = Record<string, unknown> | boolean

export interface Endpoint {
  key: string // normalised "METHOD /path"
  method: string
  path: string
  schemas: Partial<Record<Direction, Schema>>
  /** Accepted response statuses; null means any 2xx. */
  responseStatus: number[] | null
}

export interface Contract {
  version: string | number
  baseUrl: string | null
  endpoints: Map<string, Endpoint>
}

export interface CompiledContract {
  contract: Contract
  /** The endpoint for a key in any spacing or method case, or undefined. */
  endpoint(key: string): Endpoint | undefined
  /** Violations of `payload` against the endpoint's schema for `direction`; [] when it has none. */
  validate(endpoint: Endpoint, direction: Direction, payload: unknown): Violation[]
}

// ---- pointers -----------------------------------------------------------------

export const escapePointer = (segment: string) => segment.replace(/~/g, '~0').replace(/\//g, '~1')
const pointer = (...segments: string[]) => segments.map((s) => `/${escapePointer(s)}`).join('')

// ---- parsing ------------------------------------------------------------------

const TOP_KEYS = new Set(['kind', 'version', 'base_url', 'endpoints', 'title', 'description'])
const ENDPOINT_KEYS = new Set(['query', 'request', 'response', 'response_status', 'description'])


/** True when a stored spec is meant as a contract (kind "contract"), valid or not. */
export function isContractDoc(doc: unknown): boolean {
  return isObject(doc) && doc.kind === 'contract'
}

/** Splits "get  /users/{id}" into {method: "GET", path: "/users/{id}"}; null when malformed. */
export function parseEndpointKey(key: string): { method: string; path: string; key: string } | null {
  const m = /^\s*([A-Za-z]+)\s+(\/\S*)\s*$/.exec(key)
  if (!m) return null
  const method = m[1].toUpperCase()
  if (!(METHODS as readonly string[]).includes(method) || /[?#]/.test(m[2])) return null
  return { method, path: m[2], key: `${method} ${m[2]}` }
}

function parseStatus(value: unknown): number[] | null {
  const list = Array.isArray(value) ? value : [value]
  if (list.length === 0 || !list.every((s) => Number.isInteger(s) && (s as number) >= 100 && (s as number) <= 599)) return null
  return [...new Set(list as number[])]
}

/** Checks a contract document's shape; returns the contract and every problem found (field points into the document). */
export function parseContract(doc: unknown): { contract: Contract | null; problems: Violation[] } {
  const problems: Violation[] = []
  const problem = (field: string, message: string) => problems.push({ field, message })
  if (!isObject(doc)) return { contract: null, problems: [{ field: '', message: 'a contract must be a JSON object' }] }
  for (const key of Object.keys(doc)) if (!TOP_KEYS.has(key)) problem(pointer(key), `unknown field "${key}"`)
  if (doc.kind !== 'contract') problem('/kind', 'kind must be "contract"')
  const version = doc.version
  if (!((typeof version === 'string' && version.trim() !== '') || (typeof version === 'number' && Number.isFinite(version))))
    problem('/version', 'version is required (a non-empty string or a number)')
  let baseUrl: string | null = null
  if (doc.base_url !== undefined) {
    baseUrl = checkBaseUrl(doc.base_url)
    if (!baseUrl) problem('/base_url', 'base_url must be an absolute http or https URL')
  }
  const endpoints = new Map<string, Endpoint>()
  if (!isObject(doc.endpoints)) problem('/endpoints', 'endpoints is required (an object keyed by "METHOD /path")')
  else {
    for (const [rawKey, spec] of Object.entries(doc.endpoints)) {
      const at = pointer('endpoints', rawKey)
      const parsed = parseEndpointKey(rawKey)
      if (!parsed) {
        problem(at, `endpoint "${rawKey}" must be "METHOD /path" with METHOD one of ${METHODS.join(', ')} and a path without ? or #`)
        continue
      }
      if (endpoints.has(parsed.key)) {
        problem(at, `endpoint "${rawKey}" duplicates "${parsed.key}"`)
        continue
      }
      if (!isObject(spec)) {
        problem(at, `endpoint "${rawKey}" must be an object`)
        continue
      }
      const endpoint: Endpoint = { ...parsed, schemas: {}, responseStatus: null }
      for (const key of Object.keys(spec)) if (!ENDPOINT_KEYS.has(key)) problem(`${at}${pointer(key)}`, `unknown field "${key}"`)
      for (const direction of DIRECTIONS) {
        const schema = spec[direction]
        if (schema === undefined) continue
        if (!isObject(schema) && typeof schema !== 'boolean') problem(`${at}/${direction}`, `${direction} must be a JSON Schema (an object or a boolean)`)
        else endpoint.schemas[direction] = schema
      }
      if (spec.response_status !== undefined) {
        endpoint.responseStatus = parseStatus(spec.response_status)
        if (!endpoint.responseStatus)
          problem(`${at}/response_status`, 'response_status must be an HTTP status code (100-599) or a non-empty array of them')
      }
      endpoints.set(parsed.key, endpoint)
    }
  }
  if (problems.length) return { contract: null, problems }
  return { contract: { version: version as string | number, baseUrl, endpoints }, problems }
}

/** The base URL without a trailing slash, or null when it is not an absolute http(s) URL. */
export function checkBaseUrl(value: unknown): string | null {
  const url = httpUrl(value)
  if (!url || url.search || url.hash) return null
  return (value as string).replace(/\/+$/, '')
}

// ---- compiling ----------------------------------------------------------------

// One shared instance checks schemas against the 2020-12 meta-schema (its compiled
// meta-validator is the costly part). Each contract then compiles into
// instances of its own, so `$id`s of different contracts never collide and a
// contract's validators are freed with it. Made on first use, so a server start
// does not pay for it.
let metaChecker: Ajv2020 | null = null
const metaCheckerOf = () => (metaChecker ??= new (ajvClass())({ allErrors: true, logger: false }))

function newAjv(coerce: boolean) {
  const ajv = new (ajvClass())({
    allErrors: true,
    validateSchema: false, // done by metaChecker
    strict: true, // unknown keywords and formats are errors: a typo must not silently disable a check
    strictTypes: false,
    strictTuples: false,
    strictRequired: false, // `required` may name properties the schema does not describe
    logger: false,
    // Query values arrive as strings: "5" satisfies {type: "integer"}, one value satisfies an array.
    coerceTypes: coerce ? 'array' : false,
  })
  addFormats(ajv)
  ajv.addVocabulary(['example']) // the OpenAPI annotation people copy into schemas
  return ajv
}

/** Meta-schema problems of one schema ([] when it is a valid 2020-12 schema); `at` points at it in the contract. */
function metaProblems(schema: Schema, at: string): Violation[] {
  let valid: boolean
  try {
    valid = metaCheckerOf().validateSchema(schema) as boolean
  } catch (err) {
    // a $schema the validator has no meta-schema for
    const named = typeof schema === 'object' && typeof schema.$schema === 'string'
    return [
      named
        ? { field: `${at}/$schema`, message: `$schema "${schema.$schema}" is not supported: contracts use JSON Schema draft 2020-12` }
        : { field: at, message: `schema is invalid: ${(err as Error).message}` },
    ]
  }
  if (valid) return []
  const seen = new Set<string>()
  const out: Violation[] = []
  for (const e of metaCheckerOf().errors ?? []) {
    if (seen.has(e.instancePath)) continue // the first error per place is the telling one (anyOf repeats it)
    seen.add(e.instancePath)
    out.push({ field: at + e.instancePath, message: `schema is invalid: ${e.message}` })
  }
  return out
}

/**
 * Compiles every schema of a parsed contract; problems point into the contract document.
 * Sections with an `$id` are registered first, so any section may `$ref` another by its
 * `$id` (query sections among themselves: they compile with type coercion); the same
 * `$id` may repeat only with the same schema.
 */
function compile(contract: Contract): { validators: Map<string, ValidateFunction>; problems: Violation[] } {
  const validators = new Map<string, ValidateFunction>()
  const problems: Violation[] = []
  const ajvs = { plain: null as Ajv2020 | null, coercing: null as Ajv2020 | null }
  const ajvFor = (direction: Direction) =>
    direction === 'query' ? (ajvs.coercing ??= newAjv(true)) : (ajvs.plain ??= newAjv(false))
  const sections: { key: string; at: string; schema: Schema; ajv: Ajv2020; id?: string }[] = []
  for (const endpoint of contract.endpoints.values()) {
    for (const direction of DIRECTIONS) {
      const schema = endpoint.schemas[direction]
      if (schema === undefined) continue
      const at = `${pointer('endpoints', endpoint.key)}/${direction}`
      const found = metaProblems(schema, at)
      if (found.length) {
        problems.push(...found)
        continue
      }
      const id = typeof schema === 'object' && typeof schema.$id === 'string' ? schema.$id : undefined
      sections.push({ key: `${endpoint.key} ${direction}`, at, schema, ajv: ajvFor(direction), id })
    }
  }
  const registered = new Map<string, string>() // `$id` → the schema's JSON, per instance kind
  for (const section of sections) {
    if (!section.id) continue
    const tag = `${section.ajv === ajvs.plain ? 'p' : 'q'} ${section.id}`
    const json = JSON.stringify(section.schema)
    const earlier = registered.get(tag)
    if (earlier === undefined) {
      try {
        section.ajv.addSchema(section.schema as object)
        registered.set(tag, json)
      } catch (err) {
        problems.push({ field: section.at, message: `schema does not compile: ${(err as Error).message}` })
      }
    } else if (earlier !== json) {
      problems.push({ field: `${section.at}/$id`, message: `$id "${section.id}" is already used by a different schema in this contract` })
    }
  }
  for (const section of sections) {
    try {
      const validate = section.id ? section.ajv.getSchema(section.id) : section.ajv.compile(section.schema)
      if (validate) validators.set(section.key, validate)
    } catch (err) {
      problems.push({ field: section.at, message: `schema does not compile: ${(err as Error).message}` })
    }
  }
  return { validators, problems }
}

/** Human wording of one ajv error, pointing at the offending value (a missing property is named itself). */
export function toViolation(e: ErrorObject): Violation {
  const p = e.params as Record<string, any>
  switch (e.keyword) {
    case 'required':
      return { field: `${e.instancePath}/${escapePointer(p.missingProperty)}`, message: 'is required' }
    case 'additionalProperties':
    case 'unevaluatedProperties':
      return {
        field: `${e.instancePath}/${escapePointer(p.additionalProperty ?? p.unevaluatedProperty)}`,
        message: 'is not allowed by the schema',
      }
    case 'enum':
      return { field: e.instancePath, message: `must be one of ${(p.allowedValues as unknown[]).map((v) => JSON.stringify(v)).join(', ')}` }
    case 'const':
      return { field: e.instancePath, message: `must be ${JSON.stringify(p.allowedValue)}` }
    default:
      return { field: e.instancePath, message: e.message ?? `fails ${e.keyword}` }
  }
}

function violationsOf(validate: ValidateFunction, payload: unknown): Violation[] {
  if (validate(payload)) return []
  const seen = new Set<string>()
  const out: Violation[] = []
  for (const e of validate.errors ?? []) {
    const v = toViolation(e)
    const id = `${v.field}\0${v.message}`
    if (!seen.has(id)) seen.add(id), out.push(v)
  }
  return out
}

/** Parses and compiles a contract document: the compiled contract, or every problem found. */
export function checkContract(doc: unknown): { compiled: CompiledContract | null; problems: Violation[] } {
  const parsed = parseContract(doc)
  if (!parsed.contract) return { compiled: null, problems: parsed.problems }
  const contract = parsed.contract
  const { validators, problems } = compile(contract)
  if (problems.length) return { compiled: null, problems }
  return {
    problems: [],
    compiled: {
      contract,
      endpoint(key) {
        const parsed = parseEndpointKey(key)
        return parsed ? contract.endpoints.get(parsed.key) : undefined
      },
      validate(endpoint, direction, payload) {
        const validate = validators.get(`${endpoint.key} ${direction}`)
        // Coercion rewrites the data in place; validate a copy so callers keep what they sent.
        const data = direction === 'query' ? structuredClone(payload) : payload
        return validate ? violationsOf(validate, data) : []
      },
    },
  }
}

/** A one-line summary of contract problems, for an error message. */
export function describeProblems(problems: Violation[]): string {
  const first = problems[0]
  const where = first.field ? `${first.field}: ` : ''
  const more = problems.length > 1 ? ` (and ${problems.length - 1} more)` : ''
  return `invalid contract: ${where}${first.message}${more}`
}

/** Compiles or throws a 400 naming the problem, with every problem under `violations`. */
export function compileContract(doc: unknown): CompiledContract {
  const { compiled, problems } = checkContract(doc)
  if (!compiled) throw invalid(describeProblems(problems), { violations: problems })
  return compiled
}

// ---- cache ----------------------------------------------------------------------

export type CacheEntry = { compiled: CompiledContract | null; problems: Violation[] }

/**
 * Compiled contracts by (project, name), keyed on the stored content hash: a new
 * version replaces the old entry, so at most one compiled version per contract is
 * kept, and the least recently used contracts go first beyond `capacity`.
 */
export class ContractCache {
  private entries: Lru<string, { hash: string; entry: CacheEntry }>
  compilations = 0

  constructor(capacity = 1000) {
    this.entries = new Lru(capacity)
  }

  get(project: string, name: string, hash: string, load: () => unknown): CacheEntry {
    const hit = this.entries.get(`${project}\0${name}`)
    if (hit && hit.hash === hash) return hit.entry
    this.compilations++
    const entry = checkContract(load())
    this.set(project, name, hash, entry)
    return entry
  }

  /** Stores an entry compiled elsewhere (a write compiles before storing; no need to do it twice). */
  set(project: string, name: string, hash: string, entry: CacheEntry): void {
    this.entries.set(`${project}\0${name}`, { hash, entry })
  }

  forget(project: string, name: string): void {
    this.entries.delete(`${project}\0${name}`)
  }
}

// ---- requests -------------------------------------------------------------------

/** Names of the `{param}` placeholders in a path. */
export const pathParams = (path: string) => [...path.matchAll(/\{([^{}]+)\}/g)].map((m) => m[1])

/**
 * Query parameters that satisfy the required ones of a query schema, taken from
 * each property's `default`, `const`, first `examples` entry or first `enum` value.
 * null when a required parameter has none of these (the endpoint cannot be called blind).
 */
export function sampleQuery(schema: Schema | undefined): Record<string, unknown> | null {
  if (schema === undefined || typeof schema === 'boolean') return schema === false ? null : {}
  const required = Array.isArray(schema.required) ? (schema.required as string[]) : []
  const props = isObject(schema.properties) ? schema.properties : {}
  const out: Record<string, unknown> = {}
  for (const name of required) {
    const prop = props[name]
    if (!isObject(prop)) return null
    const sample =
      'default' in prop ? prop.default
      : 'const' in prop ? prop.const
      : Array.isArray(prop.examples) && prop.examples.length ? prop.examples[0]
      : Array.isArray(prop.enum) && prop.enum.length ? prop.enum[0]
      : undefined
    if (sample === undefined) return null
    out[name] = sample
  }
  return out
}

/** The URL for an endpoint: base + path with placeholders filled (URL-encoded) + query string. */
export function endpointUrl(baseUrl: string, path: string, params: Record<string, unknown>, query: Record<string, unknown>): string {
  const filled = path.replace(/\{([^{}]+)\}/g, (_, name: string) => encodeURIComponent(String(params[name])))
  const qs = new URLSearchParams()
  for (const [k, v] of Object.entries(query)) {
    for (const item of Array.isArray(v) ? v : [v]) {
      if (item === undefined) continue
      qs.append(k, typeof item === 'object' && item !== null ? JSON.stringify(item) : String(item))
    }
  }
  const q = qs.toString()
  return `${baseUrl}${filled}${q ? `?${q}` : ''}`
}

/** True when a status is accepted: the listed ones, or any 2xx when none are listed. */
export const statusAccepted = (endpoint: Endpoint, status: number) =>
  endpoint.responseStatus ? endpoint.responseStatus.includes(status) : status >= 200 && status < 300

/** The process-wide cache of compiled contracts (content-addressed, so a restore cannot make it stale). */
export const contractCache = new ContractCache()

/** The compiled contract (or its problems) for a stored spec's bytes. */
export function compiledFromDoc(project: string, name: string, doc: { hash: string; value: Uint8Array }): CacheEntry {
  return contractCache.get(project, name, doc.hash, () => decodeJson(doc.value))
}

/** The JSON in stored bytes, or undefined when they are not JSON. */
export function decodeJson(bytes: Uint8Array): unknown {
  try {
    return JSON.parse(new TextDecoder().decode(bytes))
  } catch {
    return undefined
  }
}

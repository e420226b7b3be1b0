// Live contract checks: one real HTTP call to an endpoint, its status and response
// body checked against the contract. Transport failures (refused, DNS, timeout)
// become a failing result, never an exception.
import { invalid } from '../lib/errors'
import { StreamTooLarge, readUpTo } from '../lib/stream'
import { isObject } from '../lib/values'
import {
  BODY_METHODS,
  endpointUrl,
  pathParams,
  statusAccepted,
  type CompiledContract,
  type Endpoint,
  type Violation,
} from './contract'

export const DEFAULT_TIMEOUT_MS = 5000
/** Response bodies beyond this are not read (nor validated). */
export const MAX_RESPONSE = 10 * 1024 * 1024

export interface LiveRequest {
  params: Record<string, unknown>
  query: Record<string, unknown>
  body?: unknown
}

export interface LiveResult {
  endpoint: string
  url: string
  pass: boolean
  /** null when no response came back. */
  status: number | null
  duration_ms: number
  /** Why no response came back. */
  error?: string
  violations: Violation[]
}


/**
 * Turns a `test` call's test_data into a request: for POST, PUT and PATCH it is
 * the JSON body; for the other methods its properties are query parameters.
 * Path placeholders `{name}` take the property of the same name (removed from the
 * query). Also returns how test_data itself fares against the request/query schema.
 */
export function requestFromTestData(
  compiled: CompiledContract,
  endpoint: Endpoint,
  testData: unknown,
): { request: LiveRequest; requestViolations: Violation[] } {
  const names = pathParams(endpoint.path)
  const params: Record<string, unknown> = {}
  for (const name of names) {
    const value = isObject(testData) ? testData[name] : undefined
    if (!['string', 'number', 'boolean'].includes(typeof value) || value === '')
      throw invalid(`test_data.${name} is required to fill {${name}} in ${endpoint.key}`)
    params[name] = value
  }
  if (BODY_METHODS.has(endpoint.method)) {
    const requestViolations =
      testData === undefined
        ? endpoint.schemas.request !== undefined
          ? [{ field: '', message: 'request body is missing (give it as test_data)' }]
          : []
        : compiled.validate(endpoint, 'request', testData)
    return { request: { params, query: {}, body: testData }, requestViolations }
  }
  if (testData !== undefined && !isObject(testData))
    throw invalid(`test_data must be an object of query parameters for ${endpoint.method} endpoints`)
  const query = Object.fromEntries(Object.entries(testData ?? {}).filter(([k]) => !names.includes(k)))
  return { request: { params, query }, requestViolations: compiled.validate(endpoint, 'query', query) }
}

function transportError(err: unknown, timeoutMs: number): string {
  const e = err as { name?: string; code?: string; message?: string }
  if (e?.name === 'TimeoutError') return `timed out after ${timeoutMs} ms`
  if (e?.name === 'AbortError') return 'cancelled'
  if (e?.code === 'ECONNREFUSED' || e?.code === 'ConnectionRefused') return 'connection refused'
  if (e?.code === 'ENOTFOUND') return 'host not found'
  return e?.message || String(err)
}

/** Reads at most `limit` bytes of a body; null when it is longer. */
async function readLimited(res: Response, limit: number): Promise<string | null> {
  try {
    return new TextDecoder().decode(await readUpTo(res.body, limit))
  } catch (err) {
    if (err instanceof StreamTooLarge) return null
    throw err
  }
}

const describeStatuses = (endpoint: Endpoint) => (endpoint.responseStatus ? endpoint.responseStatus.join(' or ') : '2xx')

/** Calls the endpoint once and checks the answer; never throws for network trouble. */
export async function callEndpoint(
  compiled: CompiledContract,
  endpoint: Endpoint,
  baseUrl: string,
  request: LiveRequest,
  timeoutMs = DEFAULT_TIMEOUT_MS,
  /** Aborts the call early (server shutdown). */
  cancel?: AbortSignal,
): Promise<LiveResult> {
  const url = endpointUrl(baseUrl, endpoint.path, request.params, request.query)
  const started = performance.now()
  const result = (status: number | null, violations: Violation[], error?: string): LiveResult => ({
    endpoint: endpoint.key,
    url,
    pass: violations.length === 0,
    status,
    duration_ms: Math.round(performance.now() - started),
    ...(error ? { error } : {}),
    violations,
  })
  const timeout = AbortSignal.timeout(timeoutMs)
  const signal = cancel ? AbortSignal.any([timeout, cancel]) : timeout
  const hasBody = request.body !== undefined && BODY_METHODS.has(endpoint.method)
  let res: Response
  let text: string | null
  try {
    res = await fetch(url, {
      method: endpoint.method,
      headers: { accept: 'application/json', ...(hasBody ? { 'content-type': 'application/json' } : {}) },
      body: hasBody ? JSON.stringify(request.body) : undefined,
      signal,
    })
    text = endpoint.method === 'HEAD' ? '' : await readLimited(res, MAX_RESPONSE)
  } catch (err) {
    const error = transportError(timeout.aborted ? timeout.reason : err, timeoutMs)
    return result(null, [{ field: '', message: `request failed: ${error}` }], error)
  }
  if (!statusAccepted(endpoint, res.status))
    return result(res.status, [{ field: '', message: `status ${res.status}, expected ${describeStatuses(endpoint)}` }])
  if (endpoint.schemas.response === undefined || endpoint.method === 'HEAD') return result(res.status, [])
  if (text === null) return result(res.status, [{ field: '', message: `response body exceeds ${MAX_RESPONSE / 1024 / 1024} MB` }])
  if (text.trim() === '') return result(res.status, [{ field: '', message: 'response body is empty' }])
  let body: unknown
  try {
    body = JSON.parse(text)
  } catch {
    return result(res.status, [{ field: '', message: 'response body is not JSON' }])
  }
  return result(res.status, compiled.validate(endpoint, 'response', body))
}

// Error answers: every non-2xx is {error, code}; the status of each error kind.
import { urlOf } from './url'
import { log } from '../obs/log'
import { NOT_JSON, clientAbortOf } from './body'
import { AppError, type ErrorKind } from '../lib/errors'

export const STATUS: Record<ErrorKind, number> = {
  invalid: 400,
  unauthorized: 401,
  forbidden: 403,
  not_found: 404,
  method: 405,
  conflict: 409,
  precondition: 412,
  too_large: 413,
  unsupported: 415,
  unavailable: 503,
}

/** Seconds a client waits before retrying while the database is unreachable (the pool reconnects by itself). */
const RETRY_AFTER_SECONDS = '1'

/** The error kind an HTTP status stands for (STATUS read backwards), e.g. to re-raise an in-process call's error. */
export const kindOfStatus = (status: number): ErrorKind | undefined =>
  (Object.keys(STATUS) as ErrorKind[]).find((kind) => STATUS[kind] === status)

/** The Content-Type of every error answer, whichever path gave it (Elysia's onError sets the same). */
const ERROR_HEADERS = { 'content-type': 'application/json' }

/** The message of a 401 and of a 405, wherever they are answered (the dashboard rebuilds the API's). */
export const UNAUTHORIZED = 'invalid or missing bearer token'
export const methodNotAllowed = (method: string) => `method ${method} not allowed`

/** The answer to a request no route serves: 404, or 405 with Allow when other methods are served at its path. */
export interface NotServed {
  status: 404 | 405
  message: string
  allow?: string
}

export const NOT_FOUND: NotServed = { status: 404, message: 'not found' }

export function errorResponse(status: number, message: string, extra: Record<string, unknown> = {}): Response {
  return new Response(JSON.stringify({ error: message, code: status, ...extra }), { status, headers: ERROR_HEADERS })
}


/** Human message for a TypeBox validation failure: "topic is required", "invalid limit: ...". */
function validationMessage(error: any): string {
  const first = error?.valueError ?? error?.all?.[0]
  // No body at all where an object with required fields is expected: name the first one, as `{}` would.
  if (error?.type === 'body' && (error.value === undefined || error.value === '')) {
    const schema = error.validator?.schema ?? error.validator
    const required = schema?.required?.[0] ?? schema?.allOf?.find((s: any) => s.required)?.required?.[0]
    if (typeof required === 'string') return `${required} is required`
  }
  if (!first) return 'invalid request'
  const name = String(first.path ?? '').replace(/^\//, '').replace(/\//g, '.')
  const where = error?.type === 'body' ? 'request body' : `${error?.type ?? 'request'}`
  if (!name) return `invalid ${where}: ${first.message}`
  if (first.value === undefined) return `${name} is required`
  return `invalid ${name}: ${first.message}`
}

/** The AppError behind an error, if any (a body stream cut off for size surfaces wrapped in a parse error). */
const appErrorOf = (error: unknown): AppError | null =>
  error instanceof AppError ? error : (error as any)?.cause instanceof AppError ? (error as any).cause : null

/** The status a handler's error answers with (a route that exists, so never 404/405 by routing). */
export function statusOfError(code: string | number, error: unknown): number {
  const appError = appErrorOf(error)
  if (appError) return STATUS[appError.kind]
  if (code === 'PARSE' || code === 'VALIDATION') return 400
  const status = (error as any)?.status
  return typeof status === 'number' && status < 500 ? status : 500
}

/** The {error, code} answer for anything a handler threw (the API app's onError). */
export function errorAnswer(
  code: string | number,
  error: unknown,
  set: { status?: number | string; headers: Record<string, string | number> },
  request: Request,
  notServed: (method: string, path: string) => NotServed = () => NOT_FOUND,
) {
  // However the framework wrapped it (a parse error, a failed read), a body cut off by its connection is the client's doing.
  const abort = clientAbortOf(error, request)
  if (abort) error = abort
  let status = statusOfError(code, error)
  let message = 'internal server error'
  let extra: Record<string, unknown> = {}
  const appError = appErrorOf(error)
  if (abort) {
    message = abort.message
    log.warn({ method: request.method, url: request.url }, 'client abort: the connection closed before the request body ended')
  } else if (appError) {
    message = appError.message
    extra = appError.extra
    if (appError.kind === 'unavailable') {
      set.headers['retry-after'] = RETRY_AFTER_SECONDS
      // An outage fails every request: one line each, naming the database's error, no stack.
      log.warn({ method: request.method, url: request.url }, message)
    }
  } else if (code === 'NOT_FOUND') {
    const answer = notServed(request.method, urlOf(request).pathname)
    status = answer.status
    message = answer.message
    if (answer.allow) set.headers['allow'] = answer.allow
  } else if (code === 'PARSE') {
    message = `${NOT_JSON}: not valid JSON`
  } else if (code === 'VALIDATION') {
    message = validationMessage(error)
  } else if (status < 500) {
    message = (error as any).message || message
  } else {
    log.error({ err: error, method: request.method, url: request.url }, 'internal error')
  }
  set.status = status
  set.headers['content-type'] = ERROR_HEADERS['content-type']
  return { error: message, code: status, ...extra }
}

/** The {error, code} Response for what a handler outside the framework threw, as the API app's onError answers it. */
export function thrownResponse(error: unknown, request: Request): Response {
  const set = { status: 500 as number | string, headers: {} as Record<string, string | number> }
  const body = errorAnswer('UNKNOWN', error, set, request)
  return new Response(JSON.stringify(body), { status: Number(set.status), headers: set.headers as Record<string, string> })
}

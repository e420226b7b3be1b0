// A fast route's JSON body (http/api.ts FastRoute), read and checked exactly as its full
// route's Elysia pipeline reads it, so both ways in answer every body alike.
import { getSchemaValidator, ValidationError, type TSchema } from 'elysia'
import { Value } from '@sinclair/typebox/value'
import { AppError } from '../lib/errors'
import { checkParsedRequest } from './body'
import { errorAnswer, kindOfStatus } from './errors'
import { bodyRead } from './holds'

/**
 * A JSON body as the full route's pipeline reads it for `schema` (Elysia's parse, the API's
 * depth and NUL check, defaults, normalization, the schema check and its transforms), with
 * the same 400s: a fast route answers every body as its full route does.
 */
export function bodyReader(schema: TSchema) {
  const v = getSchemaValidator(schema, { normalize: true }) as unknown as {
    schema: TSchema
    hasDefault: boolean
    isOptional: boolean
    hasTransform: boolean
    Clean?: (value: unknown) => unknown
    Check(value: unknown): boolean
    Decode(value: unknown): unknown
  }
  const defaults = v.hasDefault ? Value.Default(v.schema, {}) : undefined
  if (defaults !== undefined && (typeof defaults !== 'object' || defaults === null || Array.isArray(defaults))) throw new Error('bodyReader: only object defaults')
  const refused = (code: 'PARSE' | 'VALIDATION', error: unknown, request: Request) => {
    const set = { status: 400 as number | string, headers: {} as Record<string, string | number> }
    const { error: message, code: status, ...extra } = errorAnswer(code, error, set, request)
    return new AppError(kindOfStatus(status) ?? 'invalid', message, extra)
  }
  return async (request: Request): Promise<any> => {
    let body: unknown
    if (request.body)
      try {
        body = await request.json()
        bodyRead(request)
      } catch (err) {
        // An optional body that is not JSON is no body, as the framework reads it.
        if (!v.isOptional) throw refused('PARSE', Object.assign(new Error('parse'), { cause: err }), request)
      }
    checkParsedRequest(request.url, body)
    const notEmptyObject = !!body && typeof body === 'object' && Object.keys(body).length > 0
    if (defaults) body = Object.assign(structuredClone(defaults), body)
    if (v.Clean)
      try {
        body = v.Clean(body)
      } catch {}
    if (v.isOptional ? notEmptyObject && !v.Check(body) : !v.Check(body)) throw refused('VALIDATION', new ValidationError('body', v as never, body), request)
    if (v.hasTransform && notEmptyObject)
      try {
        body = v.Decode(body)
      } catch (err) {
        if ((err as Error)?.constructor?.name !== 'TransformDecodeError') throw err
        throw refused('VALIDATION', (err as { error?: unknown }).error ?? new ValidationError('body', v as never, body), request)
      }
    return body
  }
}

// TypeBox models more than one route module uses, defined once.
import { t } from 'elysia'

export const IdParams = t.Object({ id: t.String() })
export const ProjectParams = t.Object({ project: t.String() })
export const ProjectNameParams = t.Object({ project: t.String(), name: t.String() })
/** Compare-and-swap on a versioned document (with If-Match / If-None-Match headers). */
export const CasQuery = t.Object({ if_version: t.Optional(t.String({ description: 'compare-and-swap on the current version' })) })

/** A field that is always present and may be null (expires_at without a TTL, reason when none was given). */
export const Nullable = <T extends Parameters<typeof t.Union>[0][number]>(s: T) => t.Union([s, t.Null()])

/** `?force=1`: release whoever holds it (no instance token needed). */
export const ForceQuery = t.Object({ force: t.Optional(t.String({ description: '1: release whoever holds it (no instance token needed)' })) })

/**
 * The key under which a schema carries what its handler checks itself (bounds, a default, allowed
 * values). Validation ignores it, so a bad value still gets the handler's message (which names both
 * ends); http/openapi-conform.ts moves it into the document, where clients and "Try it out" read it.
 */
export const HANDLER_CHECKS = 'x-handler-checks'

export interface HandlerChecks {
  /** What the value is to clients, when the router takes it as a string (a query parameter). */
  type?: 'integer'
  minimum?: number
  maximum?: number
  minLength?: number
  maxLength?: number
  minItems?: number
  maxItems?: number
  default?: unknown
  enum?: readonly unknown[]
}

/** Options to spread into a TypeBox schema: `t.Integer({ description, ...checks({ minimum: TTL_MIN_MS, maximum: TTL_MAX_MS }) })`. */
export const checks = (c: HandlerChecks) => ({ [HANDLER_CHECKS]: c })

/** Entries a listing answers when its `limit` (or `last`) is not given. */
export const DEFAULT_LIMIT = 50

/**
 * An optional integer query parameter that the handler reads with http/params.ts intParam and these
 * same bounds: a string to the router, so a bad one gets intParam's message; an integer with its
 * bounds and default in the document.
 */
export const IntQuery = (description: string, c: { minimum: number; maximum?: number; default?: number }) =>
  t.Optional(t.String({ description, ...checks({ type: 'integer', ...c }) }))

/** The answer of a DELETE that names what it deleted: the key, `project/name`, or the id. */
export const Deleted = t.Object({ deleted: t.String({ description: 'what was deleted' }) })

/** A raw body's document (http/body.ts rawBodyDoc) with an example, which Swagger UI's "Try it out" sends. */
export function withExample<D extends { content: Record<string, { schema: object }> }>(doc: D, example: unknown): D {
  const content = Object.fromEntries(Object.entries(doc.content).map(([type, media]) => [type, { ...media, schema: { ...media.schema, examples: [example] } }]))
  return { ...doc, content }
}

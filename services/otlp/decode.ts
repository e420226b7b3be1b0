// An OTLP/HTTP request body as the OTLP JSON mapping shapes it, whichever way it came:
// JSON, or protobuf decoded by the protobufjs code OpenTelemetry's own transformer ships
// (and turned into the JSON mapping by it: camelCase fields, 64-bit integers as strings),
// either one gzipped or not.
import { gunzipSync } from 'node:zlib'
import Long from 'long'
import protobuf from 'protobufjs/minimal'
import root from '@opentelemetry/otlp-transformer/build/src/generated/root'
import { AppError, invalid } from '../../lib/errors'
import { MAX_DEPTH, nestedDeeperThan } from '../../lib/json'

export type Signal = 'logs' | 'metrics'

/** What a body may inflate to: a gzip bomb stops here (400), never fills the memory. */
export const MAX_INFLATED = 64 * 1024 * 1024

// 64-bit fields (nanosecond times) as Long, whatever protobufjs's own lookup of `long` finds:
// in the compiled binary it finds the module object, not the class, and every decode fails.
protobuf.util.Long = Long
protobuf.configure()

const proto = (root as any).opentelemetry.proto.collector
const REQUESTS = {
  logs: proto.logs.v1.ExportLogsServiceRequest,
  metrics: proto.metrics.v1.ExportMetricsServiceRequest,
}

export type BodyType = 'json' | 'protobuf'

/** The body type of a Content-Type; 415 for any other. */
export function bodyTypeOf(contentType: string | null): BodyType {
  const type = (contentType ?? '').split(';')[0]!.trim().toLowerCase()
  if (type === 'application/json') return 'json'
  if (type === 'application/x-protobuf') return 'protobuf'
  throw new AppError('unsupported', `unsupported Content-Type ${JSON.stringify(contentType ?? '')}: OTLP/HTTP takes application/json or application/x-protobuf`)
}

function inflate(bytes: Uint8Array, encoding: string | null): Uint8Array {
  const e = (encoding ?? '').trim().toLowerCase()
  if (e === '' || e === 'identity') return bytes
  if (e !== 'gzip') throw new AppError('unsupported', `unsupported Content-Encoding ${JSON.stringify(encoding)}: send gzip or none`)
  try {
    return gunzipSync(bytes, { maxOutputLength: MAX_INFLATED })
  } catch (err) {
    throw invalid(`body does not decode: not gzip, or larger than ${MAX_INFLATED / 1024 / 1024} MB inflated (${(err as Error).message})`)
  }
}

/** The export request of `signal` in `bytes`, in the OTLP JSON mapping; 400 when it does not decode. */
export function decodeExport(signal: Signal, bytes: Uint8Array, type: BodyType, encoding: string | null): Record<string, unknown> {
  const raw = inflate(bytes, encoding)
  if (type === 'json') {
    if (nestedDeeperThan(raw)) throw invalid(`body nests deeper than ${MAX_DEPTH} levels`)
    let value: unknown
    try {
      value = JSON.parse(new TextDecoder().decode(raw))
    } catch {
      throw invalid('body does not decode: not valid JSON')
    }
    if (!value || typeof value !== 'object' || Array.isArray(value)) throw invalid('body does not decode: expected an OTLP export request object')
    return value as Record<string, unknown>
  }
  const Request = REQUESTS[signal]
  try {
    return Request.toObject(Request.decode(raw), { longs: String, bytes: String, defaults: false, arrays: false })
  } catch (err) {
    throw invalid(`body does not decode as an OTLP ${signal} export request: ${(err as Error).message}`)
  }
}

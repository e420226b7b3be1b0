// What Muster takes from OTLP bodies (oversight.md "Agent telemetry"): the log event of each
// model request, as Claude Code and Codex send it, and the delta counters of metrics, both
// keyed by the agent's session id. Everything else in a body is accepted and ignored.
//
// Claude Code (captured from 2.1.332, test/fixtures/otlp/): a log record with body
// `claude_code.api_request` (attribute event.name `api_request`), attributes `session.id`,
// `model`, `input_tokens`, `output_tokens`, `cache_read_tokens`, `cache_creation_tokens`,
// `cost_usd`. Codex (codex-rs/otel/src/events/session_telemetry.rs, sse_event_completed; the
// common fields in events/shared/log.rs): event.name `codex.sse_event` with event.kind
// `response.completed`, `input_token_count` (cached input included, as OpenAI counts it),
// `output_token_count` (reasoning included), `model`, and `conversation.id`, the id its
// hooks get as session_id. Codex reports no cost: the price table gives it.
import { createHash } from 'node:crypto'

type Json = Record<string, any>

/** A model request found in a log body. */
export interface RequestEvent {
  provider: 'anthropic' | 'openai'
  model: string
  session: string
  tokens_in: number
  tokens_out: number
  /** As the agent reported it; null when it reports none (Codex). */
  cost_usd: number | null
  created_at: string
  /** Same session, timestamp and record: the same key (a resent batch records nothing new). */
  key: string
}

/** An OTLP AnyValue as a plain value. */
export function anyValue(v: Json | undefined): unknown {
  if (!v || typeof v !== 'object') return undefined
  if ('stringValue' in v) return v.stringValue
  if ('intValue' in v) return Number(v.intValue)
  if ('doubleValue' in v) return Number(v.doubleValue)
  if ('boolValue' in v) return v.boolValue
  if ('arrayValue' in v) return (v.arrayValue?.values ?? []).map(anyValue)
  if ('kvlistValue' in v) return attributes(v.kvlistValue?.values)
  return undefined
}

/** OTLP attributes ([{key, value}]) as an object. */
export function attributes(list: unknown): Record<string, unknown> {
  const out: Record<string, unknown> = {}
  if (Array.isArray(list)) for (const kv of list) if (kv && typeof kv.key === 'string') out[kv.key] = anyValue(kv.value)
  return out
}

const list = (v: unknown): Json[] => (Array.isArray(v) ? v.filter((x) => x && typeof x === 'object') : [])
const str = (v: unknown) => (typeof v === 'string' ? v : typeof v === 'number' ? String(v) : '')
/** A token count: a non-negative integer (strings of digits too, as Codex's `%` fields are); else NaN. */
const count = (v: unknown): number => {
  const n = typeof v === 'string' && v.trim() !== '' ? Number(v) : typeof v === 'number' ? v : NaN
  return Number.isInteger(n) && n >= 0 && n <= 1e12 ? n : NaN
}
const orZero = (v: unknown) => (v === undefined || v === null || v === '' ? 0 : count(v))

/** An OTLP time (nanoseconds since the epoch, as a string or number) as an ISO string; null when absent or zero. */
function isoOfNanos(v: unknown): string | null {
  if (v === undefined || v === null || v === '' || v === '0' || v === 0) return null
  try {
    const ms = Number(BigInt(String(v)) / 1_000_000n)
    return ms > 0 && ms < 8.64e15 ? new Date(ms).toISOString() : null
  } catch {
    return null
  }
}

type Kind = 'claude' | 'codex' | null

function kindOf(record: Json, attrs: Record<string, unknown>): Kind {
  const name = str(attrs['event.name'])
  const body = str(anyValue(record.body))
  if (body === 'claude_code.api_request' || name === 'claude_code.api_request') return 'claude'
  if (name === 'api_request' && typeof attrs['session.id'] === 'string' && 'cost_usd' in attrs) return 'claude'
  if ((name === 'codex.sse_event' || body === 'codex.sse_event') && attrs['event.kind'] === 'response.completed' && 'input_token_count' in attrs) return 'codex'
  return null
}

/** The model requests of a logs export body, and how many request events could not be used. */
export function requestEvents(body: Json): { events: RequestEvent[]; rejected: number } {
  const events: RequestEvent[] = []
  let rejected = 0
  for (const rl of list(body.resourceLogs)) {
    const resource = attributes(rl.resource?.attributes)
    for (const sl of list(rl.scopeLogs)) {
      for (const record of list(sl.logRecords)) {
        const attrs = { ...resource, ...attributes(record.attributes) }
        const kind = kindOf(record, attrs)
        if (!kind) continue
        const session = str(kind === 'claude' ? attrs['session.id'] : (attrs['conversation.id'] ?? attrs['session.id']))
        const model = str(attrs.model).trim()
        const time = isoOfNanos(record.timeUnixNano) ?? isoOfNanos(record.observedTimeUnixNano) ?? (Date.parse(str(attrs['event.timestamp'])) ? new Date(str(attrs['event.timestamp'])).toISOString() : null)
        let tokens_in: number, tokens_out: number, cost: number | null
        if (kind === 'claude') {
          tokens_in = count(attrs.input_tokens) + orZero(attrs.cache_read_tokens) + orZero(attrs.cache_creation_tokens)
          tokens_out = count(attrs.output_tokens)
          cost = attrs.cost_usd === undefined ? null : Number(attrs.cost_usd)
        } else {
          tokens_in = count(attrs.input_token_count)
          tokens_out = count(attrs.output_token_count)
          cost = null
        }
        const costBad = cost !== null && !(Number.isFinite(cost) && cost >= 0 && cost <= 1e6)
        if (!session || !model || !time || Number.isNaN(tokens_in) || Number.isNaN(tokens_out) || costBad) {
          rejected++
          continue
        }
        const key = createHash('sha256').update(`${session}\n${time}\n${JSON.stringify(record)}`).digest('hex')
        events.push({ provider: kind === 'claude' ? 'anthropic' : 'openai', model, session, tokens_in, tokens_out, cost_usd: cost, created_at: time, key })
      }
    }
  }
  return { events, rejected }
}

/** A delta counter's value for a session: what `metrics` adds to its instance's agent metrics. */
export interface CounterPoint {
  session: string
  name: string
  value: number
}

const DELTA = new Set([1, '1', 'AGGREGATION_TEMPORALITY_DELTA'])

/**
 * The points of monotonic delta sums that carry a session id (Claude Code's `session.id`,
 * Codex's `conversation.id`), each rounded to an integer (agent metrics are counters). A
 * cumulative sum repeats what was sent before, so it is skipped.
 */
export function counterPoints(body: Json): { points: CounterPoint[]; dataPoints: number } {
  const points: CounterPoint[] = []
  let dataPoints = 0
  for (const rm of list(body.resourceMetrics)) {
    const resource = attributes(rm.resource?.attributes)
    for (const sm of list(rm.scopeMetrics)) {
      for (const m of list(sm.metrics)) {
        const kinds = ['sum', 'gauge', 'histogram', 'exponentialHistogram', 'summary'].filter((k) => m[k])
        for (const k of kinds) dataPoints += list(m[k].dataPoints).length
        const sum = m.sum
        if (!sum || !sum.isMonotonic || !DELTA.has(sum.aggregationTemporality) || typeof m.name !== 'string') continue
        for (const p of list(sum.dataPoints)) {
          const attrs = { ...resource, ...attributes(p.attributes) }
          const session = str(attrs['session.id'] ?? attrs['conversation.id'])
          const value = Math.round(Number(p.asInt ?? p.asDouble ?? 0))
          if (session && Number.isFinite(value) && value > 0) points.push({ session, name: m.name, value })
        }
      }
    }
  }
  return { points, dataPoints }
}

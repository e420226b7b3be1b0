// POST /v1/logs and /v1/metrics: an OTLP/HTTP receiver for the agents' own telemetry
// (oversight.md "Agent telemetry"). The answer is the OTLP response, in the request's encoding.
import root from '@opentelemetry/otlp-transformer/build/src/generated/root'
import type { Ctx } from '../services/context'
import { audited } from '../http/audit'
import { readBody } from '../http/body'
import { bodyTypeOf, decodeExport, type BodyType, type Signal } from '../services/otlp/decode'
import { ingestLogs, ingestMetrics } from '../services/telemetry'

/** An export request may be this large on the wire (gzipped or not). */
const OTLP_MAX = 16 * 1024 * 1024

const proto = (root as any).opentelemetry.proto.collector
const RESPONSES = { logs: proto.logs.v1.ExportLogsServiceResponse, metrics: proto.metrics.v1.ExportMetricsServiceResponse }
const REJECTED_FIELD = { logs: 'rejectedLogRecords', metrics: 'rejectedDataPoints' } as const

/** The OTLP response: partialSuccess counts what was rejected; protobuf for a protobuf request. */
function answer(signal: Signal, type: BodyType, rejected: number): Response {
  const partialSuccess = { [REJECTED_FIELD[signal]]: rejected, ...(rejected ? { errorMessage: `${rejected} model request events lacked a session, model, time or valid token counts` } : {}) }
  if (type === 'json') return Response.json({ partialSuccess })
  const R = RESPONSES[signal]
  return new Response(R.encode(R.fromObject({ partialSuccess })).finish(), { headers: { 'content-type': 'application/x-protobuf' } })
}

/** What an export request looks like in JSON, for the document's example (one record or point each). */
const EXAMPLES = {
  logs: {
    resourceLogs: [{
      resource: { attributes: [{ key: 'service.name', value: { stringValue: 'claude-code' } }] },
      scopeLogs: [{
        logRecords: [{
          timeUnixNano: '1795839424323000000',
          body: { stringValue: 'claude_code.api_request' },
          attributes: [
            { key: 'session.id', value: { stringValue: '7d5c1e6a-0b1f-4c7e-9a51-3c2f0e4d8b21' } },
            { key: 'model', value: { stringValue: 'claude-sonnet-4-5' } },
            { key: 'input_tokens', value: { intValue: '120' } },
            { key: 'output_tokens', value: { intValue: '7' } },
            { key: 'cost_usd', value: { doubleValue: 0.0005115 } },
          ],
        }],
      }],
    }],
  },
  metrics: {
    resourceMetrics: [{
      scopeMetrics: [{
        metrics: [{
          name: 'claude_code.token.usage',
          sum: {
            aggregationTemporality: 1,
            isMonotonic: true,
            dataPoints: [{ asDouble: 127, attributes: [{ key: 'session.id', value: { stringValue: '7d5c1e6a-0b1f-4c7e-9a51-3c2f0e4d8b21' } }] }],
          },
        }],
      }],
    }],
  },
}

const doc = (signal: Signal, operationId: string, summary: string, description: string) => ({
  operationId,
  summary,
  description,
  tags: ['telemetry'],
  requestBody: {
    required: true,
    description: `An OTLP ${signal} export request, optionally gzipped (Content-Encoding: gzip)`,
    content: {
      'application/json': { schema: { type: 'object' as const }, example: EXAMPLES[signal] },
      'application/x-protobuf': { schema: { type: 'string' as const, format: 'binary' } },
    },
  },
  responses: {
    200: {
      description: 'The OTLP export response; partialSuccess counts what was rejected',
      content: {
        'application/json': {
          schema: {
            type: 'object' as const,
            properties: { partialSuccess: { type: 'object' as const, properties: { [REJECTED_FIELD[signal]]: { type: 'integer' as const }, errorMessage: { type: 'string' as const } } } },
          },
        },
        'application/x-protobuf': { schema: { type: 'string' as const, format: 'binary' } },
      },
    },
  },
})

export function otlpRoutes(ctx: Ctx) {
  const receive = async (signal: Signal, request: Request): Promise<{ type: BodyType; body: Record<string, unknown> }> => {
    const type = bodyTypeOf(request.headers.get('content-type'))
    const bytes = await readBody(request, OTLP_MAX)
    return { type, body: decodeExport(signal, bytes, type, request.headers.get('content-encoding')) }
  }
  return audited(ctx)
    .post(
      '/v1/logs',
      async ({ request, audit }) => {
        const { type, body } = await receive('logs', request)
        const { rejected } = await ingestLogs(ctx, audit, body)
        return answer('logs', type, rejected)
      },
      {
        parse: 'none',
        maxBody: OTLP_MAX,
        audit: 'telemetry.logs',
        detail: doc(
          'logs',
          'exportLogs',
          'Receive OTLP logs: model request events become LLM usage records',
          "Claude Code's claude_code.api_request and Codex's codex.sse_event (response.completed) each become one usage record, attributed by session id to a hook session's instance, project and claimed task; other events are ignored. A resent event is recorded once. 400 when the body does not decode, 415 for another Content-Type.",
        ),
      },
    )
    .post(
      '/v1/metrics',
      async ({ request, audit }) => {
        const { type, body } = await receive('metrics', request)
        await ingestMetrics(ctx, audit, body)
        return answer('metrics', type, 0)
      },
      {
        parse: 'none',
        maxBody: OTLP_MAX,
        audit: 'telemetry.metrics',
        detail: doc('metrics', 'exportMetrics', 'Receive OTLP metrics: delta counters add to agent metrics', "Monotonic delta sums whose points carry a hook session's id add to its instance's agent metrics under their OpenTelemetry name (rounded to integers). 400 when the body does not decode, 415 for another Content-Type."),
      },
    )
}

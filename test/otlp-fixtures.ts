// The OTLP fixtures of test/fixtures/otlp (see its README), with their session id swapped
// for a test's own, in each encoding the agents send.
import { readFileSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { tmpdir } from 'node:os'
import root from '@opentelemetry/otlp-transformer/build/src/generated/root'

const DIR = join(import.meta.dir, 'fixtures', 'otlp')
export const CLAUDE_VERSION = '2.1.332'
/** The session id the Claude Code fixtures were captured with. */
export const CLAUDE_SESSION = '7d5c1e6a-0b1f-4c7e-9a51-3c2f0e4d8b21'
export const CODEX_SESSION = '019abc00-0000-7000-8000-000000000001'
export const CODEX_VERSION = '0.171.0'
/** The conversation id the Codex capture was made with. */
export const CODEX_CAPTURED_SESSION = '01a22089-358a-7c93-978e-b8c344e3bee0'

const proto = (root as any).opentelemetry.proto.collector
const REQUEST = { logs: proto.logs.v1.ExportLogsServiceRequest, metrics: proto.metrics.v1.ExportMetricsServiceRequest }
export const RESPONSE = { logs: proto.logs.v1.ExportLogsServiceResponse, metrics: proto.metrics.v1.ExportMetricsServiceResponse }

type Signal = 'logs' | 'metrics'

/** A Claude Code JSON body with `session` for the captured session id. */
export function claudeJson(signal: Signal, session: string): string {
  return readFileSync(join(DIR, `claude-code-${CLAUDE_VERSION}-${signal}.json`), 'utf8').replaceAll(CLAUDE_SESSION, session)
}

/** A Claude Code JSON body for `session` with its records' times moved so that the first is at `ms`. */
export function claudeJsonAt(signal: Signal, session: string, ms: number): string {
  const json = claudeJson(signal, session)
  const times = [...json.matchAll(/"(?:observedT|t)imeUnixNano":"(\d+)"/g)].map((m) => BigInt(m[1]!))
  const delta = BigInt(ms) * 1_000_000n - times.reduce((a, b) => (b < a ? b : a))
  return json.replace(/"((?:observedT|t)imeUnixNano)":"(\d+)"/g, (_, key, v) => `"${key}":"${BigInt(v) + delta}"`)
}

/** A Claude Code protobuf body (gzipped with `gzip`), its session id swapped by decoding and encoding it again. */
export function claudeProto(signal: Signal, session: string, gzip = false): Uint8Array<ArrayBuffer> {
  const raw = readFileSync(join(DIR, `claude-code-${CLAUDE_VERSION}-${signal}.pb${gzip ? '.gz' : ''}`))
  const bytes = gzip ? Bun.gunzipSync(raw) : raw
  const R = REQUEST[signal]
  const json = JSON.stringify(R.toObject(R.decode(bytes), { longs: String, bytes: String })).replaceAll(CLAUDE_SESSION, session)
  const out = new Uint8Array(R.encode(R.fromObject(JSON.parse(json))).finish() as Uint8Array)
  return gzip ? Bun.gzipSync(out) : out
}

/** A Codex logs body for `session`: captured from Codex 0.171.0, or the one built from its source. */
export function codexJson(session: string, model = 'gpt-5-codex', captured = true): string {
  const [file, id] = captured ? [`codex-${CODEX_VERSION}-logs.json`, CODEX_CAPTURED_SESSION] : ['codex-sse-event-completed.json', CODEX_SESSION]
  return readFileSync(join(DIR, file), 'utf8').replaceAll(id, session).replaceAll('"gpt-5-codex"', JSON.stringify(model))
}

/** A price table file for --llm-prices. */
export function pricesFile(prices: Record<string, { in_usd_per_mtok: number; out_usd_per_mtok: number }>): string {
  const file = join(tmpdir(), `muster-prices-${crypto.randomUUID()}.json`)
  writeFileSync(file, JSON.stringify(prices))
  return file
}

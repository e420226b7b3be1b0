// Server configuration: flags beat env, env beats defaults. A bad value is a
// ConfigError with one clear line; app.ts prints it and exits 2.

import { readFileSync } from 'node:fs'
import { parseDuration } from './time'

export const LOG_FORMATS = ['json', 'pretty'] as const
export const LOG_LEVELS = ['debug', 'info', 'warn', 'error'] as const
export type LogFormat = (typeof LOG_FORMATS)[number]
export type LogLevel = (typeof LOG_LEVELS)[number]

export interface Config {
  bind: HostPort
  dashboardBind: HostPort | null
  dataDir: string
  /** A postgres:// URL for several replicas on PostgreSQL; empty for the embedded SQLite file in dataDir. */
  database: string
  authToken: string | null
  staleTimeoutMs: number
  livenessIntervalMs: number
  /** How long a hook session ended by /clear or resume keeps its instance for the next SessionStart. */
  sessionHoldMs: number
  pruneIntervalMs: number
  eventRetention: number
  /** Versions kept per state key by the prune job (the current one always). */
  stateHistory: number
  /** Versions older than this are pruned too (the current one never); null: no age limit. */
  stateHistoryMaxAgeMs: number | null
  /** Bytes the in-memory caches of stored values may hold in all (lib/lru.ts cacheShares). */
  cacheBytes: number
  complianceIntervalMs: number
  /** A validation on the worker thread still running after this is stopped (413). */
  validationTimeoutMs: number
  /** Webhook and contract-test targets may be link-local, unspecified or metadata addresses (lib/targets.ts). */
  allowLinkLocalTargets: boolean
  logFormat: LogFormat
  logLevel: LogLevel
  /** What a model's tokens cost, for usage whose agent reports no cost (OTLP from Codex): per million tokens. */
  llmPrices: LlmPrices
}

export type LlmPrices = Record<string, { in_usd_per_mtok: number; out_usd_per_mtok: number }>

export interface HostPort { host: string; port: number }

export class ConfigError extends Error {}

const OPTIONS = {
  bind: { flag: '--bind', env: 'SERVICE_BIND', def: 'localhost:9800' },
  dashboardBind: { flag: '--dashboard-bind', env: 'SERVICE_DASHBOARD_BIND', def: 'localhost:9847' },
  dataDir: { flag: '--data-dir', env: 'SERVICE_DATA_DIR', def: './muster-data' },
  database: { flag: '--database', env: 'SERVICE_DATABASE', def: '' },
  authToken: { flag: '--auth-token', env: 'SERVICE_AUTH_TOKEN', def: '' },
  staleTimeout: { flag: '--stale-timeout', env: 'SERVICE_STALE_TIMEOUT', def: '5m' },
  livenessInterval: { flag: '--liveness-interval', env: 'SERVICE_LIVENESS_INTERVAL', def: '60s' },
  sessionHold: { flag: '--session-hold', env: 'SERVICE_SESSION_HOLD', def: '60s' },
  pruneInterval: { flag: '--prune-interval', env: 'SERVICE_PRUNE_INTERVAL', def: '60s' },
  eventRetention: { flag: '--event-retention', env: 'SERVICE_EVENT_RETENTION', def: '1000' },
  stateHistory: { flag: '--state-history', env: 'SERVICE_STATE_HISTORY', def: '1000' },
  stateHistoryMaxAge: { flag: '--state-history-max-age', env: 'SERVICE_STATE_HISTORY_MAX_AGE', def: '' },
  cacheSize: { flag: '--cache-size', env: 'SERVICE_CACHE_SIZE', def: '64MB' },
  complianceInterval: { flag: '--compliance-interval', env: 'SERVICE_COMPLIANCE_INTERVAL', def: '5m' },
  validationTimeout: { flag: '--validation-timeout', env: 'SERVICE_VALIDATION_TIMEOUT', def: '10s' },
  // A switch: the flag alone means true; it also takes =true / =false, as the env var does.
  allowLinkLocalTargets: { flag: '--allow-link-local-targets', env: 'SERVICE_ALLOW_LINK_LOCAL_TARGETS', def: 'false', switch: true },
  logFormat: { flag: '--log-format', env: 'SERVICE_LOG_FORMAT', def: 'pretty' },
  logLevel: { flag: '--log-level', env: 'SERVICE_LOG_LEVEL', def: 'info' },
  llmPrices: { flag: '--llm-prices', env: 'SERVICE_LLM_PRICES', def: '' },
} as const

type Key = keyof typeof OPTIONS

/** What --help says of each flag: its value's shape, what it does, and its default when the raw one would not read well. */
const HELP: Record<Key, { value?: string; text: string; def?: string }> = {
  bind: { value: 'HOST:PORT', text: 'where the API (REST, WebSocket, MCP, /metrics) listens; port 0 picks a free port' },
  dashboardBind: { value: 'HOST:PORT', text: 'where the web dashboard listens; empty disables it' },
  dataDir: { value: 'DIR', text: 'the embedded SQLite database (muster.db); on PostgreSQL only backups and restores are staged here' },
  database: { value: 'URL', text: 'a postgres:// URL: replicas share that PostgreSQL database; empty: the embedded SQLite file in --data-dir', def: '(empty: SQLite)' },
  authToken: { value: 'TOKEN', text: 'the admin bearer token; once set, every request but /health, /livez and /readyz needs it or an agent or viewer token (POST /api/tokens); empty: no auth', def: '(none: no auth)' },
  staleTimeout: { value: 'DUR', text: 'an instance with no sign of life for this long turns stale: its locks, reservations and task claims are released' },
  livenessInterval: { value: 'DUR', text: 'how often instances are checked against --stale-timeout' },
  sessionHold: { value: 'DUR', text: "an agent session ended by /clear or resume keeps its instance this long for the agent's next session to take over" },
  pruneInterval: { value: 'DUR', text: 'how often old events, compliance runs and state versions are pruned' },
  eventRetention: { value: 'N', text: 'events kept (the newest)' },
  stateHistory: { value: 'N', text: 'versions kept per state key (the current one always)' },
  stateHistoryMaxAge: { value: 'DUR', text: 'older state versions are pruned too, never the current one; empty or off: no age limit', def: 'off' },
  cacheSize: { value: 'BYTES', text: 'what the in-memory caches of stored values hold in all (524288, 512KB, 64MB, 1GB; 0 caches nothing)' },
  complianceInterval: { value: 'DUR', text: "how often every active instance's API contracts are checked" },
  validationTimeout: { value: 'DUR', text: 'a validation still running after this is stopped (413)' },
  allowLinkLocalTargets: { text: 'let webhooks and contract tests reach link-local, unspecified and cloud metadata addresses (a switch; also =true or =false)' },
  logFormat: { value: LOG_FORMATS.join('|'), text: "json: one JSON object per line in pino's shape, for log shippers; pretty: one readable line" },
  logLevel: { value: LOG_LEVELS.join('|'), text: 'entries below this level are not written' },
  llmPrices: { value: 'FILE', text: 'a JSON price table {model: {in_usd_per_mtok, out_usd_per_mtok}} costing usage whose agent reports no cost (Codex telemetry); a model not in it costs 0', def: '(none)' },
}

/** `text` in lines of at most 80 columns, each after `indent`. */
function wrap(text: string, indent: string): string {
  const lines: string[] = []
  let line = ''
  for (const word of text.split(' ')) {
    if (line && indent.length + line.length + 1 + word.length > 80) lines.push(line), (line = '')
    line = line ? `${line} ${word}` : word
  }
  return [...lines, line].map((l) => indent + l).join('\n')
}

export const USAGE = `Usage: muster-server [options]

Flags beat environment variables, which beat defaults. DUR is like 500ms, 2s,
5m, 1h. A bad value prints one line and exits with code 2.

${(Object.keys(OPTIONS) as Key[])
  .map((k) => {
    const { flag, env, def } = OPTIONS[k]
    const help = HELP[k]
    return `  ${flag}${help.value ? ` ${help.value}` : ''}\n${wrap(help.text, '      ')}\n      env ${env}, default ${help.def ?? def}`
  })
  .join('\n')}
  --version
      print the version and exit
  --help
      print this help and exit`

export function parseHostPort(text: string): HostPort | null {
  const m = /^(\[[^\]]+\]|[^:]*):(\d{1,5})$/.exec(text.trim())
  if (!m) return null
  const port = Number(m[2])
  if (port > 65535) return null
  return { host: m[1] === '' ? '0.0.0.0' : m[1].replace(/^\[|\]$/g, ''), port }
}

/** A size in bytes: a plain integer, or with KB, MB or GB (powers of 1024; K, M, G and KiB… too); 0 is allowed (no caching). */
export function parseBytes(text: string): number | null {
  const m = /^(\d+(?:\.\d+)?)\s*(?:([KMG])(?:i?B)?|B)?$/i.exec(text.trim())
  if (!m) return null
  const n = Number(m[1]) * 1024 ** (m[2] ? 'KMG'.indexOf(m[2].toUpperCase()) + 1 : 0)
  return Number.isSafeInteger(Math.round(n)) ? Math.round(n) : null
}

export function formatHostPort(hp: HostPort): string {
  return `${hp.host.includes(':') ? `[${hp.host}]` : hp.host}:${hp.port}`
}

function readRaw(argv: string[], env: Record<string, string | undefined>): Record<Key, string> {
  const byFlag = new Map(Object.entries(OPTIONS).map(([k, o]) => [o.flag as string, k as Key]))
  const fromFlags: Partial<Record<Key, string>> = {}
  for (let i = 0; i < argv.length; i++) {
    const arg = argv[i]
    const eq = arg.indexOf('=')
    const name = eq > 0 ? arg.slice(0, eq) : arg
    const key = byFlag.get(name)
    if (!key) throw new ConfigError(`unknown option ${name}`)
    let value: string | undefined
    if (eq > 0) value = arg.slice(eq + 1)
    else if ('switch' in OPTIONS[key]) value = 'true'
    else value = argv[++i]
    if (value === undefined) throw new ConfigError(`option ${name} needs a value`)
    fromFlags[key] = value
  }
  const out = {} as Record<Key, string>
  for (const [k, o] of Object.entries(OPTIONS) as [Key, (typeof OPTIONS)[Key]][]) {
    out[k] = fromFlags[k] ?? env[o.env] ?? o.def
  }
  return out
}

export function loadConfig(argv: string[], env: Record<string, string | undefined> = process.env): Config {
  const raw = readRaw(argv, env)
  const where = (k: Key) => `${OPTIONS[k].flag} / ${OPTIONS[k].env}`
  const hostPort = (k: Key) => {
    const hp = parseHostPort(raw[k])
    if (!hp) throw new ConfigError(`invalid ${where(k)} "${raw[k]}": expected HOST:PORT`)
    return hp
  }
  const duration = (k: Key) => {
    const ms = parseDuration(raw[k])
    if (ms === null) throw new ConfigError(`invalid ${where(k)} "${raw[k]}": expected a duration like 500ms, 2s, 5m, 1h`)
    return ms
  }
  const positive = (k: Key) => {
    if (!/^\d+$/.test(raw[k].trim()) || !(Number(raw[k]) >= 1 && Number.isSafeInteger(Number(raw[k]))))
      throw new ConfigError(`invalid ${where(k)} "${raw[k]}": expected a positive integer`)
    return Number(raw[k])
  }
  const bytes = (k: Key) => {
    const n = parseBytes(raw[k])
    if (n === null) throw new ConfigError(`invalid ${where(k)} "${raw[k]}": expected bytes like 67108864, 512KB, 64MB, 1GB`)
    return n
  }
  const flag = (k: Key) => {
    const v = raw[k].trim().toLowerCase()
    if (['true', '1', 'yes'].includes(v)) return true
    if (['false', '0', 'no', ''].includes(v)) return false
    throw new ConfigError(`invalid ${where(k)} "${raw[k]}": expected true or false`)
  }
  const oneOf = <T extends string>(k: Key, allowed: readonly T[]): T => {
    if (!(allowed as readonly string[]).includes(raw[k])) throw new ConfigError(`invalid ${where(k)} "${raw[k]}": expected ${allowed.join(' or ')}`)
    return raw[k] as T
  }
  const database = raw.database.trim()
  if (database && !/^postgres(ql)?:\/\/\S+$/.test(database))
    throw new ConfigError(`invalid ${where('database')}: expected a postgres:// URL, or empty for the embedded SQLite database`)
  if (raw.dataDir.trim() === '') throw new ConfigError(`invalid ${where('dataDir')}: must not be empty`)
  return {
    bind: hostPort('bind'),
    dashboardBind: raw.dashboardBind.trim() === '' ? null : hostPort('dashboardBind'),
    dataDir: raw.dataDir,
    database,
    authToken: raw.authToken === '' ? null : raw.authToken,
    staleTimeoutMs: duration('staleTimeout'),
    livenessIntervalMs: duration('livenessInterval'),
    sessionHoldMs: duration('sessionHold'),
    pruneIntervalMs: duration('pruneInterval'),
    eventRetention: positive('eventRetention'),
    stateHistory: positive('stateHistory'),
    // Empty (the default) or 'off': no age limit.
    stateHistoryMaxAgeMs: ['', 'off'].includes(raw.stateHistoryMaxAge.trim()) ? null : duration('stateHistoryMaxAge'),
    cacheBytes: bytes('cacheSize'),
    complianceIntervalMs: duration('complianceInterval'),
    validationTimeoutMs: duration('validationTimeout'),
    allowLinkLocalTargets: flag('allowLinkLocalTargets'),
    logFormat: oneOf('logFormat', LOG_FORMATS),
    logLevel: oneOf('logLevel', LOG_LEVELS),
    llmPrices: raw.llmPrices.trim() ? readPrices(raw.llmPrices.trim(), where('llmPrices')) : {},
  }
}

/** The price table file: every model with two non-negative prices, else one line saying which is wrong. */
function readPrices(file: string, what: string): LlmPrices {
  let parsed: unknown
  try {
    parsed = JSON.parse(readFileSync(file, 'utf8'))
  } catch (err) {
    throw new ConfigError(`invalid ${what}: cannot read ${file} as JSON (${(err as Error).message})`)
  }
  if (!parsed || typeof parsed !== 'object' || Array.isArray(parsed)) throw new ConfigError(`invalid ${what}: expected {model: {in_usd_per_mtok, out_usd_per_mtok}}`)
  const prices: LlmPrices = {}
  for (const [model, p] of Object.entries(parsed as Record<string, any>)) {
    const ok = (v: unknown) => typeof v === 'number' && Number.isFinite(v) && v >= 0
    if (!p || !ok(p.in_usd_per_mtok) || !ok(p.out_usd_per_mtok))
      throw new ConfigError(`invalid ${what}: model ${model} needs in_usd_per_mtok and out_usd_per_mtok, numbers >= 0`)
    prices[model] = { in_usd_per_mtok: p.in_usd_per_mtok, out_usd_per_mtok: p.out_usd_per_mtok }
  }
  return prices
}

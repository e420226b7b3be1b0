// The CLI's only way to the server: configuration, the headers every request
// carries, and error mapping. Server and token: --server/--token, then
// SERVICE_SERVER/SERVICE_TOKEN (the spec's names), then MUSTER_SERVER/MUSTER_TOKEN,
// then the nearest settings.json (cli/settings.ts), then the default. The instance
// this directory acts as, and its claims, live apart (cli/identity.ts).
import { ClientError, isDebug, note, ServerError, UsageError } from './output'
import { configError } from './config-error'
import { ambiguousIdentity, chooseIdentity, identityKeysOf, readIdentity, writeIdentity, type Chosen, type Identity } from './identity'
import { SettingsFile, type SettingKey } from './settings'

export const DEFAULT_SERVER = 'http://localhost:9800'

/** Shown by `config show` and the help: who wins when a value is given twice. */
export const PRECEDENCE =
  'flag (--server/--token) > SERVICE_SERVER/SERVICE_TOKEN > MUSTER_SERVER/MUSTER_TOKEN > settings.json (the nearest, from here up to the git root) > default'

export interface Settings {
  server?: string
  token?: string
  /** Saved by `register`: the instance this directory acts as (kept in the identity file, not settings.json). */
  instance_id?: string
  instance_token?: string
  /** Saved by `task claim`: the claim id of each task this directory holds, by task id, for `task ack|nack|extend`. */
  claims?: Record<string, string>
}

export type Source = 'flag' | 'env' | 'file' | 'default'

export interface Resolved {
  server: string
  token: string | null
  instanceId: string | null
  instanceToken: string | null
  sources: { server: Source; token: Source | null }
  /** Exactly where each value came from: the flag, the variable's name, the file's path, or 'default'. */
  from: { server: string; token: string | null }
  /** The settings.json in effect, or where `config set` would create one. */
  file: string
  /** Where this directory's identity lives (whether or not one is saved). */
  identityFile: string
  identity: Identity
  /** Several agent identities here and nothing chose one: their names (cli/identity.ts). */
  identityChoices: string[] | null
}

/** The keys a settings.json of the old layout held beside server and token; read as a fallback, moved out on the next write. */
const LEGACY_KEYS = ['instance_id', 'instance_token', 'claims'] as const

/** The identity this command acts as (cli/identity.ts), else the one an old-layout settings.json holds. */
function loadIdentity(settings: SettingsFile): Chosen {
  const chosen = chooseIdentity()
  if (chosen.from !== 'none' || chosen.choices) return chosen
  const old = settings.object()
  return { ...chosen, identity: old ? identityKeysOf(old, LEGACY_KEYS) : {} }
}

/**
 * Saves the identity with `patch` applied, and moves the identity keys out of an
 * old-layout settings.json. `file`: the identity file to change (`register` names its
 * agent's), else the one this command acts as.
 */
export function updateIdentity(patch: { [K in keyof Identity]?: Identity[K] | undefined }, file?: string): string {
  const settings = SettingsFile.find()
  const chosen = file ? null : loadIdentity(settings)
  if (chosen?.choices) ambiguousIdentity(chosen.choices)
  const target = file ?? chosen!.file
  const identity = file ? (readIdentity(file) ?? {}) : chosen!.identity
  const next: Record<string, unknown> = { ...identity }
  for (const [k, v] of Object.entries(patch)) {
    if (v === undefined) delete next[k]
    else next[k] = v
  }
  writeIdentity(next as Identity, target)
  const old = settings.object()
  if (old && LEGACY_KEYS.some((k) => k in old)) settings.write(Object.fromEntries(LEGACY_KEYS.map((k) => [k, undefined])))
  return target
}

/** settings.json's server and token (those that are strings) with the identity: what this directory knows. */
export function readSettings(): Settings {
  const settings = SettingsFile.find()
  const file = settings.object() ?? {}
  const own: Settings = {}
  for (const key of ['server', 'token'] as const) if (typeof file[key] === 'string') own[key] = file[key] as string
  return { ...own, ...loadIdentity(settings).identity }
}

/**
 * Merges `patch`: server and token into the nearest settings.json (./settings.json
 * when there is none), the identity keys into the identity file. Returns the file
 * written (settings.json when the patch has a setting in it).
 */
export function updateSettings(patch: { [K in keyof Settings]?: Settings[K] | undefined }): string {
  const { server, token, ...identity } = patch
  const own = Object.entries({ server, token }).filter(([k]) => k in patch)
  const identityFile = Object.keys(identity).length ? updateIdentity(identity) : null
  if (own.length) return SettingsFile.find().write(Object.fromEntries(own))
  return identityFile ?? SettingsFile.find().path
}

/** The settings.json in effect, or where `config set` creates one. */
export const settingsPath = () => SettingsFile.find().path

/** A server URL as stored and used: http(s) only, no trailing slash. */
export function normalizeServer(value: string): string {
  let url: URL
  try {
    url = new URL(value)
  } catch {
    throw new UsageError(`invalid server URL '${value}': expected e.g. http://localhost:9800`)
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:') throw new UsageError(`invalid server URL '${value}': use http:// or https://`)
  return value.replace(/\/+$/, '')
}

let flags: { server?: string; token?: string } = {}

/** The global --server / --token of this command line. */
export function setFlagOverrides(given: { server?: string; token?: string }): void {
  flags = given
}

const env = (name: string) => {
  const v = process.env[name]
  return v === undefined || v === '' ? undefined : v
}

/** One setting by the precedence above: its value, its kind of source, and exactly where it came from. */
function pick(key: SettingKey, settings: SettingsFile): { value: string; source: Source; from: string } | null {
  const upper = key.toUpperCase()
  if (flags[key]) return { value: flags[key]!, source: 'flag', from: `--${key}` }
  for (const name of [`SERVICE_${upper}`, `MUSTER_${upper}`]) {
    const value = env(name)
    if (value) return { value, source: 'env', from: name }
  }
  const value = settings.string(key)
  return value ? { value, source: 'file', from: settings.path } : null
}

function serverOf(picked: { value: string; source: Source; from: string } | null, settings: SettingsFile): string {
  if (!picked) return DEFAULT_SERVER
  try {
    return normalizeServer(picked.value)
  } catch (err) {
    if (picked.source === 'file') return settings.fail('server', `: "server" is not a server URL: ${(err as Error).message}`)
    if (picked.source === 'env') return configError(`${picked.from}: ${(err as Error).message}`)
    throw err
  }
}

export function resolveConfig(): Resolved {
  const settings = SettingsFile.find()
  const server = pick('server', settings)
  const token = pick('token', settings)
  const { identity, file: identityFile, choices } = loadIdentity(settings)
  return {
    server: serverOf(server, settings),
    token: token?.value ?? null,
    instanceId: identity.instance_id ?? null,
    instanceToken: identity.instance_token ?? null,
    sources: { server: server?.source ?? 'default', token: token?.source ?? null },
    from: { server: server?.from ?? 'default', token: token?.from ?? null },
    file: settings.path,
    identityFile,
    identity,
    identityChoices: choices ?? null,
  }
}

/** Headers every request carries: the server token and the instance token saved by `register`. */
export function authHeaders(cfg: Resolved = resolveConfig()): Record<string, string> {
  const headers: Record<string, string> = {}
  if (cfg.token) headers.authorization = `Bearer ${cfg.token}`
  if (cfg.instanceToken) headers['x-instance-token'] = cfg.instanceToken
  return headers
}

/** Path segments, each percent-encoded; slashes inside a state key stay path separators. */
export function apiPath(prefix: string, ...segments: string[]): string {
  return [prefix, ...segments.map((s) => s.split('/').map(encodeURIComponent).join('/'))].join('/')
}

export type Query = Record<string, string | number | boolean | undefined | null>

export interface RequestOptions {
  query?: Query
  /** Sent as JSON with Content-Type application/json. */
  json?: unknown
  /** Sent as is (raw values, files). */
  body?: BodyInit
  headers?: Record<string, string>
  /** The X-Instance-Token to send instead of the saved one; null sends none. */
  instanceToken?: string | null
}

/** One request; a non-2xx answer becomes a ServerError carrying the server's {error, code}. */
export async function request(method: string, path: string, opts: RequestOptions = {}): Promise<Response> {
  const cfg = resolveConfig()
  const url = new URL(cfg.server + path)
  for (const [k, v] of Object.entries(opts.query ?? {})) if (v !== undefined && v !== null) url.searchParams.set(k, String(v))
  if (opts.instanceToken !== undefined) cfg.instanceToken = opts.instanceToken
  const headers: Record<string, string> = { ...authHeaders(cfg), ...opts.headers }
  let body = opts.body
  if (opts.json !== undefined) {
    body = JSON.stringify(opts.json)
    headers['content-type'] = 'application/json'
  }
  let res: Response
  try {
    res = await fetch(url, { method, headers, body })
  } catch (err) {
    throw new ClientError(`cannot reach ${cfg.server}: ${(err as Error).message}`)
  }
  if (isDebug()) note(`${method} ${url} -> ${res.status}`)
  if (res.status >= 400) {
    const error = await errorBody(res)
    // The call needs an instance, and this checkout holds several with nothing to choose one.
    if (res.status === 400 && cfg.identityChoices && !headers['x-instance-token'] && /X-Instance-Token is required/.test(JSON.stringify(error)))
      ambiguousIdentity(cfg.identityChoices)
    throw new ServerError(res.status, error)
  }
  return res
}

async function errorBody(res: Response): Promise<unknown> {
  const text = await res.text().catch(() => '')
  try {
    const parsed = JSON.parse(text)
    if (parsed && typeof parsed === 'object') return parsed
  } catch {}
  return { error: text.trim().slice(0, 500) || res.statusText || `HTTP ${res.status}`, code: res.status }
}

/** Request and parse the JSON answer. */
export async function requestJson(method: string, path: string, opts: RequestOptions = {}): Promise<unknown> {
  const res = await request(method, path, opts)
  const text = await res.text()
  if (text === '') return null
  try {
    return JSON.parse(text)
  } catch {
    throw new ClientError(`server sent a non-JSON answer for ${method} ${path}: ${text.slice(0, 200)}`)
  }
}

export const api = {
  get: (path: string, query?: Query) => requestJson('GET', path, { query }),
  post: (path: string, json?: unknown, query?: Query) => requestJson('POST', path, { json, query }),
  put: (path: string, json: unknown) => requestJson('PUT', path, { json }),
  delete: (path: string, query?: Query) => requestJson('DELETE', path, { query }),
}

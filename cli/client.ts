// The CLI's only way to the server: configuration (--server/--token beat env,
// env beats ./settings.json, the file beats defaults), the headers every request
// carries, and error mapping.
import { chmodSync, existsSync, readFileSync, renameSync, writeFileSync } from 'node:fs'
import { resolve } from 'node:path'
import { ClientError, isDebug, note, ServerError, UsageError } from './output'

export const DEFAULT_SERVER = 'http://localhost:9800'

export interface Settings {
  server?: string
  token?: string
  /** Saved by `register`: the instance this working directory acts as. */
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
  file: string
}

export const settingsPath = () => resolve(process.cwd(), 'settings.json')

export function readSettings(): Settings {
  const file = settingsPath()
  if (!existsSync(file)) return {}
  let parsed: unknown
  try {
    parsed = JSON.parse(readFileSync(file, 'utf8'))
  } catch (err) {
    throw new UsageError(`${file} is not valid JSON: ${(err as Error).message}`)
  }
  if (!parsed || typeof parsed !== 'object' || Array.isArray(parsed)) throw new UsageError(`${file} must hold a JSON object`)
  return parsed as Settings
}

/** Merges `patch` into ./settings.json (undefined removes a key). Written atomically, readable by the owner only: it holds tokens. */
export function updateSettings(patch: { [K in keyof Settings]?: Settings[K] | undefined }): string {
  const file = settingsPath()
  const next: Record<string, unknown> = { ...readSettings() }
  for (const [k, v] of Object.entries(patch)) {
    if (v === undefined) delete next[k]
    else next[k] = v
  }
  const tmp = `${file}.${process.pid}.tmp`
  writeFileSync(tmp, JSON.stringify(next, null, 2) + '\n', { mode: 0o600 })
  chmodSync(tmp, 0o600)
  renameSync(tmp, file)
  return file
}

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

export function resolveConfig(): Resolved {
  const file = readSettings()
  const envServer = env('SERVICE_SERVER')
  const envToken = env('SERVICE_TOKEN')
  const server = flags.server ?? envServer ?? file.server ?? DEFAULT_SERVER
  const token = flags.token ?? envToken ?? file.token ?? null
  return {
    server: normalizeServer(server),
    token,
    instanceId: file.instance_id ?? null,
    instanceToken: file.instance_token ?? null,
    sources: {
      server: flags.server ? 'flag' : envServer ? 'env' : file.server ? 'file' : 'default',
      token: flags.token ? 'flag' : envToken ? 'env' : file.token ? 'file' : null,
    },
    file: settingsPath(),
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
}

/** One request; a non-2xx answer becomes a ServerError carrying the server's {error, code}. */
export async function request(method: string, path: string, opts: RequestOptions = {}): Promise<Response> {
  const cfg = resolveConfig()
  const url = new URL(cfg.server + path)
  for (const [k, v] of Object.entries(opts.query ?? {})) if (v !== undefined && v !== null) url.searchParams.set(k, String(v))
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
  if (res.status >= 400) throw new ServerError(res.status, await errorBody(res))
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

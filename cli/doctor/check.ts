// What a doctor check is: a small function over what `muster doctor` found out about this
// repository and this shell, answering findings, one line each, with the fix for what
// is wrong. Facts several checks need (the configuration, the server's answer to
// /api/whoami, the agents' hook files) are read once, here.
import { existsSync, readFileSync } from 'node:fs'
import { join } from 'node:path'
import { authHeaders, resolveConfig, type Resolved } from '../client'
import { ConfigError, reportConfigErrorsMyself } from '../config-error'
import { gitRoot } from '../identity'

export type Status = 'ok' | 'warn' | 'fail'

export interface Finding {
  status: Status
  /** What was checked: `server`, `token`, `hooks claude-code`, … */
  check: string
  message: string
  /** What to do about it (for warn and fail). */
  fix?: string
}

export type Check = (ctx: DoctorContext) => Promise<Finding[]> | Finding[]

export interface Whoami {
  role: 'admin' | 'agent' | 'viewer'
  auth: boolean
  token: { id: string; name: string } | null
  instance: { id: string; name: string } | null
}

/** The server's answer to the CLI's credentials: who it is, or why not. */
export type ServerAnswer =
  | { reached: false; error: string }
  | { reached: true; status: number; whoami: Whoami | null; error: string | null }

export interface DoctorContext {
  cwd: string
  /** The git root, else the working directory: where the agents' files are. */
  root: string
  env: Record<string, string | undefined>
  /** The CLI's configuration, null when it cannot be read (configError says why). */
  config: Resolved | null
  configError: string | null
  /** GET /api/whoami with the CLI's server token (and its instance token with `asInstance`), asked once each. */
  server(asInstance?: boolean): Promise<ServerAnswer>
  /** A JSON file under the root: null when absent, `undefined` when not valid JSON. */
  json(path: string): Record<string, any> | null | undefined
  /** A text file under the root, '' when absent. */
  text(path: string): string
  /** Whether a file or directory under the root exists. */
  exists(path: string): boolean
}

/** How long doctor waits for the server. */
const TIMEOUT_MS = 3000

export function doctorContext(env: Record<string, string | undefined> = process.env, cwd = process.cwd()): DoctorContext {
  reportConfigErrorsMyself()
  let config: Resolved | null = null
  let configError: string | null = null
  try {
    config = resolveConfig()
  } catch (err) {
    configError = err instanceof ConfigError ? err.reason : (err as Error).message
  }
  const root = gitRoot(cwd) ?? cwd
  const answers = new Map<boolean, Promise<ServerAnswer>>()
  return {
    cwd,
    root,
    env,
    config,
    configError,
    server(asInstance = false) {
      if (!answers.has(asInstance)) answers.set(asInstance, ask(config, asInstance))
      return answers.get(asInstance)!
    },
    json(path) {
      const full = join(root, path)
      if (!existsSync(full)) return null
      try {
        const v = JSON.parse(readFileSync(full, 'utf8'))
        return v && typeof v === 'object' && !Array.isArray(v) ? v : undefined
      } catch {
        return undefined
      }
    },
    text: (path) => (existsSync(join(root, path)) ? readFileSync(join(root, path), 'utf8') : ''),
    exists: (path) => existsSync(join(root, path)),
  }
}

async function ask(config: Resolved | null, asInstance: boolean): Promise<ServerAnswer> {
  if (!config) return { reached: false, error: 'no configuration' }
  const headers = authHeaders(asInstance ? config : { ...config, instanceToken: null })
  let res: Response
  try {
    res = await fetch(`${config.server}/api/whoami`, { headers, signal: AbortSignal.timeout(TIMEOUT_MS) })
  } catch (err) {
    return { reached: false, error: (err as Error).message }
  }
  const text = await res.text().catch(() => '')
  let body: any = null
  try {
    body = JSON.parse(text)
  } catch {}
  if (res.ok && body && typeof body.role === 'string') return { reached: true, status: res.status, whoami: body, error: null }
  return { reached: true, status: res.status, whoami: null, error: (body && typeof body.error === 'string' ? body.error : text.slice(0, 200)) || `HTTP ${res.status}` }
}

// Test harness: starts the real server as a subprocess on free ports with a temp
// data dir, and gives small fetch helpers. Every test file talks HTTP to it.
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import type { Subprocess } from 'bun'
import { databaseArgs } from './pg'

const ROOT = join(import.meta.dir, '..')

export interface TestServer {
  api: string
  dashboard: string
  dataDir: string
  proc: Subprocess
  /** Output the server has printed so far (stdout and stderr). */
  output(): string
  /** Only what it printed on stdout (the log). */
  stdout(): string
  /** SIGTERM and wait; keeps the data dir. */
  stop(): Promise<void>
  /** SIGKILL and wait; keeps the data dir. */
  kill(): Promise<void>
  /** Stops and removes the data dir. */
  cleanup(): Promise<void>
}

export interface StartOptions {
  args?: string[]
  env?: Record<string, string>
  dataDir?: string
}

export function tempDir(prefix = 'muster-test-'): string {
  return mkdtempSync(join(tmpdir(), prefix))
}

/** Starts `bun app.ts` on 127.0.0.1 with port 0 for both ports, resolving once it listens. */
export async function startServer(opts: StartOptions = {}): Promise<TestServer> {
  const dataDir = opts.dataDir ?? tempDir()
  const db = await databaseArgs(dataDir, opts.args ?? [])
  const proc = Bun.spawn(
    [process.execPath, join(ROOT, 'app.ts'), '--bind', '127.0.0.1:0', '--dashboard-bind', '127.0.0.1:0', '--data-dir', dataDir, ...db, ...(opts.args ?? [])],
    { cwd: ROOT, stdout: 'pipe', stderr: 'pipe', env: { ...process.env, ...opts.env } },
  )
  let out = ''
  let stdout = ''
  const pump = async (stream: ReadableStream<Uint8Array>, isStdout: boolean) => {
    const decoder = new TextDecoder()
    for await (const chunk of stream) {
      const text = decoder.decode(chunk, { stream: true })
      out += text
      if (isStdout) stdout += text
    }
  }
  void pump(proc.stdout as ReadableStream<Uint8Array>, true)
  void pump(proc.stderr as ReadableStream<Uint8Array>, false)
  const deadline = Date.now() + 15_000
  let m: RegExpExecArray | null = null
  while (!(m = /Muster API on (\S+), dashboard on (\S+),/.exec(out))) {
    if (proc.exitCode !== null || Date.now() > deadline) throw new Error(`server did not start:\n${out}`)
    await Bun.sleep(20)
  }
  const [api, dashboard] = [m[1], m[2]]
  // A server that does not exit within 5 s of SIGTERM is a bug, but must not outlive the test run.
  const wait = async (signal: NodeJS.Signals) => {
    if (proc.exitCode === null && !proc.killed) proc.kill(signal)
    const timer = setTimeout(() => proc.kill('SIGKILL'), 5000)
    await proc.exited
    clearTimeout(timer)
  }
  return {
    api,
    dashboard,
    dataDir,
    proc,
    output: () => out,
    stdout: () => stdout,
    stop: () => wait('SIGTERM'),
    kill: () => wait('SIGKILL'),
    async cleanup() {
      await wait('SIGTERM')
      rmSync(dataDir, { recursive: true, force: true })
    },
  }
}

/** Servers started in this process by startApp, by their base URL: call() hands them the request directly. */
const inProcess = new Map<string, (request: Request) => Promise<Response>>()
let nextInProcess = 1

export interface InProcessServer {
  /** A base URL that only call() understands: requests go to the app's handle(), not over the network. */
  api: string
  dataDir: string
  /** fetch() for this server: the request goes to the app's handle(). */
  fetch(path: string, init?: RequestInit): Promise<Response>
  /** Stops the server and removes the data dir. */
  cleanup(): Promise<void>
}

/**
 * The whole server in this test process, on a temp data dir, without a listening
 * dashboard; call() goes through `app.handle(new Request(…))`. For route behaviour
 * where no process boundary matters (signals, kill -9, restore, binaries, CLI and
 * the browser keep startServer).
 */
export async function startApp(args: string[] = []): Promise<InProcessServer> {
  const { startServer: start } = await import('../app')
  const { loadConfig } = await import('../lib/config')
  const dataDir = tempDir('muster-app-')
  // Quiet: the server shares the test's stdout (its access lines would bury the test report).
  const { configureLog } = await import('../obs/log')
  configureLog('pretty', 'warn')
  const db = await databaseArgs(dataDir, args)
  const server = await start(loadConfig(['--bind', '127.0.0.1:0', '--dashboard-bind', '', '--data-dir', dataDir, ...db, ...args], {}))
  const api = `http://in-process-${nextInProcess++}.test`
  inProcess.set(api, server.handle)
  return {
    api,
    dataDir,
    fetch: (path, init) => server.handle(new Request(api + path, init)),
    async cleanup() {
      inProcess.delete(api)
      await server.stop()
      rmSync(dataDir, { recursive: true, force: true })
    },
  }
}

/** fetch + parsed JSON body (or text when not JSON). */
export async function call(
  base: string,
  method: string,
  path: string,
  body?: unknown,
  headers: Record<string, string> = {},
): Promise<{ status: number; body: any; headers: Headers; text: string }> {
  const init: RequestInit = { method, headers: { ...headers } }
  if (body !== undefined) {
    init.body = typeof body === 'string' || body instanceof Uint8Array ? (body as BodyInit) : JSON.stringify(body)
    if (!(init.headers as Record<string, string>)['content-type'] && typeof body !== 'string' && !(body instanceof Uint8Array))
      (init.headers as Record<string, string>)['content-type'] = 'application/json'
  }
  const handle = inProcess.get(base)
  const res = handle ? await handle(new Request(base + path, init)) : await fetch(base + path, init)
  const text = await res.text()
  let parsed: any = text
  try {
    parsed = text === '' ? null : JSON.parse(text)
  } catch {}
  return { status: res.status, body: parsed, headers: res.headers, text }
}

/** Polls until fn returns a truthy value or the timeout passes. */
export async function eventually<T>(fn: () => Promise<T> | T, timeoutMs = 5000, stepMs = 25): Promise<T> {
  const deadline = Date.now() + timeoutMs
  for (;;) {
    const v = await fn()
    if (v) return v
    if (Date.now() > deadline) throw new Error('condition not met in time')
    await Bun.sleep(stepMs)
  }
}

/** An instance a test registered. */
export interface Agent {
  id: string
  name: string
  token: string
  /** The header that acts as this instance (`x-instance-token`), to spread into a request's headers. */
  h: Record<string, string>
  /** What POST /api/instances/register answered: the instance's fields and its token. */
  body: Record<string, any>
}

/** What to register: a name, or the fields of the request. */
export type Registration = string | { name: string; workspace?: string; capabilities?: string[]; intent?: string; stack?: string }

/**
 * Registers an instance on `server` (a started server or its base URL) and throws
 * unless it answers 200. `headers` carry the admin token to a server run with --auth-token.
 */
export async function register(server: string | { api: string }, who: Registration, headers: Record<string, string> = {}): Promise<Agent> {
  const fields = typeof who === 'string' ? { name: who } : who
  const r = await call(typeof server === 'string' ? server : server.api, 'POST', '/api/instances/register', fields, headers)
  if (r.status !== 200) throw new Error(`registering ${fields.name}: ${r.status} ${r.text}`)
  return { id: r.body.id, name: r.body.name, token: r.body.token, h: { 'x-instance-token': r.body.token }, body: r.body }
}

// What the CLI prints and how it fails: compact JSON by default (agents pay
// for every byte they read), --pretty on request, and the three exit codes.
import { renameSync, rmSync } from 'node:fs'

/** `check`: the command ran, but what it checked failed (validate --fail-on, contract validate/test). */
export const EXIT = { ok: 0, server: 1, usage: 2, check: 3 } as const

/** Bad invocation or unusable local input (missing file, --data that is not JSON): exit 2. */
export class UsageError extends Error {}

/** The server answered with an error status; `body` is its `{error, code}`: exit 1. */
export class ServerError extends Error {
  constructor(
    readonly status: number,
    readonly body: unknown,
  ) {
    super(`server answered ${status}`)
  }
}

/** The command already said what went wrong on stderr; only the exit code is left (`check`). */
export class Exit extends Error {
  constructor(readonly code: number) {
    super(`exit ${code}`)
  }
}

/** The request never got an answer (connection refused, DNS, reset): exit 1. */
export class ClientError extends Error {}

/** Returned by an action whose check failed: `result` is printed as usual, then exit 3 with `message` on stderr. */
export class CheckFailed extends Error {
  constructor(
    message: string,
    readonly result: unknown,
  ) {
    super(message)
  }
}

let pretty = false

export function setPretty(on: boolean): void {
  pretty = on
}

export function isPretty(): boolean {
  return pretty
}

let debug = false

/** --debug: each request's method, URL and status, and stacks of unexpected failures, on stderr. */
export function setDebug(on: boolean): void {
  debug = on
}

export function isDebug(): boolean {
  return debug
}

export function formatJson(value: unknown): string {
  return pretty ? JSON.stringify(value, null, 2) : JSON.stringify(value)
}

export function printJson(value: unknown): void {
  process.stdout.write(formatJson(value) + '\n')
}

/** Raw bytes to stdout, exactly as given (binary-safe), flushed before returning. */
export async function writeRaw(bytes: Uint8Array): Promise<void> {
  await Bun.write(Bun.stdout, bytes)
}

/** A one-line note for humans on stderr (progress, fallbacks); never on stdout. */
export function note(message: string): void {
  process.stderr.write(`muster: ${message}\n`)
}

/** Prints an error the way the spec asks and returns the exit code for it. */
export function reportError(err: unknown): number {
  if (err instanceof Exit) return err.code
  if (err instanceof ServerError) {
    process.stderr.write(formatJson(err.body) + '\n')
    return EXIT.server
  }
  if (err instanceof UsageError) {
    process.stderr.write(`error: ${err.message}\n(add --help for usage)\n`)
    return EXIT.usage
  }
  if (err instanceof ClientError) {
    process.stderr.write(formatJson({ error: err.message }) + '\n')
    return EXIT.server
  }
  if (err instanceof CheckFailed) {
    note(err.message)
    return EXIT.check
  }
  // A bug or an environment problem: one line for the user, the stack only when asked for.
  const message = `unexpected failure: ${(err as Error)?.message ?? String(err)}`
  process.stderr.write(JSON.stringify({ error: debug ? message : `${message} (--debug shows details)` }) + '\n')
  if (debug && err instanceof Error && err.stack) process.stderr.write(err.stack + '\n')
  return EXIT.server
}

/**
 * Wraps a command action: whatever it returns (other than undefined) is
 * printed as JSON; a CheckFailed is printed the same, then thrown. Errors
 * propagate to cli.ts, which maps them to exit codes.
 */
export function act<A extends unknown[]>(fn: (...args: A) => Promise<unknown> | unknown) {
  return async (...args: A): Promise<void> => {
    const result = await fn(...args)
    if (result instanceof CheckFailed) {
      printJson(result.result)
      throw result
    }
    if (result !== undefined) printJson(result)
  }
}

/** Pretty-prints JSON bytes under --pretty; anything else (or no --pretty) is returned untouched. */
export function maybePretty(bytes: Uint8Array, contentType: string | null): Uint8Array {
  if (!isPretty() || !/json/i.test(contentType ?? '')) return bytes
  try {
    return new TextEncoder().encode(JSON.stringify(JSON.parse(new TextDecoder().decode(bytes)), null, 2) + '\n')
  } catch {
    return bytes
  }
}

/** A raw answer body to stdout: untouched, or reformatted JSON under --pretty. */
export async function printRawResponse(res: Response): Promise<void> {
  await writeRaw(maybePretty(new Uint8Array(await res.arrayBuffer()), res.headers.get('content-type')))
}

/**
 * An --output target: `-` writes `data` to stdout as is (the result then is that output alone),
 * a path is written atomically and the result says where, with `extra`.
 */
export async function writeOutput(path: string, data: string | Uint8Array, extra: Record<string, unknown> = {}): Promise<unknown> {
  if (path === '-') {
    await writeRaw(typeof data === 'string' ? new TextEncoder().encode(data) : data)
    return undefined
  }
  await writeFileAtomic(path, data)
  return { output: path, ...extra }
}

/** Writes next to the target and renames, so a failed transfer never leaves a half file under the real name. */
async function writeFileAtomic(path: string, data: string | Uint8Array): Promise<void> {
  const tmp = `${path}.${process.pid}.part`
  try {
    await Bun.write(tmp, data)
    renameSync(tmp, path)
  } catch (err) {
    rmSync(tmp, { force: true })
    throw new UsageError(`cannot write ${path}: ${(err as Error).message}`)
  }
}

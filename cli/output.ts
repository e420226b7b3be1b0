// What the CLI prints and how it fails: compact JSON when stdout is not a
// terminal (agents pay for every byte they read), --pretty on request; for a
// person at a terminal a table for a list and coloured JSON for the rest;
// -o json|table|yaml and --fields anywhere; and the three exit codes.
import { renameSync, rmSync } from 'node:fs'
import { colorJson, paint } from './color'
import { type FieldPath, fieldNames, pickFields } from './fields'
import { renderTable } from './table'
import { toYaml } from './yaml'

export { CheckFailed, ClientError, EXIT, Exit, ServerError, UsageError } from './errors'
import { CheckFailed, ClientError, EXIT, Exit, ServerError, UsageError } from './errors'

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

export const FORMATS = ['json', 'table', 'yaml'] as const
export type Format = (typeof FORMATS)[number]

interface OutputSettings {
  /** -o; undefined: chosen by where stdout goes. */
  format?: Format
  fields?: FieldPath[]
  tty: boolean
  color: boolean
}

let output: OutputSettings = { tty: false, color: false }
/** Results printed so far: a second YAML document needs its `---`, a second table a blank line. */
let printed = 0

/**
 * -o, --fields and --no-color of this command line. Colour only on a terminal, and
 * never with NO_COLOR set (to any value, even empty) or --no-color.
 */
export function setOutput(given: { format?: Format; fields?: FieldPath[]; noColor?: boolean }): void {
  const tty = !!process.stdout.isTTY
  output = { format: given.format, fields: given.fields, tty, color: tty && !given.noColor && process.env.NO_COLOR === undefined }
  printed = 0
}

/** Columns to fit a table into: the terminal's, else $COLUMNS, else 80. */
const terminalWidth = () => process.stdout.columns || Number(process.env.COLUMNS) || 80

/** A result as text in the chosen format, with the notes (for stderr) that go with it. */
export function formatResult(value: unknown): { text: string; notes: string[] } {
  const notes: string[] = []
  let v = value
  if (output.fields) {
    const known = fieldNames(v)
    const missing = [...new Set(output.fields.map((f) => f[0]!))].filter((f) => !known.includes(f))
    if (known.length && missing.length) notes.push(`--fields: no field ${missing.map((m) => `'${m}'`).join(', ')} here; the fields are ${known.join(', ')}`)
    v = pickFields(v, output.fields)
  }
  const p = paint(output.color)
  const format = output.format ?? (output.tty && Array.isArray(v) ? 'table' : 'json')
  if (format === 'yaml') return { text: (printed ? '---\n' : '') + toYaml(v, p), notes }
  if (format === 'table') {
    const table = renderTable(v, { paint: p, width: output.tty ? terminalWidth() : undefined, hideEmpty: !output.fields })
    return { text: (printed && table.text ? '\n' : '') + table.text, notes: [...notes, ...table.notes] }
  }
  // Compact even on a terminal: a stream (events subscribe, heartbeat --every) stays one line per item.
  return { text: (output.color ? colorJson(v, pretty ? 2 : 0, p) : formatJson(v)) + '\n', notes }
}

/** Prints a command's result in the chosen format (JSON unless told otherwise or on a terminal). */
export function printJson(value: unknown): void {
  const { text, notes } = formatResult(value)
  for (const n of notes) note(n)
  process.stdout.write(text)
  printed++
}

/** -o or --fields given: a raw JSON answer is reformatted like any result. */
const reformatRaw = () => output.format !== undefined || output.fields !== undefined

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
 * printed by printJson in the chosen format; a CheckFailed is printed the same, then thrown. Errors
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

/**
 * A raw answer body to stdout: untouched (a stored value is data, printed as stored),
 * reformatted JSON under --pretty, or, for a JSON value, in the format -o or --fields ask for.
 */
export async function printRawResponse(res: Response): Promise<void> {
  const bytes = new Uint8Array(await res.arrayBuffer())
  const type = res.headers.get('content-type')
  if (reformatRaw() && /json/i.test(type ?? '')) {
    let value: unknown
    try {
      value = JSON.parse(new TextDecoder().decode(bytes))
    } catch {
      return writeRaw(bytes)
    }
    return printJson(value)
  }
  await writeRaw(maybePretty(bytes, type))
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

// Reading what the user hands a command: numeric flags, --data / --file
// payloads (with `-` for stdin), <project>/<name> paths, repeatable flags.
import { existsSync, statSync } from 'node:fs'
import { Command, InvalidArgumentError, Option } from 'commander'
import { parseDuration } from '../lib/time'
import { UsageError } from './output'

/** Commander parser for an integer flag: `--limit abc` is a usage error naming the flag. */
export function integer(min = 0) {
  return (value: string): number => {
    if (!/^-?\d+$/.test(value.trim()) || Number(value) < min) throw new InvalidArgumentError(`expected an integer >= ${min}`)
    return Number(value)
  }
}

/** Commander parser for a duration flag (500ms, 30s, 5m, 1h), in milliseconds. */
export function durationArg(value: string): number {
  const ms = parseDuration(value)
  if (ms === null) throw new InvalidArgumentError('expected a duration like 500ms, 30s, 5m, 1h')
  return ms
}

/** Commander parser for a JSON flag value (--payload, --result). */
export function jsonFlag(value: string): unknown {
  try {
    return JSON.parse(value)
  } catch (err) {
    throw new InvalidArgumentError(`expected JSON (${(err as Error).message})`)
  }
}

/** Commander parser for a non-negative decimal flag (amounts such as --cost 0.012). */
export function decimal(value: string): number {
  const n = Number(value)
  if (value.trim() === '' || !Number.isFinite(n) || n < 0) throw new InvalidArgumentError('expected a number >= 0')
  return n
}

/** Commander parser collecting a repeatable flag into an array. */
export function repeatable(value: string, previous: string[] | undefined): string[] {
  return [...(previous ?? []), value]
}

/** Comma-separated list: "a,b" → ["a", "b"]. */
export function commaList(value: string): string[] {
  return value
    .split(',')
    .map((s) => s.trim())
    .filter(Boolean)
}

export interface PayloadOptions {
  data?: string
  file?: string
}

/** Adds the mutually exclusive --data / --file pair. */
export function withPayload(cmd: Command, what = 'the value', required = true): Command {
  const suffix = required ? '' : ' (optional)'
  return cmd
    .addOption(new Option('--data <value>', `${what} inline${suffix}`).conflicts('file'))
    .addOption(new Option('--file <path>', `read ${what} from a file ('-' for stdin)`))
}

/** The bytes of --data or --file; `required` makes "neither given" a usage error. */
export async function readPayload(opts: PayloadOptions, required = true): Promise<Uint8Array<ArrayBuffer> | undefined> {
  if (opts.data !== undefined) return new TextEncoder().encode(opts.data)
  if (opts.file !== undefined) return readFileArg(opts.file)
  if (required) throw new UsageError('give the value with --data <value> or --file <path>')
  return undefined
}

/** A readable regular file, or a usage error saying what is wrong with the path. */
export function checkFile(path: string): string {
  if (!existsSync(path)) throw new UsageError(`file not found: ${path}`)
  if (statSync(path).isDirectory()) throw new UsageError(`${path} is a directory, not a file`)
  return path
}

export async function readFileArg(path: string): Promise<Uint8Array<ArrayBuffer>> {
  if (path === '-') return new Uint8Array(await Bun.stdin.arrayBuffer())
  return new Uint8Array(await Bun.file(checkFile(path)).arrayBuffer())
}

/** Parses JSON given by the user; `what` names where it came from in the error. */
export function parseJson(bytes: Uint8Array | string, what: string, hint = ''): unknown {
  const text = typeof bytes === 'string' ? bytes : new TextDecoder().decode(bytes)
  try {
    return JSON.parse(text)
  } catch (err) {
    throw new UsageError(`${what} is not valid JSON (${(err as Error).message})${hint}`)
  }
}

/** --data / --file parsed as JSON (for request bodies built by the CLI). */
export async function readJsonPayload(opts: PayloadOptions, required = true): Promise<unknown> {
  const bytes = await readPayload(opts, required)
  if (bytes === undefined) return undefined
  return parseJson(bytes, opts.data !== undefined ? '--data' : opts.file === '-' ? 'stdin' : opts.file!)
}

/** Splits `<project>/<name>`; both parts must be non-empty. */
export function projectPath(value: string): { project: string; name: string } {
  const slash = value.indexOf('/')
  if (slash <= 0 || slash === value.length - 1) throw new UsageError(`expected <project>/<name>, got '${value}'`)
  return { project: value.slice(0, slash), name: value.slice(slash + 1) }
}


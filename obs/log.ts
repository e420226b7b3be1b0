// The server's log, on stdout. `json` writes one JSON object per line for log shippers,
// in pino's own shape ({level: 30, time, pid, hostname, ...fields, msg}, what pino-pretty
// and pino parsers read), with an ISO time rather than epoch ms (they read both; a raw
// line stays readable); `pretty` one readable line per entry for people. The pretty
// writer is a few lines of our own rather than pino-pretty: it needs no worker thread or
// extra dependency inside the compiled binary, and the line is exactly what docs/operations.md shows.
//
// pino writes the lines that carry fields. The lines every server writes are written
// here in the same shape: the access line (every request) and a bare message (the
// listening line), so pino is required with the first line that has fields, not at
// start: with node's stdout stream (not used either, see BatchedStdout) it was a large
// share of a started server's memory and start time.
import type pino from 'pino'
import { writeSync } from 'node:fs'
import { hostname } from 'node:os'
import { isoEachMs } from '../lib/time'
import type { LogFormat, LogLevel } from '../lib/config'
import { AppError } from '../lib/errors'


/**
 * Lines are batched: each goes into a list, and the list is written to stdout in one
 * write, at the end of the event loop's turn when the last write is FLUSH_GAP_MS old,
 * else when it will be. A quiet server's line goes out at once; a busy one makes one
 * syscall per FLUSH_GAP_MS for hundreds of lines (one per turn showed in a cached GET's
 * profile), and there is no per-line bookkeeping (sizing each line cost GET throughput). What is still queued is written when the process exits. If stdout
 * stops draining, at most MAX_PENDING characters wait; lines beyond that are dropped, not
 * the server.
 * Written through Bun's own file sink: node's process.stdout stream costs megabytes to load.
 */
class BatchedStdout {
  private parts: string[] = []
  private size = 0
  private scheduled = false
  private sink: ReturnType<typeof Bun.stdout.writer> | null = null
  /** Characters handed to the sink whose flush has not finished (stdout is not draining). */
  private backlog = 0
  private lastFlush = -Infinity

  write(line: string): boolean {
    if (this.size + this.backlog > MAX_PENDING) return true
    this.parts.push(line)
    this.size += line.length
    if (!this.scheduled) {
      this.scheduled = true
      const wait = this.lastFlush + FLUSH_GAP_MS - performance.now()
      if (wait > 0) setTimeout(this.flush, wait)
      else setImmediate(this.flush)
    }
    return true
  }

  private flush = (): void => {
    this.scheduled = false
    this.lastFlush = performance.now()
    const text = this.take()
    if (!text) return
    try {
      this.sink ??= Bun.stdout.writer()
      this.sink.write(text)
      const flushed = this.sink.flush()
      if (flushed instanceof Promise) {
        this.backlog += text.length
        const done = () => void (this.backlog -= text.length)
        flushed.then(done, done)
      }
    } catch {
      // stdout is gone (EPIPE): nothing can be logged any more, and the server goes on.
    }
  }

  private take(): string {
    if (!this.parts.length) return ''
    const text = this.parts.join('')
    this.parts = []
    this.size = 0
    return text
  }

  /** Everything still queued, written synchronously (before exit). */
  flushSync(): void {
    const text = this.take()
    if (text) writeSync(1, text)
  }
}

const MAX_PENDING = 16 * 1024 * 1024
const FLUSH_GAP_MS = 10
const out = new BatchedStdout()
// On every exit (process.exit after shutdown or a failed start, an uncaught exception), so no queued line is lost.
process.on('exit', () => out.flushSync())

/** `TIME LEVEL message key=value ...`, an error's stack below it: the pretty line. */
function pretty(time: string, level: string, message: string | undefined, fields: Record<string, unknown>, err?: any): string {
  let extra = ''
  for (const k in fields) {
    const v = fields[k]
    extra += ` ${k}=${typeof v === 'string' && !/\s/.test(v) ? v : JSON.stringify(v)}`
  }
  const stack = err ? `\n  ${String(err.stack ?? err.message ?? JSON.stringify(err)).replace(/\n/g, '\n  ')}` : ''
  return `${time} ${level.toUpperCase().padEnd(5)} ${message ?? ''}${extra}${stack}\n`
}

/** Renders one pino JSON line (made without pid and hostname) as the pretty line. */
export function prettyLine(line: string): string {
  const { time, level, msg, err, ...fields } = JSON.parse(line)
  return pretty(time, LABEL[level] ?? String(level), msg, fields, err)
}

/** What pino puts after level and time on every line by default (its `base`), written once. */
const BASE = `"pid":${process.pid},"hostname":${JSON.stringify(hostname())}`

/** A line of a bare message, as pino writes it (level, time, pid, hostname, msg) or its pretty form. */
function messageLine(level: LogLevel, message: string): string {
  const time = isoNow()
  return currentFormat === 'pretty' ? pretty(time, level, message, {}) : `{"level":${RANK[level]},"time":"${time}",${BASE},"msg":${JSON.stringify(message)}}\n`
}

export interface AccessEntry {
  method: string
  route: string
  path: string
  status: number
  duration_ms: number
  actor: string | null
}

/** A pretty line's value: bare when it has no whitespace, else JSON (as pretty() writes it). */
const bare = (v: string | null) => (v !== null && !/\s/.test(v) ? v : JSON.stringify(v))

/** `render`, remembered: an access line's method, route and actor come from small sets (the table starts over past 1,024). */
function remembered(render: (v: string | null) => string): (v: string | null) => string {
  const known = new Map<string | null, string>()
  return (v) => {
    let text = known.get(v)
    if (text === undefined) {
      if (known.size >= 1024) known.clear()
      known.set(v, (text = render(v)))
    }
    return text
  }
}
const [bareName, jsonName] = [remembered(bare), remembered((v) => JSON.stringify(v))]

/**
 * The access line of one request, written without pino's generic path: it is the
 * one line every request pays for (in the pretty format pino's JSON would otherwise be
 * built and parsed again), and its fields are fixed. Same shape as any other line.
 */
export function accessLog(e: AccessEntry): void {
  if (!accessLines) return
  const time = isoNow()
  const message = `${e.method} ${e.path} ${e.status}`
  if (currentFormat === 'pretty')
    return void out.write(
      `${time} INFO  ${message} method=${bareName(e.method)} route=${bareName(e.route)} path=${bare(e.path)} status=${e.status} duration_ms=${e.duration_ms} actor=${bareName(e.actor)}\n`,
    )
  out.write(
    `{"level":30,"time":"${time}",${BASE},"method":${jsonName(e.method)},"route":${jsonName(e.route)},"path":${JSON.stringify(e.path)},` +
      `"status":${e.status},"duration_ms":${e.duration_ms},"actor":${jsonName(e.actor)},"msg":${JSON.stringify(message)}}\n`,
  )
}

/** A line's time: this machine's clock, as an ISO string made once per millisecond. */
const isoNow = isoEachMs(Date.now)

let currentFormat: LogFormat = 'pretty'
/** Whether access lines (info) pass the level: asking the logger on every request costs more than this flag. */
let accessLines = true

/** pino's level numbers, which its JSON lines carry as `level`. */
const RANK: Record<LogLevel, number> = { debug: 20, info: 30, warn: 40, error: 50 }
const LABEL: Record<number, LogLevel> = { 20: 'debug', 30: 'info', 40: 'warn', 50: 'error' }

type LogFn = { (message: string): void; (fields: object, message?: string): void }

/** pino's logging methods (the ones the server uses), in front of a pino logger made on first need. */
export class Logger {
  private made: pino.Logger | null = null

  constructor(
    private level: LogLevel,
    private hasBindings: boolean,
    private make: () => pino.Logger,
  ) {}

  readonly debug = this.at('debug')
  readonly info = this.at('info')
  readonly warn = this.at('warn')
  readonly error = this.at('error')

  private at(level: LogLevel): LogFn {
    return (fieldsOrMessage: object | string, message?: string) => {
      if (RANK[level] < RANK[this.level]) return
      if (typeof fieldsOrMessage === 'string' && !this.hasBindings) return void out.write(messageLine(level, fieldsOrMessage))
      ;(this.made ??= this.make())[level](fieldsOrMessage as object, message)
    }
  }

  /** pino's child: these fields on every line, and its own level. */
  child(bindings: object, options: { level?: LogLevel } = {}): Logger {
    return new Logger(options.level ?? this.level, Object.keys(bindings).length > 0, () => (this.made ??= this.make()).child(bindings, options))
  }
}

function pinoLogger(format: LogFormat, level: LogLevel): pino.Logger {
  const pino = require('pino') as typeof import('pino')
  const dest = format === 'json' ? out : { write: (line: string) => out.write(prettyLine(line)) }
  // pino's defaults but the ISO time; the pretty line shows no pid or hostname, so it is not given them.
  const options: pino.LoggerOptions = { level, timestamp: pino.stdTimeFunctions.isoTime }
  if (format === 'pretty') options.base = undefined
  return pino(options, dest)
}

function build(format: LogFormat, level: LogLevel): Logger {
  currentFormat = format
  accessLines = RANK[level] <= RANK.info
  return new Logger(level, false, () => pinoLogger(format, level))
}

/** The process-wide logger; `configureLog` (app.ts, from the flags) replaces it before the server starts. */
export let log: Logger = build('pretty', 'info')

export function configureLog(format: LogFormat, level: LogLevel): void {
  log = build(format, level)
}

/** Whether `err` is the database being unreachable (an outage, not a bug). */
export const isOutage = (err: unknown): boolean => err instanceof AppError && err.kind === 'unavailable'

/**
 * A failure of work no request waits for (an audit entry, an agent metric count, an
 * implicit heartbeat, a job run): during a database outage a warning naming it, since
 * every such write fails until the database is back; anything else an error with its stack.
 */
export function logFailure(what: string, err: unknown, fields: object = {}): void {
  if (isOutage(err)) log.warn(fields, `${what}: ${(err as Error).message}`)
  else log.error({ ...fields, err }, what)
}

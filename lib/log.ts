// The server's log: pino, on stdout. `json` writes one JSON object per line
// ({level, time, message, ...fields}) for log shippers; `pretty` one readable
// line per entry for people. The pretty writer is a few lines of our own rather than
// pino-pretty: it needs no worker thread or extra dependency inside the compiled
// binary, and the line is exactly what the README shows.
import pino from 'pino'
import { writeSync } from 'node:fs'

export const LOG_FORMATS = ['json', 'pretty'] as const
export const LOG_LEVELS = ['debug', 'info', 'warn', 'error'] as const
export type LogFormat = (typeof LOG_FORMATS)[number]
export type LogLevel = (typeof LOG_LEVELS)[number]

/**
 * Lines are batched: each goes into a list, and the list is written to stdout once per
 * turn of the event loop, in one write. Under load that is one syscall for many lines
 * and no per-line bookkeeping (sizing each line cost a tenth of GET throughput).
 * flushLog() before exiting writes what is still queued. If stdout stops draining, at
 * most MAX_PENDING characters wait; lines beyond that are dropped, not the server.
 */
class BatchedStdout {
  private parts: string[] = []
  private size = 0
  private scheduled = false

  write(line: string): boolean {
    if (this.size + (process.stdout.writableLength ?? 0) > MAX_PENDING) return true
    this.parts.push(line)
    this.size += line.length
    if (!this.scheduled) {
      this.scheduled = true
      setImmediate(() => this.flush())
    }
    return true
  }

  private flush(): void {
    this.scheduled = false
    if (!this.parts.length) return
    const text = this.parts.join('')
    this.parts = []
    this.size = 0
    process.stdout.write(text)
  }

  /** Everything still queued, written synchronously (before exit). */
  flushSync(): void {
    if (!this.parts.length) return
    const text = this.parts.join('')
    this.parts = []
    this.size = 0
    writeSync(1, text)
  }
}

const MAX_PENDING = 16 * 1024 * 1024
const out = new BatchedStdout()

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

/** Renders one pino JSON line as the pretty line. */
export function prettyLine(line: string): string {
  const { time, level, message, err, ...fields } = JSON.parse(line)
  return pretty(time, String(level), message, fields, err)
}

export interface AccessEntry {
  method: string
  route: string
  path: string
  status: number
  duration_ms: number
  actor: string | null
}

/**
 * The access line of one request, written without pino's generic path: it is the
 * one line every request pays for (in the pretty format pino's JSON would otherwise be
 * built and parsed again), and its fields are fixed. Same shape as any other line.
 */
export function accessLog(e: AccessEntry): void {
  if (!log.isLevelEnabled('info')) return
  const time = new Date().toISOString()
  const message = `${e.method} ${e.path} ${e.status}`
  if (currentFormat === 'pretty') return void out.write(pretty(time, 'info', message, e as unknown as Record<string, unknown>))
  out.write(
    `{"level":"info","time":"${time}","method":${JSON.stringify(e.method)},"route":${JSON.stringify(e.route)},"path":${JSON.stringify(e.path)},` +
      `"status":${e.status},"duration_ms":${e.duration_ms},"actor":${JSON.stringify(e.actor)},"message":${JSON.stringify(message)}}\n`,
  )
}

let currentFormat: LogFormat = 'pretty'

function build(format: LogFormat, level: LogLevel): pino.Logger {
  currentFormat = format
  const dest = format === 'json' ? out : { write: (line: string) => out.write(prettyLine(line)) }
  return pino(
    {
      level,
      messageKey: 'message',
      base: undefined,
      timestamp: pino.stdTimeFunctions.isoTime,
      formatters: { level: (label) => ({ level: label }) },
    },
    dest,
  )
}

/** The process-wide logger; `configureLog` (app.ts, from the flags) replaces it before the server starts. */
export let log: pino.Logger = build('pretty', 'info')

export function configureLog(format: LogFormat, level: LogLevel): void {
  log = build(format, level)
}

/** Writes out every queued line; call before process.exit. */
export function flushLog(): void {
  out.flushSync()
}

// The server's log: pino, on stdout. `json` writes one JSON object per line
// ({level, time, message, ...fields}) for log shippers; `pretty` one readable
// line per entry for people. The pretty writer is a few lines of our own rather than
// pino-pretty: it needs no worker thread or extra dependency inside the compiled
// binary, and the line is exactly what the README shows.
import pino from 'pino'

export const LOG_FORMATS = ['json', 'pretty'] as const
export const LOG_LEVELS = ['debug', 'info', 'warn', 'error'] as const
export type LogFormat = (typeof LOG_FORMATS)[number]
export type LogLevel = (typeof LOG_LEVELS)[number]

// Asynchronous writes: under load lines queue up and go out in few syscalls (an access
// line per request cost a third of GET throughput with synchronous writes, about a tenth
// this way). flushLog() before exiting writes what is still queued. If stdout stops
// draining, at most 16 MB wait in memory; lines beyond that are dropped, not the server.
const out = pino.destination({ dest: 1, sync: false, maxLength: 16 * 1024 * 1024 })

/** Renders one pino JSON line as `TIME LEVEL message key=value ...`, an error's stack below it. */
export function prettyLine(line: string): string {
  const { time, level, message, err, ...fields } = JSON.parse(line)
  const extra = Object.entries(fields)
    .map(([k, v]) => `${k}=${typeof v === 'string' && !/\s/.test(v) ? v : JSON.stringify(v)}`)
    .join(' ')
  const stack = err ? `\n  ${String(err.stack ?? err.message ?? JSON.stringify(err)).replace(/\n/g, '\n  ')}` : ''
  return `${time} ${String(level).toUpperCase().padEnd(5)} ${message ?? ''}${extra ? ` ${extra}` : ''}${stack}\n`
}

function build(format: LogFormat, level: LogLevel): pino.Logger {
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

// The server's log: pino, on stdout. `json` writes one JSON object per line
// ({level, time, message, ...fields}) for log shippers; `pretty` one readable
// line per entry for people. The pretty writer is our own few lines rather than
// pino-pretty, whose transport runs on a worker thread that `bun build --compile`
// cannot bundle.
import pino from 'pino'

export const LOG_FORMATS = ['json', 'pretty'] as const
export const LOG_LEVELS = ['debug', 'info', 'warn', 'error'] as const
export type LogFormat = (typeof LOG_FORMATS)[number]
export type LogLevel = (typeof LOG_LEVELS)[number]

/** Synchronous writes: a line logged just before exit (or before a test reads stdout) is never lost. */
const stdout = () => pino.destination({ dest: 1, sync: true })

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
  const out = stdout()
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

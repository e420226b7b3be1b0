// Global flags may stand anywhere before `--` (agents append them wherever is
// handy), so they are taken out of argv before commander parses the rest and no
// subcommand has to declare them.
import { type FieldPath, parseFields } from './fields'
import { FORMATS, type Format, UsageError } from './output'

export interface Globals {
  pretty: boolean
  debug: boolean
  /** --no-color: no ANSI colour even on a terminal (as NO_COLOR does). */
  noColor: boolean
  /** --server / --token: beat SERVICE_SERVER / SERVICE_TOKEN and ./settings.json. */
  server?: string
  token?: string
  /** -o json|table|yaml; unset: chosen by whether stdout is a terminal. */
  format?: Format
  /** --fields a,b.c */
  fields?: FieldPath[]
}

const SWITCHES = { '--pretty': 'pretty', '--debug': 'debug', '--no-color': 'noColor' } as const
const VALUED = { '--server': 'server', '--token': 'token', '-o': 'format', '--fields': 'fields' } as const

function format(value: string): Format {
  if ((FORMATS as readonly string[]).includes(value)) return value as Format
  throw new UsageError(`option '-o <format>' argument '${value}' is invalid. Allowed choices are ${FORMATS.join(', ')}.`)
}

/** Splits argv into the global flags and the command line commander sees. */
export function extractGlobals(argv: string[]): { globals: Globals; args: string[] } {
  const globals: Globals = { pretty: false, debug: false, noColor: false }
  const args: string[] = []
  for (let i = 0; i < argv.length; i++) {
    const arg = argv[i]!
    if (arg === '--') {
      args.push(...argv.slice(i))
      break
    }
    if (arg in SWITCHES) {
      globals[SWITCHES[arg as keyof typeof SWITCHES]] = true
      continue
    }
    // `-oyaml` is `-o yaml`, as for any short option.
    const eq = arg.startsWith('-o') && arg.length > 2 && arg[2] !== '=' ? 2 : arg.indexOf('=')
    const flag = eq === -1 ? arg : arg.slice(0, eq)
    if (!(flag in VALUED)) {
      args.push(arg)
      continue
    }
    let value: string | undefined
    if (eq !== -1) value = arg.slice(arg[eq] === '=' ? eq + 1 : eq)
    else if (i + 1 < argv.length) value = argv[++i]
    else throw new UsageError(`option '${flag} <value>' argument missing`)
    // An empty value counts as not given, as for the environment variables.
    if (value === '') continue
    const key = VALUED[flag as keyof typeof VALUED]
    if (key === 'format') globals.format = format(value)
    else if (key === 'fields') globals.fields = parseFields(value)
    else globals[key] = value
  }
  return { globals, args }
}

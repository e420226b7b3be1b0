// Global flags may stand anywhere before `--` (agents append them wherever is
// handy), so they are taken out of argv before commander parses the rest and no
// subcommand has to declare them.
import { UsageError } from './output'

export interface Globals {
  pretty: boolean
  debug: boolean
  /** --server / --token: beat SERVICE_SERVER / SERVICE_TOKEN and ./settings.json. */
  server?: string
  token?: string
}

const SWITCHES = { '--pretty': 'pretty', '--debug': 'debug' } as const
const VALUED = { '--server': 'server', '--token': 'token' } as const

/** Splits argv into the global flags and the command line commander sees. */
export function extractGlobals(argv: string[]): { globals: Globals; args: string[] } {
  const globals: Globals = { pretty: false, debug: false }
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
    const eq = arg.indexOf('=')
    const flag = eq === -1 ? arg : arg.slice(0, eq)
    if (!(flag in VALUED)) {
      args.push(arg)
      continue
    }
    let value: string | undefined
    if (eq !== -1) value = arg.slice(eq + 1)
    else if (i + 1 < argv.length) value = argv[++i]
    else throw new UsageError(`option '${flag} <value>' argument missing`)
    // An empty value counts as not given, as for the environment variables.
    if (value !== '') globals[VALUED[flag as keyof typeof VALUED]] = value
  }
  return { globals, args }
}

// A configuration file the CLI cannot use is one line on stderr and exit 2, without
// the usage hint a bad command line gets: the command was fine, the file is not.
import { EXIT, Exit, note } from './output'

/** Thrown after its line is on stderr, so only the exit code is left to report; `reason` for callers that say it their own way. */
export class ConfigError extends Exit {
  constructor(readonly reason: string) {
    super(EXIT.usage)
  }
}

export function configError(reason: string): never {
  note(reason)
  throw new ConfigError(reason)
}

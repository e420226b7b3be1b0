// A configuration file the CLI cannot use is one line on stderr and exit 2, without
// the usage hint a bad command line gets: the command was fine, the file is not.
import { EXIT, Exit, note } from './output'

/** Thrown after its line is on stderr (unless a caller says it its own way), so only the exit code is left to report. */
export class ConfigError extends Exit {
  constructor(readonly reason: string) {
    super(EXIT.usage)
  }
}

let printed = true

/** For a command with its own way of reporting (`muster hook`): ConfigErrors are thrown without a line of their own. */
export function reportConfigErrorsMyself(): void {
  printed = false
}

export function configError(reason: string): never {
  if (printed) note(reason)
  throw new ConfigError(reason)
}

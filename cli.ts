#!/usr/bin/env bun
// muster: the command-line client. Each command group lives in cli/<group>.ts;
// this file assembles them, strips the global --pretty wherever it stands, and
// turns every outcome into an exit code: 0 ok, 1 server error, 2 usage error.
import { Command, CommanderError } from 'commander'
import { auditCommands } from './cli/audit'
import { backupCommands } from './cli/backup'
import { complianceCommands } from './cli/compliance'
import { configCommands } from './cli/config'
import { contractCommands } from './cli/contracts'
import { eventsCommands } from './cli/events'
import { instanceCommands } from './cli/instances'
import { llmCommands } from './cli/llm'
import { lockCommands } from './cli/locks'
import { reservationCommands } from './cli/reservations'
import { metricsCommands } from './cli/metrics'
import { EXIT, reportError, setPretty } from './cli/output'
import { rulesCommands } from './cli/rules'
import { specsCommands } from './cli/specs'
import { stateCommands } from './cli/state'
import { templateCommands } from './cli/templates'
import { webhookCommands } from './cli/webhooks'

export function buildProgram(): Command {
  const program = new Command('muster')
    .description(
      'Client for the Muster coordination server. Config: ./settings.json {server, token}; env SERVICE_SERVER and SERVICE_TOKEN override it. Output is compact JSON.',
    )
    // Documented here for --help; main() removes it from argv before parsing.
    .option('--pretty', 'pretty-print JSON output (allowed anywhere in the command)')
    .exitOverride()
    .enablePositionalOptions()
    .showHelpAfterError('(add --help for usage)')

  for (const register of [
    configCommands,
    stateCommands,
    specsCommands,
    eventsCommands,
    instanceCommands,
    webhookCommands,
    complianceCommands,
    templateCommands,
    auditCommands,
    metricsCommands,
    llmCommands,
    rulesCommands,
    contractCommands,
    backupCommands,
    lockCommands,
    reservationCommands,
  ])
    register(program)
  // --pretty is stripped before parsing, so no subcommand declares it; say so in every help page.
  const mention = (cmd: Command) => {
    if (cmd !== program) cmd.addHelpText('after', '\nGlobal option: --pretty pretty-prints JSON output (allowed anywhere in the command)')
    cmd.commands.forEach(mention)
  }
  mention(program)
  return program
}

/** Runs one command line and returns its exit code. */
export async function main(argv: string[]): Promise<number> {
  const end = argv.indexOf('--')
  const flagsPart = end === -1 ? argv : argv.slice(0, end)
  setPretty(flagsPart.includes('--pretty'))
  const args = [...flagsPart.filter((a) => a !== '--pretty'), ...(end === -1 ? [] : argv.slice(end))]
  const program = buildProgram()
  if (args.length === 0) {
    program.outputHelp({ error: true })
    return EXIT.usage
  }
  try {
    await program.parseAsync(args, { from: 'user' })
    return EXIT.ok
  } catch (err) {
    if (err instanceof CommanderError) {
      // Commander has already printed help or its message (unknown command, missing argument, ...).
      return err.exitCode === 0 ? EXIT.ok : EXIT.usage
    }
    return reportError(err)
  }
}

if (import.meta.main) {
  // A reader that stops early (`muster events subscribe | head -1`) is not an error.
  process.stdout.on('error', (err: NodeJS.ErrnoException) => {
    if (err.code === 'EPIPE') process.exit(EXIT.ok)
    throw err
  })
  process.exitCode = await main(process.argv.slice(2))
}

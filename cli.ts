#!/usr/bin/env bun
// muster: the command-line client. Each command group lives in cli/<group>.ts;
// this file assembles them, takes the global flags out wherever they stand, and
// turns every outcome into an exit code: 0 ok, 1 server error, 2 usage error,
// 3 a check that failed.
import { Command, CommanderError } from 'commander'
import { approvalCommands } from './cli/approvals'
import { auditCommands } from './cli/audit'
import { backupCommands } from './cli/backup'
import { budgetCommands } from './cli/budgets'
import { setFlagOverrides } from './cli/client'
import { completionCommand } from './cli/completion'
import { complianceCommands } from './cli/compliance'
import { configCommands } from './cli/config'
import { doctorCommand } from './cli/doctor'
import { contractCommands } from './cli/contracts'
import { eventsCommands } from './cli/events'
import { addExamples } from './cli/examples'
import { extractGlobals } from './cli/globals'
import { hookCommands } from './cli/hooks'
import { gitGuardCommands } from './cli/git-guard'
import { instanceCommands } from './cli/instances'
import { llmCommands } from './cli/llm'
import { lockCommands } from './cli/locks'
import { messageCommands } from './cli/messages'
import { completeNames } from './cli/names'
import { reservationCommands } from './cli/reservations'
import { metricsCommands } from './cli/metrics'
import { EXIT, reportError, setDebug, setOutput, setPretty } from './cli/output'
import { rulesCommands } from './cli/rules'
import { specsCommands } from './cli/specs'
import { stateCommands } from './cli/state'
import { taskCommands } from './cli/tasks'
import { tokenCommands } from './cli/tokens'
import { projectCommands } from './cli/projects'
import { templateCommands } from './cli/templates'
import { webhookCommands } from './cli/webhooks'
import { VERSION } from './lib/version'

const GLOBALS_NOTE =
  'Global options (anywhere in the command): --server <url>, --token <token> (beat SERVICE_* / MUSTER_* env and settings.json), -o json|table|yaml, --fields <a,b.c>, --pretty, --no-color, --debug'

export function buildProgram(): Command {
  const program = new Command('muster')
    .description(
      'Client for the Muster coordination server. Config: settings.json {server, token}, the nearest from here up to the git root; env MUSTER_SERVER / MUSTER_TOKEN override it, SERVICE_SERVER / SERVICE_TOKEN override those, --server and --token override all. What the CLI learns about itself (its instance, its claims) is kept in .muster/ at the git root, ignored by git. Output is compact JSON when stdout is not a terminal; on a terminal a list prints as a table and anything else as coloured JSON (-o chooses). Exit codes: 0 ok, 1 server error, 2 usage error, 3 a check failed.',
    )
    .version(VERSION, '-V, --version', 'print the version')
    // Documented here for --help; main() takes them out of argv before parsing (see cli/globals.ts).
    .option('--server <url>', 'server URL (beats SERVICE_SERVER, MUSTER_SERVER and settings.json)')
    .option('--token <token>', 'API token (beats SERVICE_TOKEN, MUSTER_TOKEN and settings.json)')
    .option('-o <format>', 'json, table (a list as columns, an object as key/value lines) or yaml; default: json, or table for a list on a terminal')
    .option('--fields <list>', 'keep only these fields, comma-separated; a.b reaches into nested objects (any -o)')
    .option('--pretty', 'pretty-print JSON output')
    .option('--no-color', 'no colour on a terminal either (as the NO_COLOR environment variable)')
    .option('--debug', 'print each request and the details of unexpected failures to stderr')
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
    budgetCommands,
    rulesCommands,
    contractCommands,
    backupCommands,
    completionCommand,
    taskCommands,
    lockCommands,
    reservationCommands,
    hookCommands,
    gitGuardCommands,
    doctorCommand,
    messageCommands,
    tokenCommands,
    projectCommands,
    approvalCommands,
  ])
    register(program)
  addExamples(program)
  // Global flags are taken out before parsing, so no subcommand declares them; say so in every help page.
  const mention = (cmd: Command) => {
    if (cmd !== program) cmd.addHelpText('after', `\n${GLOBALS_NOTE}`)
    cmd.commands.forEach(mention)
  }
  mention(program)
  return program
}

/** Runs one command line and returns its exit code. */
export async function main(argv: string[]): Promise<number> {
  let parsed: ReturnType<typeof extractGlobals>
  try {
    parsed = extractGlobals(argv)
  } catch (err) {
    return reportError(err)
  }
  const { globals, args } = parsed
  setPretty(globals.pretty)
  setOutput(globals)
  setDebug(globals.debug)
  setFlagOverrides(globals)
  // What the shell completion scripts call on <TAB>: names from the server, before any parsing.
  if (args[0] === '__complete') return completeNames(args.slice(1), buildProgram)
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

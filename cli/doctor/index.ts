// `muster doctor`: checks an agent's wiring from inside the repository, one line per
// finding with its fix, and exits 3 when something is broken. Each group of checks is a
// file of this folder; a new one is a file and a line in CHECKS.
import type { Command } from 'commander'
import { EXIT, Exit } from '../output'
import { agentChecks } from './agents'
import { clineCheck } from './cline'
import { doctorContext, type Check, type Finding } from './check'
import { codexSandboxCheck } from './codex-sandbox'
import { codexTrustCheck } from './codex-trust'
import { geminiTrustCheck } from './gemini-trust'
import { gitGuardCheck } from './git'
import { identityCheck } from './identity'
import { projectCaseDoctorCheck } from './project-case'
import { serverChecks } from './server'
import { tokenEnvCheck } from './token-env'

export type { Check, Finding } from './check'

/** In the order they print. */
export const CHECKS: Check[] = [serverChecks, identityCheck, agentChecks, clineCheck, codexTrustCheck, geminiTrustCheck, tokenEnvCheck, codexSandboxCheck, projectCaseDoctorCheck, gitGuardCheck]

export async function runDoctor(checks: Check[] = CHECKS): Promise<Finding[]> {
  const ctx = doctorContext()
  const out: Finding[] = []
  for (const check of checks) {
    try {
      out.push(...(await check(ctx)))
    } catch (err) {
      out.push({ status: 'fail', check: 'doctor', message: `a check failed to run: ${(err as Error).message}` })
    }
  }
  return out
}

const LABEL = { ok: 'ok  ', warn: 'warn', fail: 'FAIL' } as const

export const formatFinding = (f: Finding) => `${LABEL[f.status]} ${f.check}: ${f.message}${f.fix && f.status !== 'ok' ? ` -- fix: ${f.fix}` : ''}`

export function doctorCommand(program: Command): void {
  program
    .command('doctor')
    .description("check this repository's agent wiring: server, token and role, identity, hooks per agent, muster on PATH, Codex's trust of its hooks, Gemini CLI's trust of the folder, the http hooks' token variable, Codex's sandbox network, the project's path case against core.ignorecase, the git guards; one line per finding with its fix, exit 3 when something is broken")
    .option('--json', 'the findings as a JSON array')
    .action(async (o: { json?: boolean }) => {
      const findings = await runDoctor()
      process.stdout.write(o.json ? JSON.stringify(findings) + '\n' : findings.map(formatFinding).join('\n') + '\n')
      if (findings.some((f) => f.status === 'fail')) throw new Exit(EXIT.check)
    })
}

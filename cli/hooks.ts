// `muster hook <agent>`: what a command hook runs. The event comes on stdin and
// goes to POST /api/hooks/{agent} with the X-Muster-* headers (MUSTER_AGENT,
// MUSTER_PROJECT, MUSTER_RESERVE, and the git root of the event's cwd as X-Muster-Root and
// X-Muster-Git-Root: services/hooks/session.ts holds a new session to it); the answer
// goes to stdout as the agent expects it. A server that cannot be reached must not stop
// the agent: one line on stderr, exit 0 — unless --fail-closed (exit 2 blocks the call).
// `muster init` (cli/init.ts) writes the hook configuration.
// At SessionStart the server says, in headers only, which instance the session acts as:
// that becomes the identity of the agent's shell commands with no step by the model
// (.muster/agents/<name>.json at the git root, and Claude Code's CLAUDE_ENV_FILE); the
// answer printed for the model never carries the token.
import { appendFileSync, existsSync } from 'node:fs'
import type { Command } from 'commander'
import { agentFile, AGENT_ENV, readIdentity, SESSION_ENV, TOKEN_ENV, writeIdentity } from './identity'
import { api, authHeaders, resolveConfig } from './client'
import { ConfigError, reportConfigErrorsMyself } from './config-error'
import { integer } from './input'
import { Exit, UsageError, act, printJson } from './output'
import { codexHooksTrust, trustCodexHooks } from './codex-trust'
import { CODEX_NETWORK_SETTING, hookTokenProblem, INIT_AGENTS, planInit, writeInit, type InitAgent } from './init'
import { completeEvent, HOOK_CLIS, runningAgent, type HookCli } from './hook-agents'
import { geminiTrustFile, geminiTrusts } from './init/gemini-cli'
import { clineMcpNote } from './init/cline'
import { initGit } from './git-guard'
import { gitRoot } from './git-repo'
import { setProjectCase } from './project-case'

/** Hooks run on every tool call: a server that does not answer in this long counts as unreachable. */
const HOOK_TIMEOUT_MS = 8000
/** A permission request waits for a person (at most the server's 10m): the request may take that long, and a little more. */
const APPROVAL_TIMEOUT_MS = 10 * 60_000 + 15_000

const HOOK_AGENTS = Object.keys(HOOK_CLIS)
const INIT_NAMES = Object.keys(INIT_AGENTS)

function agentArg(value: string): InitAgent | 'git' {
  if (value === 'git') return value
  if (!INIT_NAMES.includes(value)) throw new UsageError(`unknown agent "${value}": expected ${[...INIT_NAMES, 'git'].join(', ')}`)
  return value as InitAgent
}

/** The event as JSON, read cheaply (the server validates it); {} when it is not an object. */
function readEvent(text: string): Record<string, unknown> {
  try {
    const e = JSON.parse(text)
    return e && typeof e === 'object' && !Array.isArray(e) ? e : {}
  } catch {
    return {}
  }
}

/** How long the server may take to answer this event. */
function budgetFor(cli: HookCli, event: Record<string, unknown>): number {
  const name = cli.eventName(event)
  if (name && cli.approvals.includes(name)) return APPROVAL_TIMEOUT_MS
  return (name && cli.limits[name]) || HOOK_TIMEOUT_MS
}

/** The git root of the event's cwd when it names a directory here (null outside a repository), else of the working directory. */
function gitRootOf(cli: HookCli, event: Record<string, unknown>): string | null {
  const cwd = cli.cwd(event)
  return cwd && existsSync(cwd) ? gitRoot(cwd) : gitRoot()
}

async function forward(hookAgent: string, named: string | undefined, o: { failClosed?: boolean; reserve?: string; approvalWait?: string }): Promise<void> {
  // Whatever goes wrong here must not stop the agent unless asked: exit 2 blocks its tool call.
  const fail = (why: string): never => {
    process.stderr.write(`muster hook: ${why}; ${o.failClosed ? 'blocking (--fail-closed)' : 'the agent goes on without coordination'}\n`)
    throw new Exit(o.failClosed ? 2 : 0)
  }
  if (!HOOK_CLIS[hookAgent]) return fail(`unknown agent "${hookAgent}": expected ${HOOK_AGENTS.join(', ')}`)
  const agentName = runningAgent(hookAgent, process.env)
  const cli = HOOK_CLIS[agentName]
  const event = completeEvent(agentName, await Bun.stdin.text(), named)
  const parsed = readEvent(event)
  let cfg: ReturnType<typeof resolveConfig>
  reportConfigErrorsMyself()
  try {
    cfg = resolveConfig()
  } catch (err) {
    return fail(err instanceof ConfigError ? err.reason : (err as Error).message)
  }
  const headers: Record<string, string> = { 'content-type': 'application/json' }
  const auth = authHeaders(cfg).authorization
  if (auth) headers.authorization = auth
  const set = (name: string, value: string | null | undefined) => value && (headers[name] = value)
  set('x-muster-agent', process.env.MUSTER_AGENT)
  set('x-muster-project', process.env.MUSTER_PROJECT)
  set('x-muster-reserve', o.reserve ?? process.env.MUSTER_RESERVE)
  // The git root of the event's cwd (where the agent resolves relative paths), else of ours:
  // the session's root, and said to be the git root so the server corrects any other.
  const root = gitRootOf(cli, parsed)
  set('x-muster-root', root)
  set('x-muster-git-root', root)
  set('x-muster-approval-wait', o.approvalWait)
  let res: Response
  try {
    res = await fetch(`${cfg.server}/api/hooks/${agentName}`, { method: 'POST', headers, body: event, signal: AbortSignal.timeout(budgetFor(cli, parsed)) })
  } catch (err) {
    return fail(`cannot reach ${cfg.server} (${(err as Error).message})`)
  }
  const text = await res.text()
  if (!res.ok) return fail(`${cfg.server} answered ${res.status}: ${text.slice(0, 300).replace(/\s+/g, ' ')}`)
  try {
    handOver(res.headers, cfg.server, root)
  } catch (err) {
    // The hook's answer still goes to the agent: only the shell's identity is missing.
    process.stderr.write(`muster hook: could not hand the session's identity to the shell (${(err as Error).message})\n`)
  }
  const out = cli.identityInAnswer ? withIdentity(text, res.headers) : text
  process.stdout.write(out.endsWith('\n') ? out : `${out}\n`)
}

/** The answer with `muster: {agent, session}` when the server said who the session acts as (a plugin sets its shell's MUSTER_AGENT from it). */
function withIdentity(text: string, headers: Headers): string {
  const name = headers.get('x-muster-instance-name')
  if (!name || !headers.get('x-muster-instance-token')) return text
  try {
    const answer = JSON.parse(text)
    if (!answer || typeof answer !== 'object' || Array.isArray(answer)) return text
    return JSON.stringify({ ...answer, muster: { agent: decodeURIComponent(name), session: decodeURIComponent(headers.get('x-muster-session') ?? '') } })
  } catch {
    return text
  }
}

/** A value for a line `export NAME=value` of a file bash sources. */
const shellQuote = (v: string) => `'${v.replaceAll("'", `'\\''`)}'`

/**
 * Makes the session's instance the identity of the agent's shell commands (SessionStart),
 * or forgets it when the session is over for good (SessionEnd not held for /clear or resume).
 */
function handOver(headers: Headers, server: string, root: string | null): void {
  const id = headers.get('x-muster-instance-id')
  const name = headers.get('x-muster-instance-name')
  if (!id || !name) return
  const agent = decodeURIComponent(name)
  const session = decodeURIComponent(headers.get('x-muster-session') ?? '')
  const file = root ? agentFile(agent, root) : null
  const token = headers.get('x-muster-instance-token')
  if (token) {
    if (file) {
      const saved = readIdentity(file)
      const claims = saved?.instance_id === id ? saved.claims : undefined
      writeIdentity({ name: agent, server, instance_id: id, instance_token: token, ...(claims ? { claims } : {}) }, file, root!)
    }
    const envFile = process.env.CLAUDE_ENV_FILE
    if (envFile) {
      const lines = [[TOKEN_ENV, token], [AGENT_ENV, agent], [SESSION_ENV, session]].map(([k, v]) => `export ${k}=${shellQuote(v)}`)
      appendFileSync(envFile, lines.join('\n') + '\n', { mode: 0o600 })
    }
  } else if (headers.get('x-muster-held') === 'false' && file && readIdentity(file)?.instance_id === id) {
    writeIdentity({}, file, root!)
  }
}

export function hookCommands(program: Command): void {
  program
    .command('hook')
    .description("forward a hook event (stdin) to the server and print its answer: what an agent's command hook runs")
    .argument('<agent>', HOOK_AGENTS.join(' | '))
    .argument('[event]', "the event's name, for an agent whose events carry none (Copilot CLI: `muster hook copilot-cli preToolUse`)")
    .option('--fail-closed', 'exit 2 (the tool call is blocked) when the server cannot be reached; default: exit 0 and go on')
    .option('--reserve <duration>', 'edit-reserve mode: reserve each edited file for this long (beats MUSTER_RESERVE)')
    .option('--approval-wait <duration>', 'how long a PermissionRequest waits for a person in Muster (1s … 10m; default 5m)')
    .action((agent: string, event: string | undefined, o: { failClosed?: boolean; reserve?: string; approvalWait?: string }) => forward(agent, event, o))

  program
    .command('sessions')
    .description('agent hook sessions, newest first: which instance each agent session acts as')
    .option('--limit <n>', '1 … 10000 (default 1000)', integer(1))
    .action(act((o: { limit?: number }) => api.get('/api/sessions', { limit: o.limit })))

  program
    .command('otel-headers')
    .description("print the OTLP headers (JSON) the agents' telemetry sends to the server: what Claude Code's otelHeadersHelper runs")
    .action(() => {
      const auth = authHeaders(resolveConfig()).authorization
      process.stdout.write(`${JSON.stringify(auth ? { Authorization: auth } : {})}\n`)
    })

  program
    .command('init')
    .description("wire an agent (Claude Code, Codex, Gemini CLI, Copilot CLI, Cursor, OpenCode, Cline) in this repository to Muster: hooks (OpenCode: a plugin; Cline: hook files and a plugin), MCP entry, its instructions (CLAUDE.md, AGENTS.md, GEMINI.md, .github/copilot-instructions.md, .cursor/rules/muster.mdc, .clinerules/muster.md), the agent's telemetry to the server (Codex's in $CODEX_HOME/config.toml) (merged; run twice, nothing changes); `init git`: pre-commit and pre-push guards beside the hooks there")
    .argument('<agent>', `${INIT_NAMES.join(' | ')} | git`, agentArg)
    .option('--reserve <duration>', 'edit-reserve mode: each file an agent starts editing is reserved for this long (e.g. 30m)')
    .option('--dry-run', 'print what would be written and write nothing')
    .option('--trust', `codex: record in Codex's own config ($CODEX_HOME/config.toml) the trust it asks for (its /hooks review) for the hooks written here, and the project's; gemini-cli: trust the repository in Gemini CLI's own ~/.gemini/trustedFolders.json`)
    .option('--allow-network', `codex: let Codex's default workspace-write sandbox reach the network, so \`muster\` in the model's shell reaches the server (${CODEX_NETWORK_SETTING} in .codex/config.toml)`)
    .action(async (agent: InitAgent | 'git', o: { reserve?: string; dryRun?: boolean; trust?: boolean; allowNetwork?: boolean }) => {
      if (agent !== 'codex' && o.allowNetwork) throw new UsageError('--allow-network is for codex')
      if (agent !== 'codex' && agent !== 'gemini-cli' && o.trust) throw new UsageError('--trust is for codex and gemini-cli')
      if (agent === 'git') return initGit(o)
      const tokenProblem = agent === 'claude-code' ? hookTokenProblem(resolveConfig().from.token) : null
      if (tokenProblem) throw new UsageError(tokenProblem)
      const root = gitRoot() ?? process.cwd()
      const cfg = resolveConfig()
      const server = cfg.server
      const files = planInit({
        agent, root, server, reserve: o.reserve, allowNetwork: o.allowNetwork, token: cfg.token, trust: o.trust,
        codexHome: process.env.CODEX_HOME || undefined,
        claudeHome: process.env.CLAUDE_CONFIG_DIR || undefined,
      })
      // A repository on a case-insensitive filesystem (git's own core.ignorecase): its project matches paths so too.
      const project = await setProjectCase(root, undefined, o.dryRun)
      // What would be written, without the token Codex's config would hold.
      const shown = cfg.token ? files.map((f) => ({ ...f, content: f.content.replaceAll(cfg.token!, '<token>') })) : files
      if (o.dryRun) return printJson({ dry_run: true, root, files: shown, project })
      writeInit(root, files)
      const out: Record<string, unknown> = { root, files: files.map(({ path, action }) => ({ path, action: action === 'unchanged' ? action : `${action}d` })), project }
      if (agent === 'codex') {
        const notes: string[] = []
        if (o.trust) {
          const t = trustCodexHooks(root)
          out.trusted = { config: t.configFile, project: t.project, hooks: t.hooks.map((h) => h.key) }
        } else if (!codexHooksTrust(root).ok) {
          notes.push(`Codex runs these hooks only once you trust them, and says nothing otherwise: run \`muster init codex --trust\` (or review them in Codex's /hooks)`)
        }
        if (!o.allowNetwork)
          notes.push(`Codex's default workspace-write sandbox has no network: \`muster\` in the model's shell cannot reach ${server}. Run \`muster init codex --allow-network\` (${CODEX_NETWORK_SETTING} in .codex/config.toml), or run Codex with another sandbox`)
        if (notes.length) out.notes = notes
      }
      if (agent === 'gemini-cli' && !o.trust && !geminiTrusts(root))
        out.notes = [`Gemini CLI runs no project hook in a folder it does not trust (and \`gemini -p\` does not start there): run \`muster init gemini-cli --trust\` (${geminiTrustFile()}), trust the folder when Gemini CLI asks, or set GEMINI_CLI_TRUST_WORKSPACE=true`]
      if (agent === 'cline') out.notes = [clineMcpNote(server)]
      printJson(out)
    })
}

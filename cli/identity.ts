// What the CLI learns about itself — the instance it registered as, that instance's
// token, the claims it holds — kept where git never picks it up and every
// subdirectory finds it: one file per agent name, `.muster/agents/<name>.json` at the
// git root (the directory holds a `.gitignore` of `*`), so agents sharing a checkout
// never share or overwrite an identity; the old single `.muster/identity.json`; or
// outside a repository a file in the user's config directory named after the working
// directory. Never in settings.json, which people commit and which may belong to
// another tool. `muster hook` writes an agent session's file at SessionStart.
//
// Which identity a command acts as (agents.md, "One agent, one identity"):
// MUSTER_INSTANCE_TOKEN; the file of MUSTER_AGENT under .muster/agents/; the only
// file there; the old identity file. With several files and nothing to choose, a
// command that needs an identity exits 2 naming them.
import { createHash } from 'node:crypto'
import { chmodSync, existsSync, mkdirSync, readdirSync, readFileSync, realpathSync, renameSync, rmSync, writeFileSync } from 'node:fs'
import { homedir } from 'node:os'
import { basename, dirname, join } from 'node:path'
import { configError } from './config-error'

export interface Identity {
  /** The name it registered with: `register <same name>` resumes this instance. */
  name?: string
  /** The server it registered with. */
  server?: string
  instance_id?: string
  instance_token?: string
  /** The claim id of each task it holds, by task id, for `task ack|nack|extend`. */
  claims?: Record<string, string>
}

export const IDENTITY_KEYS = ['name', 'server', 'instance_id', 'instance_token', 'claims'] as const

/** The root of the git work tree holding `cwd` (a `.git` directory, or file for worktrees and submodules), or null. */
export function gitRoot(cwd = process.cwd()): string | null {
  for (let dir = cwd; ; dir = dirname(dir)) {
    if (existsSync(join(dir, '.git'))) return dir
    if (dirname(dir) === dir) return null
  }
}

/** `$XDG_CONFIG_HOME/muster`, else `~/.config/muster`. */
export function configDir(env: Record<string, string | undefined> = process.env): string {
  const base = env.XDG_CONFIG_HOME || join(env.HOME || homedir(), '.config')
  return join(base, 'muster')
}

/** Where the identity of `cwd` lives (whether or not it exists yet). */
export function identityPath(cwd = process.cwd(), env: Record<string, string | undefined> = process.env): string {
  const root = gitRoot(cwd)
  if (root) return join(root, '.muster', 'identity.json')
  const key = createHash('sha256').update(realpathSync(cwd)).digest('hex')
  return join(configDir(env), 'identities', `${key}.json`)
}

/** The variables that choose the identity: an instance token, and the agent name whose file to read. */
export const TOKEN_ENV = 'MUSTER_INSTANCE_TOKEN'
export const AGENT_ENV = 'MUSTER_AGENT'
export const SESSION_ENV = 'MUSTER_SESSION'

/** `.muster/agents` at the git root of `cwd`, or null outside a repository. */
export function agentsDir(cwd = process.cwd()): string | null {
  const root = gitRoot(cwd)
  return root ? join(root, '.muster', 'agents') : null
}

/** An agent name as a file name: percent-encoded, so no name reaches outside the directory. */
const fileName = (name: string) => `${encodeURIComponent(name).replace(/^\./, '%2E')}.json`

/** The identity file of agent `name` (whether or not it exists), or null outside a repository. */
export function agentFile(name: string, cwd = process.cwd()): string | null {
  const dir = agentsDir(cwd)
  return dir ? join(dir, fileName(name)) : null
}

/** The agent identity files at the git root, by name, sorted. */
export function agentFiles(cwd = process.cwd()): { name: string; file: string }[] {
  const dir = agentsDir(cwd)
  if (!dir || !existsSync(dir)) return []
  return readdirSync(dir)
    .filter((f) => f.endsWith('.json'))
    .sort()
    .map((f) => ({ name: decodeURIComponent(f.slice(0, -'.json'.length)), file: join(dir, f) }))
}

/** The identity a command acts as, where it is kept, and how it was chosen. */
export interface Chosen {
  identity: Identity
  /** Where a change of it (a claim, a register) is written. */
  file: string
  from: 'env' | 'agent' | 'only' | 'legacy' | 'none'
  /** Several agent identities and nothing to choose: their names (the identity is empty). */
  choices?: string[]
}

/**
 * The identity of this command, by the order above. An unset or empty variable does not
 * choose; MUSTER_AGENT naming an agent with no file here chooses none of the others.
 */
export function chooseIdentity(cwd = process.cwd(), env: Record<string, string | undefined> = process.env): Chosen {
  const agent = env[AGENT_ENV]?.trim() || undefined
  const own = agent ? agentFile(agent, cwd) : null
  const token = env[TOKEN_ENV]?.trim()
  if (token) {
    // The agent's file adds what the token alone does not say (its id, its claims) when it is the same instance.
    const saved = own ? readIdentity(own) : null
    const identity = saved?.instance_token === token ? saved : { ...(agent ? { name: agent } : {}), instance_token: token }
    return { identity, file: own ?? identityPath(cwd, env), from: 'env' }
  }
  if (own) {
    const saved = readIdentity(own)
    if (saved) return { identity: saved, file: own, from: 'agent' }
  } else {
    const files = agentFiles(cwd)
    if (files.length === 1) return { identity: readIdentity(files[0].file) ?? {}, file: files[0].file, from: 'only' }
    if (files.length > 1) return { identity: {}, file: identityPath(cwd, env), from: 'none', choices: files.map((f) => f.name) }
  }
  const file = identityPath(cwd, env)
  const legacy = readIdentity(file)
  return legacy ? { identity: legacy, file, from: 'legacy' } : { identity: {}, file: own ?? file, from: 'none' }
}

/** The exit-2 line for a command that needs an identity when several exist and nothing chooses. */
export function ambiguousIdentity(choices: string[]): never {
  return configError(
    `several agent identities in ${agentsDir() ?? '.muster/agents'} (${choices.join(', ')}) and nothing chooses one: set ${AGENT_ENV} to one of them (or ${TOKEN_ENV}), or run \`muster register <name>\``,
  )
}

function isIdentity(value: unknown): value is Identity {
  if (!value || typeof value !== 'object' || Array.isArray(value)) return false
  const v = value as Record<string, unknown>
  for (const key of ['name', 'server', 'instance_id', 'instance_token'] as const)
    if (v[key] !== undefined && typeof v[key] !== 'string') return false
  if (v.claims === undefined) return true
  return !!v.claims && typeof v.claims === 'object' && !Array.isArray(v.claims) && Object.values(v.claims).every((c) => typeof c === 'string')
}

/** The saved identity, or null when none is saved here. */
export function readIdentity(file = identityPath()): Identity | null {
  if (!existsSync(file)) return null
  let parsed: unknown
  try {
    parsed = JSON.parse(readFileSync(file, 'utf8'))
  } catch (err) {
    return configError(`${file} is not valid JSON (${(err as Error).message}); delete it to forget this directory's instance, then run \`muster register <name>\``)
  }
  if (!isIdentity(parsed)) return configError(`${file} is not an identity the CLI wrote; delete it to forget this directory's instance, then run \`muster register <name>\``)
  return identityKeysOf(parsed as Record<string, unknown>)
}

/** Only `keys` of `from`, and nothing when one has the wrong type (a settings.json of the old layout may hold some). */
export function identityKeysOf(from: Record<string, unknown>, keys: readonly (keyof Identity)[] = IDENTITY_KEYS): Identity {
  const picked: Record<string, unknown> = {}
  for (const key of keys) if (from[key] !== undefined) picked[key] = from[key]
  return isIdentity(picked) ? picked : {}
}

/**
 * Saves `identity` (an empty one removes the file), atomically and readable by its
 * owner only: it holds the instance token. Creates `.muster/` with its `.gitignore`.
 */
export function writeIdentity(identity: Identity, file = identityPath(), cwd = process.cwd()): string {
  const dir = dirname(file)
  // `.muster/` itself, or `.muster/agents/` in it.
  const muster = basename(dir) === '.muster' ? dir : basename(dir) === 'agents' && basename(dirname(dir)) === '.muster' ? dirname(dir) : null
  const inRepository = muster !== null
  if (Object.keys(identity).length === 0) {
    rmSync(file, { force: true })
    return file
  }
  mkdirSync(dir, { recursive: true, mode: 0o700 })
  const ignore = muster && join(muster, '.gitignore')
  if (ignore && !existsSync(ignore)) writeFileSync(ignore, '# written by the muster CLI: nothing in here belongs in git\n*\n')
  // Outside a repository the file name alone does not say which directory it serves.
  const body = inRepository ? identity : { ...identity, dir: realpathSync(cwd) }
  const tmp = `${file}.${process.pid}.tmp`
  writeFileSync(tmp, JSON.stringify(body, null, 2) + '\n', { mode: 0o600 })
  chmodSync(tmp, 0o600)
  renameSync(tmp, file)
  return file
}

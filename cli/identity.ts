// What the CLI learns about itself — the instance it registered as, that instance's
// token, the claims it holds — kept where git never picks it up and every
// subdirectory finds it: `.muster/identity.json` at the git root (the directory
// holds a `.gitignore` of `*`), or outside a repository a file in the user's config
// directory named after the working directory. Never in settings.json, which people
// commit and which may belong to another tool.
import { createHash } from 'node:crypto'
import { chmodSync, existsSync, mkdirSync, readFileSync, realpathSync, renameSync, rmSync, writeFileSync } from 'node:fs'
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
  const inRepository = basename(dir) === '.muster'
  if (Object.keys(identity).length === 0) {
    rmSync(file, { force: true })
    return file
  }
  mkdirSync(dir, { recursive: true, mode: 0o700 })
  const ignore = join(dir, '.gitignore')
  if (inRepository && !existsSync(ignore)) writeFileSync(ignore, '# written by the muster CLI: nothing in here belongs in git\n*\n')
  // Outside a repository the file name alone does not say which directory it serves.
  const body = inRepository ? identity : { ...identity, dir: realpathSync(cwd) }
  const tmp = `${file}.${process.pid}.tmp`
  writeFileSync(tmp, JSON.stringify(body, null, 2) + '\n', { mode: 0o600 })
  chmodSync(tmp, 0o600)
  renameSync(tmp, file)
  return file
}

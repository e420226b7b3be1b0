// What the CLI reads from the repository it runs in, through git itself: the root of the
// working tree (a hook session's root, where `muster init` writes), and whether git treats
// file names without regard to case there (`core.ignorecase`, set by git when it created the
// repository on a case-insensitive filesystem).
import { basename } from 'node:path'

function git(cwd: string, ...args: string[]): string | null {
  try {
    const r = Bun.spawnSync(['git', ...args], { cwd, stdout: 'pipe', stderr: 'ignore' })
    const out = r.exitCode === 0 ? r.stdout.toString().trim() : ''
    return out || null
  } catch {
    return null
  }
}

/** The git root of `cwd`, or null outside a repository (or when `cwd` does not exist). */
export const gitRoot = (cwd = process.cwd()): string | null => git(cwd, 'rev-parse', '--show-toplevel')

/** The repository's own `core.ignorecase` (git config --bool): true, false, or null when unset or not a repository. */
export function gitIgnoresCase(root: string): boolean | null {
  const v = git(root, 'config', '--bool', 'core.ignorecase')
  return v === 'true' ? true : v === 'false' ? false : null
}

/** The project a session in `root` acts in, as the server names it: MUSTER_PROJECT, else the root's last segment. */
export const projectOf = (root: string): string => process.env.MUSTER_PROJECT?.trim() || basename(root) || 'default'

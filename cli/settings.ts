// The spec's settings.json {server, token}: the nearest one from the working
// directory up to the git root (only the working directory's outside a repository).
// A project may keep a settings.json of its own there, so a key is checked only when
// it is used, and one of another shape is one line naming the file, the key and the
// way around it.
import { chmodSync, existsSync, readFileSync, renameSync, writeFileSync } from 'node:fs'
import { dirname, join } from 'node:path'
import { configError } from './config-error'
import { gitRoot } from './identity'

export const SETTINGS_FILE = 'settings.json'
export type SettingKey = 'server' | 'token'

const FOREIGN = 'this file may belong to another tool'
const WAY_AROUND: Record<SettingKey, string> = { server: 'pass --server or set MUSTER_SERVER', token: 'pass --token or set MUSTER_TOKEN' }

/** The nearest settings.json from `cwd` up to the git root, or null. */
export function findSettings(cwd = process.cwd()): string | null {
  const root = gitRoot(cwd)
  for (let dir = cwd; ; dir = dirname(dir)) {
    const file = join(dir, SETTINGS_FILE)
    if (existsSync(file)) return file
    if (!root || dir === root || dirname(dir) === dir) return null
  }
}

type Parsed = { data: Record<string, unknown> } | { problem: string }

export class SettingsFile {
  private parsed?: Parsed

  /** The file in effect, or where `config set` creates one: ./settings.json. */
  constructor(
    readonly path: string,
    readonly exists: boolean,
  ) {}

  static find(cwd = process.cwd()): SettingsFile {
    const found = findSettings(cwd)
    return new SettingsFile(found ?? join(cwd, SETTINGS_FILE), found !== null)
  }

  private parse(): Parsed {
    if (this.parsed) return this.parsed
    if (!this.exists) return (this.parsed = { data: {} })
    let value: unknown
    try {
      value = JSON.parse(readFileSync(this.path, 'utf8'))
    } catch (err) {
      return (this.parsed = { problem: ` is not valid JSON (${(err as Error).message})` })
    }
    if (!value || typeof value !== 'object' || Array.isArray(value))
      return (this.parsed = { problem: ` must hold a JSON object such as {"server": "http://localhost:9800"}` })
    return (this.parsed = { data: value as Record<string, unknown> })
  }

  /** Its keys, or null when it is not a JSON object (then nothing in it is ours). */
  object(): Record<string, unknown> | null {
    const p = this.parse()
    return 'data' in p ? p.data : null
  }

  /** A one-line ConfigError about this file, when `key` was wanted from it; `problem` follows the path (" is …" or ': "key" …'). */
  fail(key: SettingKey, problem: string): never {
    return configError(`${this.path}${problem} (${FOREIGN}; ${WAY_AROUND[key]})`)
  }

  /** `server` or `token` when the file sets it; one of another shape is a ConfigError. */
  string(key: SettingKey): string | undefined {
    const p = this.parse()
    if ('problem' in p) return this.fail(key, p.problem)
    const value = p.data[key]
    if (value === undefined || value === null || value === '') return undefined
    if (typeof value !== 'string') return this.fail(key, `: "${key}" must be ${key === 'server' ? 'a URL string' : 'a string'}`)
    return value
  }

  /**
   * Merges `patch` (undefined removes a key), atomically and readable by the owner
   * only: it may hold the token. A file of another tool is not rewritten.
   */
  write(patch: Record<string, unknown>): string {
    const p = this.parse()
    if ('problem' in p) return configError(`${this.path}${p.problem}; not rewritten (${FOREIGN}; fix or move it, or use --server/--token or MUSTER_SERVER/MUSTER_TOKEN)`)
    const next: Record<string, unknown> = { ...p.data }
    for (const [k, v] of Object.entries(patch)) {
      const held = next[k]
      if (v !== undefined && held !== undefined && held !== null && typeof held !== 'string')
        return configError(`${this.path}: "${k}" holds a ${Array.isArray(held) ? 'list' : typeof held}, not a Muster setting; not overwritten (${FOREIGN})`)
      if (v === undefined) delete next[k]
      else next[k] = v
    }
    const tmp = `${this.path}.${process.pid}.tmp`
    writeFileSync(tmp, JSON.stringify(next, null, 2) + '\n', { mode: 0o600 })
    chmodSync(tmp, 0o600)
    renameSync(tmp, this.path)
    this.parsed = { data: next }
    return this.path
  }
}

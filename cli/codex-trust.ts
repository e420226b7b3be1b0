// Codex runs a project's hooks only once the project and each hook are trusted, and says
// nothing otherwise: untrusted hooks simply never run. Its trust lives in the user's
// $CODEX_HOME/config.toml: `[projects."<root>"] trust_level = "trusted"` for the project,
// and per hook `[hooks.state."<hooks.json path>:<event>:<group>:<handler>"] trusted_hash`,
// the sha256 of the hook's normalized identity (what Codex's /hooks review records). This
// file reads that trust for the hooks `muster init codex` wrote (`codexHooksTrust`, for
// `muster doctor`) and records it (`trustCodexHooks`, for `muster init codex --trust`).
import { createHash } from 'node:crypto'
import { existsSync, mkdirSync, readFileSync, renameSync, writeFileSync } from 'node:fs'
import { homedir } from 'node:os'
import { dirname, join } from 'node:path'

/** The hooks Muster writes: `muster hook codex …` commands. */
const OURS = /^muster hook codex\b/

/** Codex's key labels for the hook events (its `hook_event_key_label`). */
const snake = (event: string) => event.replace(/(?<!^)([A-Z])/g, '_$1').toLowerCase()

/** Events whose matcher Codex ignores, so it is left out of the hash. */
const NO_MATCHER = new Set(['user_prompt_submit', 'stop', 'interrupt'])
/** Events whose timeout Codex caps at 3 s (hashed as capped). */
const CAPPED = new Set(['session_end', 'interrupt'])

export interface CodexHook {
  event: string
  key: string
  hash: string
  command: string
}

export type TrustStatus = 'trusted' | 'untrusted' | 'modified' | 'disabled'

export interface CodexTrustReport {
  /** True when the project and every Muster hook in .codex/hooks.json are trusted. */
  ok: boolean
  hooksFile: string
  configFile: string
  projectTrusted: boolean
  hooks: (CodexHook & { status: TrustStatus })[]
  /** One line: what is wrong (null when ok). */
  problem: string | null
  /** What to run or do about it (null when ok). */
  fix: string | null
}

/** Where Codex keeps its user config: $CODEX_HOME, else ~/.codex. */
export function codexHome(env: Record<string, string | undefined> = process.env): string {
  return env.CODEX_HOME && env.CODEX_HOME !== '' ? env.CODEX_HOME : join(env.HOME || homedir(), '.codex')
}

const canonical = (v: unknown): unknown =>
  Array.isArray(v) ? v.map(canonical) : v && typeof v === 'object' ? Object.fromEntries(Object.keys(v).sort().map((k) => [k, canonical((v as any)[k])])) : v

/**
 * The hash Codex records for a trusted command hook: sha256 over the canonical JSON of
 * `{event_name, matcher?, hooks: [{type, command, timeout, async, statusMessage?}]}` with the
 * timeout as Codex normalizes it (default 600 s; SessionEnd capped at 3 s).
 */
export function codexHookHash(event: string, matcher: string | undefined, handler: Record<string, any>): string {
  const label = snake(event)
  const given = typeof handler.timeout === 'number' ? handler.timeout : typeof handler.timeoutSec === 'number' ? handler.timeoutSec : undefined
  const timeout = CAPPED.has(label) ? Math.min(Math.max(given ?? 1, 1), 3) : Math.max(given ?? 600, 1)
  const hook: Record<string, unknown> = { type: 'command', command: handler.command, timeout, async: handler.async === true }
  if (typeof handler.statusMessage === 'string') hook.statusMessage = handler.statusMessage
  const identity: Record<string, unknown> = { event_name: label, hooks: [hook] }
  if (matcher !== undefined && !NO_MATCHER.has(label)) identity.matcher = matcher
  return 'sha256:' + createHash('sha256').update(JSON.stringify(canonical(identity))).digest('hex')
}

/** The Muster command hooks in `<root>/.codex/hooks.json`, with the key and hash Codex gives each. */
export function codexHooks(root: string): CodexHook[] {
  const file = join(root, '.codex', 'hooks.json')
  if (!existsSync(file)) return []
  let parsed: any
  try {
    parsed = JSON.parse(readFileSync(file, 'utf8'))
  } catch {
    return []
  }
  const out: CodexHook[] = []
  for (const [event, groups] of Object.entries(parsed?.hooks ?? {})) {
    if (!Array.isArray(groups)) continue
    groups.forEach((group: any, g: number) => {
      if (!Array.isArray(group?.hooks)) return
      group.hooks.forEach((h: any, i: number) => {
        if (h?.type !== 'command' || typeof h.command !== 'string' || !OURS.test(h.command)) return
        out.push({ event, key: `${file}:${snake(event)}:${g}:${i}`, hash: codexHookHash(event, group.matcher ?? undefined, h), command: h.command })
      })
    })
  }
  return out
}

function readToml(file: string): any {
  if (!existsSync(file)) return {}
  try {
    return Bun.TOML.parse(readFileSync(file, 'utf8')) ?? {}
  } catch {
    return {}
  }
}

/** Codex's trust of the project at `root` and of each Muster hook in its .codex/hooks.json. */
export function codexHooksTrust(root: string, env: Record<string, string | undefined> = process.env): CodexTrustReport {
  const configFile = join(codexHome(env), 'config.toml')
  const hooksFile = join(root, '.codex', 'hooks.json')
  const config = readToml(configFile)
  const projectTrusted = config?.projects?.[root]?.trust_level === 'trusted'
  const states = config?.hooks?.state ?? {}
  const hooks = codexHooks(root).map((h) => {
    const state = states[h.key] ?? {}
    const status: TrustStatus =
      state.enabled === false ? 'disabled' : state.trusted_hash === h.hash ? 'trusted' : state.trusted_hash ? 'modified' : 'untrusted'
    return { ...h, status }
  })
  const fix = `run \`muster init codex --trust\` in ${root} (or review them in Codex's /hooks)`
  if (!hooks.length)
    return { ok: false, hooksFile, configFile, projectTrusted, hooks, problem: `no Muster hooks in ${hooksFile}`, fix: `run \`muster init codex --trust\` in ${root}` }
  const bad = hooks.filter((h) => h.status !== 'trusted')
  const problems: string[] = []
  if (!projectTrusted) problems.push(`Codex does not trust the project ${root}, so it loads none of its .codex/ config`)
  if (bad.length) {
    const counts = ['untrusted', 'modified', 'disabled'].map((s) => [s, bad.filter((h) => h.status === s)] as const).filter(([, l]) => l.length)
    problems.push(
      `Codex hooks not trusted: ${counts.map(([s, l]) => `${l.length} ${s} (${l.map((h) => h.event).join(', ')})`).join('; ')} of ${hooks.length}; Codex skips them without a word`,
    )
  }
  const ok = problems.length === 0
  return { ok, hooksFile, configFile, projectTrusted, hooks, problem: ok ? null : problems.join('; '), fix: ok ? null : fix }
}

const tomlString = (s: string) => `"${s.replace(/\\/g, '\\\\').replace(/"/g, '\\"')}"`

/** `text` with table `header` holding `key = value` (the table kept where it is, or appended). */
export function setTomlValue(text: string, header: string, key: string, value: string): string {
  const lines = text === '' ? [] : text.replace(/\n$/, '').split('\n')
  const start = lines.findIndex((l) => l.trim() === header)
  if (start === -1) return (lines.length ? `${lines.join('\n').replace(/\n*$/, '')}\n\n` : '') + `${header}\n${key} = ${value}\n`
  let end = start + 1
  while (end < lines.length && !/^\s*\[/.test(lines[end])) end++
  const at = lines.slice(start + 1, end).findIndex((l) => new RegExp(`^\\s*${key}\\s*=`).test(l))
  if (at !== -1) lines[start + 1 + at] = `${key} = ${value}`
  else {
    // After the table's last line, before the blank lines that part it from the next table.
    let last = end
    while (last > start + 1 && lines[last - 1].trim() === '') last--
    lines.splice(last, 0, `${key} = ${value}`)
  }
  return lines.join('\n') + '\n'
}

/**
 * Records in $CODEX_HOME/config.toml the trust Codex asks for: the project at `root`, and
 * each Muster hook of its .codex/hooks.json by its current hash. Written atomically; other
 * settings kept. Returns what it trusted.
 */
export function trustCodexHooks(root: string, env: Record<string, string | undefined> = process.env): { configFile: string; project: boolean; hooks: CodexHook[] } {
  const report = codexHooksTrust(root, env)
  let text = existsSync(report.configFile) ? readFileSync(report.configFile, 'utf8') : ''
  if (!report.projectTrusted) text = setTomlValue(text, `[projects.${tomlString(root)}]`, 'trust_level', '"trusted"')
  const todo = report.hooks.filter((h) => h.status === 'untrusted' || h.status === 'modified')
  for (const h of todo) text = setTomlValue(text, `[hooks.state.${tomlString(h.key)}]`, 'trusted_hash', tomlString(h.hash))
  if (todo.length || !report.projectTrusted) {
    mkdirSync(dirname(report.configFile), { recursive: true })
    const tmp = `${report.configFile}.muster-${process.pid}`
    writeFileSync(tmp, text)
    renameSync(tmp, report.configFile)
  }
  return { configFile: report.configFile, project: !report.projectTrusted, hooks: todo }
}

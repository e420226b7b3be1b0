// `muster __complete`: the names the completion scripts offer at <TAB>, read
// from the server. `__complete <kind>` prints the names of one kind, one a
// line; `__complete line -- <words after muster…> <word at the cursor>` works out
// which kind the cursor's slot takes (the `<name>` of `lock acquire`, the value
// of `--project`) and prints those. A line may carry a description after a tab
// (fish shows it). Any failure prints nothing and exits 0: a completion must
// never put an error into the person's command line, nor make them wait.
import type { Command, Option } from 'commander'
import { apiPath, resolveConfig, setFlagOverrides } from './client'
import { extractGlobals } from './globals'
import { EXIT } from './output'

export const KINDS = ['lock', 'queue', 'instance', 'instance-id', 'project', 'spec', 'contract'] as const
export type Kind = (typeof KINDS)[number]

/** Positional arguments by command path and index (`*`: every position). */
const ARG_KINDS: Record<string, Record<string, Kind>> = {
  'lock acquire': { 0: 'lock' },
  'lock release': { 0: 'lock' },
  'lock get': { 0: 'lock' },
  'task add': { 0: 'queue' },
  'task claim': { 0: 'queue' },
  'task list': { 0: 'queue' },
  send: { '*': 'instance' },
  activate: { 0: 'instance-id' },
  heartbeat: { 0: 'instance-id' },
  intent: { 1: 'instance-id' },
  capabilities: { 1: 'instance-id' },
  'instances get': { 0: 'instance-id' },
  'instances delete': { 0: 'instance-id' },
}

/** Option values by flag, or by `path|flag` where the same flag means something else elsewhere. */
const OPTION_KINDS: Record<string, Kind> = {
  '--project': 'project',
  '--workspace': 'project',
  '--instance-id': 'instance-id',
  '--proposed-by': 'instance-id',
  'reservations|--instance': 'instance-id',
  'llm usage|--instance': 'instance-id',
  'instances list|--name': 'instance',
  'messages|--from': 'instance',
  'messages|--to': 'instance',
  'lock list|--prefix': 'lock',
}

const pathOf = (cmd: Command): string => {
  const names: string[] = []
  for (let c: Command | null = cmd; c?.parent; c = c.parent) names.unshift(c.name())
  return names.join(' ')
}

/** The kind of the `index`th positional argument of `cmd`, if it takes names. */
export function argKind(cmd: Command, index: number): Kind | undefined {
  const path = pathOf(cmd)
  const table = ARG_KINDS[path]
  if (table) return table[index] ?? table['*']
  const args = cmd.registeredArguments
  const arg = args[index] ?? (args.at(-1)?.variadic ? args.at(-1) : undefined)
  // Arguments named for a project are completed wherever they are.
  if (arg?.name() === 'project') return 'project'
  if (arg?.name() === 'project/name') return path.startsWith('contract') ? 'contract' : 'spec'
  return undefined
}

export function optionKind(cmd: Command, flag: string): Kind | undefined {
  return OPTION_KINDS[`${pathOf(cmd)}|${flag}`] ?? OPTION_KINDS[flag]
}

/** Whether any slot of `cmd` takes names: the completion scripts ask the server only there. */
export function takesNames(cmd: Command): boolean {
  if (ARG_KINDS[pathOf(cmd)]) return true
  if (cmd.registeredArguments.some((_, i) => argKind(cmd, i))) return true
  return cmd.options.some((o) => o.long && optionKind(cmd, o.long))
}

/** Which kind the word after `words` takes, walking the command tree as commander would. */
export function slotKind(program: Command, words: string[]): Kind | undefined {
  let cmd = program
  let positionals = 0
  let pending: Option | undefined
  let literal = false
  for (const w of words) {
    if (pending) {
      pending = undefined
      continue
    }
    if (!literal && w === '--') {
      literal = true
      continue
    }
    if (!literal && w.startsWith('-') && w.length > 1) {
      const opt = cmd.options.find((o) => o.long === w || o.short === w)
      if (opt && (opt.required || opt.optional)) pending = opt
      continue
    }
    const sub = positionals === 0 && !literal ? cmd.commands.find((c) => c.name() === w || c.aliases().includes(w)) : undefined
    if (sub) cmd = sub
    else positionals++
  }
  if (pending) return pending.long ? optionKind(cmd, pending.long) : undefined
  return argKind(cmd, positionals)
}

/** Names answer within this long or not at all: a person is waiting on <TAB>. */
const TIMEOUT_MS = 1000

async function get(path: string): Promise<unknown> {
  const cfg = resolveConfig()
  // Only the server token: the instance token would make every <TAB> a heartbeat.
  const headers: Record<string, string> = cfg.token ? { authorization: `Bearer ${cfg.token}` } : {}
  const res = await fetch(cfg.server + path, { headers, signal: AbortSignal.timeout(TIMEOUT_MS) })
  if (!res.ok) throw new Error(`${res.status}`)
  return res.json()
}

type Row = Record<string, unknown>
const rows = async (path: string): Promise<Row[]> => {
  const body = await get(path)
  if (Array.isArray(body)) return body as Row[]
  // A wrapped list ({project, specs: [...]}): its one array.
  const inner = body && typeof body === 'object' ? Object.values(body).find(Array.isArray) : undefined
  return (inner ?? []) as Row[]
}
const strings = (values: unknown[]) => values.filter((v): v is string => typeof v === 'string' && v !== '' && !/[\n\t]/.test(v))
/** Every call is on its own: one route failing (a 403, an older server) leaves the others' names. */
const settled = async (calls: Promise<string[]>[]) => (await Promise.allSettled(calls)).flatMap((r) => (r.status === 'fulfilled' ? r.value : []))

async function projects(): Promise<string[]> {
  return settled([
    rows('/api/rules').then((r) => strings(r.map((x) => x.project))),
    rows('/api/reservations').then((r) => strings(r.map((x) => x.project))),
    rows('/api/instances').then((r) => strings(r.map((x) => x.workspace))),
    rows('/api/state').then((r) => strings(r.map((x) => (typeof x.key === 'string' && x.key.includes('/') ? x.key.split('/')[0] : undefined)))),
  ])
}

/** `project/name` of a spec or contract: projects with a trailing `/`, then the names in the typed project. */
async function documents(prefix: string, cur: string): Promise<string[]> {
  const slash = cur.indexOf('/')
  if (slash === -1) return (await projects()).map((p) => `${p}/`)
  const project = cur.slice(0, slash)
  return strings((await rows(apiPath(prefix, project))).map((x) => x.name)).map((n) => `${project}/${n}`)
}

export async function names(kind: Kind, cur = ''): Promise<string[]> {
  switch (kind) {
    case 'lock':
      return strings((await rows('/api/locks')).map((x) => x.name))
    case 'queue':
      return strings((await rows('/api/queues')).map((x) => x.queue))
    case 'instance':
      return strings((await rows('/api/instances')).map((x) => x.name))
    case 'instance-id':
      return (await rows('/api/instances')).filter((x) => typeof x.id === 'string').map((x) => (typeof x.name === 'string' ? `${x.id}\t${x.name}` : String(x.id)))
    case 'project':
      return projects()
    case 'spec':
      return documents('/api/specs', cur)
    case 'contract':
      return documents('/api/contracts', cur)
  }
}

/** `muster __complete …` (args after `__complete`); always exit 0. */
export async function completeNames(args: string[], program: () => Command): Promise<number> {
  try {
    let kind: Kind | undefined
    let cur = ''
    if (args[0] === 'line') {
      const words = args.slice(args[1] === '--' ? 2 : 1)
      cur = words.pop() ?? ''
      // Global flags typed on the line apply here too (another --server); a line that ends in
      // one still waiting for its value makes extractGlobals throw: no names go there.
      const { globals, args: rest } = extractGlobals(words)
      if (globals.server || globals.token) setFlagOverrides(globals)
      kind = slotKind(program(), rest)
    } else if ((KINDS as readonly string[]).includes(args[0] ?? '')) kind = args[0] as Kind
    if (!kind) return EXIT.ok
    const found = [...new Set(await names(kind, cur))].sort()
    if (found.length) process.stdout.write(found.join('\n') + '\n')
  } catch {}
  return EXIT.ok
}

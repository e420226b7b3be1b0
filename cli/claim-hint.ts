// Why `task claim` came back empty: a line on stderr for the agent that ran it, so it
// can act (wait, ask for a capability, ask who holds the files) instead of reading a
// bare `null`. Read after the claim from the queue's counts and ready tasks; the queue
// may have moved on meanwhile, so the line says what was seen, not what was decided.
import { api, apiPath, resolveConfig } from './client'

/** Ready tasks read to explain an empty claim: enough to name the reasons, not a whole backlog. */
export const READ_AT_MOST = 100

type Counts = Record<'blocked' | 'ready' | 'claimed' | 'done' | 'failed' | 'cancelled', number>

/** What the hint needs of a ready task. */
export interface ReadyTask {
  id: number
  requires: string[]
  available_at: string | null
  project: string | null
  paths: string[] | null
}

const plural = (n: number, one: string, many = `${one}s`) => `${n} ${n === 1 ? one : many}`
const list = (items: Iterable<string>) => [...items].join(', ') || 'none'

/** "2 claimed, 1 blocked": the statuses other than ready that have tasks. */
function others(counts: Counts | null): string {
  if (!counts) return 'the queue has no tasks'
  const parts = (['claimed', 'blocked', 'done', 'failed', 'cancelled'] as const).filter((s) => counts[s] > 0).map((s) => `${counts[s]} ${s}`)
  return parts.length ? parts.join(', ') : 'the queue has no tasks'
}

/**
 * The hint for a claim on `queue` that found nothing, from what the server showed:
 * its counts (null: no task at all), up to READ_AT_MOST of its ready tasks, and the
 * claimer's capabilities (null when unknown).
 */
export function claimHint(queue: string, counts: Counts | null, ready: ReadyTask[], capabilities: string[] | null, now = Date.now()): string {
  const readyCount = Math.max(counts?.ready ?? 0, ready.length)
  if (readyCount === 0)
    return `nothing to claim: no ready task in queue ${queue} (${others(counts)}); add one with \`muster task add ${queue} --title …\` or hold with --wait 30s`
  const missing = new Set<string>()
  let lacking = 0
  let delayed = 0
  let firstAvailable = Infinity
  let filed = 0
  const projects = new Set<string>()
  for (const t of ready) {
    const needs = capabilities === null ? [] : t.requires.filter((c) => !capabilities.includes(c))
    if (needs.length) {
      lacking++
      needs.forEach((c) => missing.add(c))
    } else if (t.available_at !== null && Date.parse(t.available_at) > now) {
      delayed++
      firstAvailable = Math.min(firstAvailable, Date.parse(t.available_at))
    } else if (t.paths) {
      filed++
      projects.add(t.project ?? '?')
    }
  }
  const seen = ready.length < readyCount ? `the first ${ready.length} of ${readyCount}` : ready.length === 1 ? 'it' : `all ${ready.length}`
  const reasons: string[] = []
  if (lacking)
    reasons.push(
      `${plural(lacking, 'needs', 'need')} capabilities this instance lacks: ${list(missing)} (it has: ${list(capabilities ?? [])}; ` +
        `if it really has them: \`muster capabilities ${[...(capabilities ?? []), ...missing].join(',')}\`)`,
    )
  if (delayed) reasons.push(`${plural(delayed, 'is', 'are')} delayed after a nack, the first claimable at ${new Date(firstAvailable).toISOString()}`)
  if (filed)
    reasons.push(
      `${plural(filed, 'names files', 'name files')} that another instance may hold reserved (${[...projects].map((p) => `\`muster reservations --project ${p}\``).join(', ')} shows who)`,
    )
  const rest = ready.length - lacking - delayed - filed
  if (rest) reasons.push(`${plural(rest, 'looks', 'look')} claimable: another claimer may have taken it meanwhile; claim again`)
  if (capabilities === null) reasons.push("this instance's capabilities could not be read, so they were not compared")
  return `nothing to claim: ${plural(readyCount, 'ready task')} in queue ${queue} but none this instance can take; of ${seen}: ${reasons.join('; ')}`
}

/** The capabilities of the registered instance, or null when it cannot be read. */
async function myCapabilities(): Promise<string[] | null> {
  const id = resolveConfig().instanceId
  if (!id) return null
  const instance = (await api.get(apiPath('/api/instances', id)).catch(() => null)) as { capabilities?: string[] } | null
  return instance?.capabilities ?? null
}

/** Asks the server what the queue holds now and explains the empty claim; null when the server cannot say. */
export async function explainEmptyClaim(queue: string): Promise<string | null> {
  try {
    const queues = (await api.get('/api/queues')) as { queue: string; counts: Counts }[]
    const counts = queues.find((q) => q.queue === queue)?.counts ?? null
    const [ready, capabilities] = await Promise.all([
      counts && counts.ready > 0 ? (api.get(apiPath('/api/queues', queue, 'tasks'), { status: 'ready', limit: READ_AT_MOST }) as Promise<ReadyTask[]>) : [],
      myCapabilities(),
    ])
    return claimHint(queue, counts, ready, capabilities)
  } catch {
    return null
  }
}

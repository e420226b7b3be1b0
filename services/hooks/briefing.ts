// What a hook answer puts in the model's context: the SessionStart briefing (who it is,
// who matters to it and what they hold, its claims, its messages) and the messages that
// arrived since. Both are held to a character budget; what does not fit is counted, and
// a message counts as shown only when it was put in the text.
import type { Store, Tx } from '../../store'
import type { Instance } from '../../store/instances'
import type { Session } from './session'
import { formatMessages, markShown, pendingForSession } from '../messages'

export const BRIEFING_MAX = 8_000
/** Messages read per answer: what does not fit waits for the next one. */
const MESSAGES_READ = 50

/** Lines added while they fit in `budget`; the rest counted as left out. */
export class Budget {
  readonly lines: string[] = []
  left = 0
  constructor(private room: number) {}
  add(line: string): boolean {
    if (line.length + 1 > this.room) {
      this.left++
      return false
    }
    this.lines.push(line)
    this.room -= line.length + 1
    return true
  }
}

type Pending = Awaited<ReturnType<typeof pendingForSession>>

/** The unshown messages that fit in `budget`, marked shown for this session; how many wait besides. */
async function showMessages(tx: Tx, session: Session, budget: Budget): Promise<{ shown: number; waiting: number }> {
  const { name, session_id } = session.row
  const pending: Pending = await pendingForSession(tx, name, session_id, MESSAGES_READ)
  const shown: Pending = []
  // A blank line between messages, as formatMessages separates them.
  for (const m of pending) if (budget.add(`${shown.length ? '\n' : ''}${formatMessages([m])}`)) shown.push(m)
  if (shown.length) await markShown(tx, name, session_id, shown.map((m) => m.id))
  return { shown: shown.length, waiting: pending.length - shown.length }
}

/** UserPromptSubmit, PostToolUse, Stop: the new messages as text (null when none), marked shown. */
export async function newMessages(tx: Tx, session: Session): Promise<string | null> {
  const budget = new Budget(BRIEFING_MAX - 200)
  const { shown, waiting } = await showMessages(tx, session, budget)
  if (!shown) return null
  const head = `Muster: ${shown} new message${shown === 1 ? '' : 's'} for ${session.row.name}. Ack one that asks for it with \`muster ack <id>\`; reply with \`muster send <name> --subject … --reply-to <id>\`.`
  const tail = waiting ? [`(${waiting} more waiting: they follow in your next turns.)`] : []
  return [head, ...budget.lines, ...tail].join('\n')
}

/**
 * The briefing's first part, inside the SessionStart unit: who the agent is, its
 * messages (marked shown) and its claimed tasks. `finishBriefing` adds the others.
 */
export async function startBriefing(tx: Tx, session: Session): Promise<Budget> {
  const { row, instance } = session
  // Room kept for the messages' heading and the left-out line, added last.
  const budget = new Budget(BRIEFING_MAX - 160)
  budget.add(`Muster coordination: you are "${row.name}" (instance ${instance.id}) in project "${row.project}", root ${row.root || '(unknown)'}.`)
  // Never the instance token: this text goes to the model's provider. `muster hook` hands it to the shell.
  budget.add(
    `The \`muster\` CLI in your shell already acts as this session (no \`muster register\` needed): what you reserve, claim or send with it is yours. Should it say several identities exist here, run it with MUSTER_AGENT=${JSON.stringify(row.name)}.`,
  )
  budget.add(
    'Edits of files another agent reserved are denied; reserve what you will work on (`muster reserve`), read your inbox (`muster inbox`), and ask a holder with `muster send`.',
  )
  budget.add('')
  const at = budget.lines.length
  const { shown, waiting } = await showMessages(tx, session, budget)
  budget.lines.splice(at, 0, shown ? `Messages for you (${shown}${waiting ? ` of ${shown + waiting}` : ''}):` : 'Messages for you: none.')
  budget.left += waiting
  section(budget, 'Tasks you have claimed', await tx.queue.claimedBy(instance.id), (t) => `- task ${t.id} in queue ${t.queue}: ${t.title}`)
  return budget
}

/**
 * Reservations whose holders are read (more never fit in the briefing), most correspondents
 * named, and most messages read each way to find them: the briefing's work stays the same
 * however large the fleet.
 */
const RESERVATIONS_NAMED = 100
const CORRESPONDENTS = 40
const MESSAGES_SCANNED = 100

/** An agent the briefing names, and why it matters to this one. */
interface Other {
  instance: Instance
  why: string[]
}

/**
 * The briefing's text: the unit's part, then what others hold in the project and the agents
 * that matter to this one (the holders there, the agents it has messaged or that message
 * it), read from committed data; the rest of the fleet only counted, so a briefing costs
 * the same with ten agents registered as with ten thousand.
 */
export async function finishBriefing(store: Store, budget: Budget, session: Session): Promise<string> {
  const { row, instance } = session
  const self = instance.id
  const [reservations, sent, received, registered] = await Promise.all([
    store.reservations.list({ project: row.project }),
    store.messages.list({ from: row.name, limit: MESSAGES_SCANNED }),
    store.messages.list({ to: row.name, limit: MESSAGES_SCANNED }),
    store.instances.count(),
  ])
  const held = reservations.filter((r) => r.instance_id !== self)
  const holderIds = [...new Set(held.slice(0, RESERVATIONS_NAMED).map((r) => r.instance_id))]
  const names = [...new Set([...sent.flatMap((m) => m.to), ...received.map((m) => m.from)])].filter((n) => n !== '*' && n !== row.name)
  const [holders, named] = await Promise.all([
    Promise.all(holderIds.map((id) => store.instances.get(id))),
    Promise.all(names.slice(0, CORRESPONDENTS).map((n) => store.instances.list({ name: n }))),
  ])
  const others = new Map<string, Other>()
  const note = (i: Instance | null, why: string) => {
    if (!i || i.id === self) return
    const o = others.get(i.id) ?? others.set(i.id, { instance: i, why: [] }).get(i.id)!
    if (!o.why.includes(why)) o.why.push(why)
  }
  for (const h of holders) note(h, `holds files in ${row.project}`)
  const sentTo = new Set(sent.flatMap((m) => m.to))
  const heardFrom = new Set(received.map((m) => m.from))
  for (const list of named)
    for (const i of list) {
      if (sentTo.has(i.name)) note(i, 'you messaged them')
      if (heardFrom.has(i.name)) note(i, 'they messaged you')
    }

  const byId = new Map([...others.values()].map((o) => [o.instance.id, o.instance]))
  section(budget, `Reservations others hold in ${row.project}`, held, (r) => {
    const who = byId.get(r.instance_id)
    const holder = who ? `${who.name} (${who.status})` : r.instance_id
    const expiry = r.expires_at ? `expires ${r.expires_at}` : 'no expiry'
    return `- ${r.paths.join(', ')}: ${holder}, ${r.exclusive ? 'exclusive' : 'shared'}, ${expiry}${r.reason ? `, reason "${r.reason}"` : ''}`
  })
  const listed = [...others.values()]
  section(budget, 'Other agents that matter to you', listed, ({ instance: i, why }) => `- ${i.name} (${i.status})${i.intent ? `: ${i.intent}` : ''} [${why.join('; ')}]`)
  const rest = Math.max(0, registered - 1 - listed.length)
  if (rest) budget.add(`${rest} more agent${rest === 1 ? '' : 's'} registered, not listed here: \`muster instances list\` shows them; \`muster send <name>\` reaches any of them.`)
  const lines = [...budget.lines]
  if (budget.left) lines.push(`(${budget.left} item${budget.left === 1 ? '' : 's'} left out to keep this briefing under ${BRIEFING_MAX} characters.)`)
  return lines.join('\n')
}

function section<T>(budget: Budget, title: string, items: T[], line: (item: T) => string): void {
  budget.add('')
  if (!items.length) return void budget.add(`${title}: none.`)
  if (!budget.add(`${title} (${items.length}):`)) return void (budget.left += items.length)
  for (const item of items) budget.add(line(item))
}

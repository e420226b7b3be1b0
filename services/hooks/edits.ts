// PreToolUse of a tool that writes files: each file is checked against the other
// instances' reservations with the reservation service's overlap rule. A file another
// instance holds exclusively denies the call; in edit-reserve mode each free file is
// reserved for the session (or its own `edit` reservation renewed) before the answer.
// The plan is made on committed reads first; when it writes anything, it is made again
// inside the event's unit, which carries it out (one unit, nothing read apart).
import { nowMs } from '../../lib/time'
import type { Tx } from '../../store'
import type { Holding, HoldingsReads, Reservation } from '../../store/reservations'
import type { HolderView } from '../../store/holders'
import { expiresAt, holderScope } from '../holders'
import { recordAudit } from '../audit'
import { grantIn, overlapsIn, withReservations, type Overlap } from '../reservations'
import { literalPattern, type CheckedPath } from './paths'
import type { Session } from './session'

/** One reservation in the way of an edit: as POST /api/reservations answers a conflict. */
export type EditConflict = HolderView & {
  path: string
  held_path: string
  reservation_id: string
  exclusive: boolean
  expires_at: string | null
  reason: string | null
}

export type EditDecision = { denied: false } | { denied: true; paths: string[]; conflicts: EditConflict[]; reason: string }

export const EDIT_REASON = 'edit'
/**
 * An `edit` reservation is renewed once half its TTL has run down (at least a second), as
 * leases are: an agent editing one file again and again writes a renewal every half TTL,
 * not on most edits (a fleet's edits are then mostly answered without a write), and the
 * file stays reserved for at least half the TTL after any edit.
 */
export const renewSlack = (ttl: number) => Math.max(1000, ttl / 2)

/** What an edit decision reads: a unit's reservations, or committed ones. */
type EditReads = HoldingsReads & { get(id: string): Promise<Reservation | null> }

/** What an edit of some files calls for: the overlaps that deny it, else the grants and renewals of edit-reserve mode. */
export interface EditPlan {
  blocking: Overlap[]
  /** Literal patterns to reserve for the session. */
  grants: string[]
  /** Ids of the session's own `edit` reservations to renew. */
  renewals: string[]
}

/** Whether carrying out `plan` writes anything (else the answer is `{}` and nothing changes). */
export const writes = (p: EditPlan) => p.blocking.length > 0 || p.grants.length > 0 || p.renewals.length > 0

/**
 * Plans an edit of `patterns` (literal, root-relative) by instance `self`: a file another
 * instance holds exclusively denies it; in edit-reserve mode each file nothing overlaps
 * is to be reserved, one the session's own `edit` reservation covers has that renewed,
 * and one another own reservation covers (a task's, one by hand), or another instance's
 * shared one overlaps, is left as it is. `checked` patterns (a shell command's trees and
 * maybes) can deny it but are never reserved.
 */
export async function planEdit(reads: EditReads, project: string, self: string, patterns: string[], reserveMs: number | undefined, checked: string[] = []): Promise<EditPlan> {
  // Everyone's overlapping reservations, the session's own included (edit-reserve mode renews those).
  const found = await overlapsIn(reads, project, checked.length ? [...patterns, ...checked] : patterns, true, null)
  const plan: EditPlan = { blocking: found.filter((o) => o.holding.instance_id !== self && o.holding.exclusive), grants: [], renewals: [] }
  if (plan.blocking.length || reserveMs === undefined) return plan
  const byPath = new Map<string, Holding[]>()
  for (const o of found) (byPath.get(o.path) ?? byPath.set(o.path, []).get(o.path)!).push(o.holding)
  const due = nowMs() + reserveMs - renewSlack(reserveMs)
  for (const pattern of patterns) {
    const holdings = byPath.get(pattern) ?? []
    if (holdings.length === 0) plan.grants.push(pattern)
    if (holdings.some((h) => h.instance_id !== self)) continue
    for (const h of holdings) {
      if (h.reason !== EDIT_REASON) continue
      if (h.expires_at !== null && Date.parse(h.expires_at) < due && !plan.renewals.includes(h.id)) plan.renewals.push(h.id)
      break
    }
  }
  return plan
}

/** Decides an edit of `files` (root-relative) by the session inside `tx`: a denial emits edit.blocked and audits hook.deny. */
export async function decideEdit(tx: Tx, session: Session, files: string[], reserveMs: number | undefined, checked: CheckedPath[] = []): Promise<EditDecision> {
  const { project, session_id } = session.row
  const patterns = files.map(literalPattern)
  const plan = await planEdit(tx.reservations, project, session.instance.id, patterns, reserveMs, checked.map((c) => c.pattern))
  if (plan.blocking.length) {
    const conflicts = await conflictsIn(tx, plan.blocking, [...files, ...checked.map((c) => c.file)], [...patterns, ...checked.map((c) => c.pattern)])
    const paths = [...new Set(conflicts.map((c) => c.path))]
    await tx.emit('edit.blocked', { session_id, instance_id: session.instance.id, paths, conflicts }, 'hooks')
    await recordAudit(tx, holderScope(session.instance, 'hook.deny', `sessions/${session_id}`), conflicts.map(describe).join('; ').slice(0, 1000))
    return { denied: true, paths, conflicts, reason: denyReason(session.instance.name, conflicts) }
  }
  for (const pattern of plan.grants)
    await grantIn(tx, session.instance, { project, paths: [pattern], exclusive: true, ttl: reserveMs, reason: EDIT_REASON })
  for (const id of plan.renewals) await tx.reservations.renew(id, expiresAt(reserveMs))
  return { denied: false }
}

/** The conflicts with each reservation and holder as this unit sees them. */
async function conflictsIn(tx: Tx, blocking: Overlap[], files: string[], patterns: string[]): Promise<EditConflict[]> {
  const fileOf = new Map(patterns.map((p, i) => [p, files[i]]))
  const holders = new Map<string, HolderView>()
  const out: EditConflict[] = []
  for (const { path, held_path, reservation: r } of await withReservations((id) => tx.reservations.get(id), blocking)) {
    let holder = holders.get(r.instance_id)
    if (!holder) {
      const i = await tx.instances.get(r.instance_id)
      holder = { instance_id: r.instance_id, instance_name: i?.name ?? r.instance_id, instance_status: i?.status ?? 'gone' }
      holders.set(r.instance_id, holder)
    }
    out.push({ ...holder, path: fileOf.get(path) ?? path, held_path, reservation_id: r.id, exclusive: r.exclusive, expires_at: r.expires_at, reason: r.reason })
  }
  return out
}

const describe = (c: EditConflict) => `${c.path} held as ${c.held_path} by ${c.instance_name}`

/** What the model reads: for each conflict who holds what, why and until when, and how to ask for it. */
export function denyReason(self: string, conflicts: EditConflict[]): string {
  const lines = conflicts.map((c) => {
    const until = c.expires_at ? `until ${c.expires_at}` : 'with no expiry'
    const why = c.reason ? `reason "${c.reason}"` : 'no reason given'
    return `- ${c.path}: reserved as "${c.held_path}" by ${c.instance_name} (${c.instance_status}), ${why}, ${until}.`
  })
  const holders = [...new Set(conflicts.map((c) => c.instance_name))]
  const ask = holders.map((h) => `muster send ${quote(h)} --subject "May I edit ${conflicts.find((c) => c.instance_name === h)!.path}?" --body "…"`)
  return [
    `Muster denied this edit: another agent holds ${conflicts.length === 1 ? 'this file' : 'these files'} (you are ${self}).`,
    ...lines,
    `Work on something else meanwhile, or ask the holder to release it: ${ask.join(' ; ')}`,
  ].join('\n')
}

const quote = (s: string) => (/^[\w.@-]+$/.test(s) ? s : `'${s.replace(/'/g, `'\\''`)}'`)

// PreToolUse of a tool that writes files: each file is checked against the other
// instances' reservations with the reservation service's overlap rule, inside the
// event's unit (one unit per decision, nothing read apart). A file another instance
// holds exclusively denies the call; in edit-reserve mode each free file is reserved
// for the session (or its own `edit` reservation renewed) before the answer.
import type { Tx } from '../store'
import type { Holding } from '../store/reservations'
import type { HolderView } from '../store/holders'
import { expiresAt, holderScope } from './holders'
import { recordAudit } from './audit'
import { grantIn, overlapsIn, withReservations, type Overlap } from './reservations'
import { literalPattern } from './hook-paths'
import type { Session } from './hook-session'

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

/** Decides an edit of `files` (root-relative) by the session inside `tx`; emits edit.blocked and audits hook.deny on a denial. */
export async function decideEdit(tx: Tx, session: Session, files: string[], reserveMs: number | undefined): Promise<EditDecision> {
  const { project, session_id } = session.row
  const self = session.instance.id
  const patterns = files.map(literalPattern)
  // Everyone's overlapping reservations, the session's own included (edit-reserve mode renews those).
  const found = await overlapsIn(tx.reservations, project, patterns, true, null)
  const blocking = found.filter((o) => o.holding.instance_id !== self && o.holding.exclusive)
  if (blocking.length) {
    const conflicts = await conflictsIn(tx, blocking, files, patterns)
    const paths = [...new Set(conflicts.map((c) => c.path))]
    if (conflicts.length) {
      await tx.emit('edit.blocked', { session_id, instance_id: self, paths, conflicts }, 'hooks')
      await recordAudit(tx, holderScope(session.instance, 'hook.deny', `sessions/${session_id}`), conflicts.map(describe).join('; ').slice(0, 1000))
      return { denied: true, paths, conflicts, reason: denyReason(session.instance.name, conflicts) }
    }
  }
  if (reserveMs !== undefined) await reserveEdits(tx, session, patterns, found, reserveMs)
  return { denied: false }
}

/**
 * Edit-reserve mode: each file nothing overlaps gets an exclusive reservation of exactly
 * that file; one the session's own `edit` reservation covers has it renewed instead; one
 * another own reservation covers (a task's, one by hand), or another instance's shared
 * one overlaps, is left as it is.
 */
async function reserveEdits(tx: Tx, session: Session, patterns: string[], found: Overlap[], ttl: number): Promise<void> {
  const self = session.instance.id
  const byPath = new Map<string, Holding[]>()
  for (const o of found) (byPath.get(o.path) ?? byPath.set(o.path, []).get(o.path)!).push(o.holding)
  const renewed = new Set<string>()
  for (const pattern of patterns) {
    const holdings = byPath.get(pattern) ?? []
    if (holdings.some((h) => h.instance_id !== self)) continue
    if (holdings.length === 0) {
      await grantIn(tx, session.instance, { project: session.row.project, paths: [pattern], exclusive: true, ttl, reason: EDIT_REASON })
      continue
    }
    for (const h of holdings) {
      if (renewed.has(h.id)) break
      const r = await tx.reservations.get(h.id)
      if (r?.reason === EDIT_REASON) {
        await tx.reservations.renew(h.id, expiresAt(ttl))
        renewed.add(h.id)
        break
      }
    }
  }
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

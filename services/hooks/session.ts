// A hook session is an instance: the first event of an unknown session_id registers one
// (inside the event's unit, with the instances service's own registration), later events
// act as it and each is a heartbeat, SessionStart of a still-registered instance resumes
// it, and SessionEnd deregisters it (releasing what it held, as any deregistration does).
// SessionEnd by /clear or resume holds the instance instead: the agent starts a new
// session id right after, and that SessionStart (same agent, name and root, within
// --session-hold, 60 s by default, on whichever replica) takes the instance over with all it holds;
// jobs/session-holds.ts deregisters an instance nobody took over.
import { basename, isAbsolute, relative, resolve } from 'node:path'
import { nowIso, nowMs, parseDuration } from '../../lib/time'
import { invalid } from '../../lib/errors'
import type { Ctx } from '../context'
import type { Tx } from '../../store'
import type { Instance } from '../../store/instances'
import type { HookAgent, HookSession, LiveSession } from '../../store/sessions'
import { checkCapabilities, deregisterIn, instanceTokenFor, registerIn, type Owner } from '../instances'
import { holderScope, TTL_MAX_MS, TTL_MIN_MS } from '../holders'
import { recordAudit, type Role } from '../audit'
import { forbidden } from '../../lib/errors'
import { log } from '../../obs/log'
import { approvalWait } from '../approvals'
import type { CoreEvent } from './types'

/** What the hook config says about the session (X-Muster-* headers), checked once per request. */
export interface HookHeaders {
  agentName?: string
  project?: string
  root?: string
  /** The git root `muster hook` found for the event's cwd (X-Muster-Git-Root): a new session's root. */
  gitRoot?: string
  /** Edit-reserve mode: the TTL of each edit's reservation. */
  reserveMs?: number
  capabilities?: string[]
  /** The credential of the call (not a header): a session's instance is bound to its agent token. */
  tokenId?: string | null
  role?: Role
  /** X-Muster-Approval-Wait: how long a PermissionRequest's answer may wait for a person. */
  approvalWaitMs?: number
  /** Aborted when the agent hangs up (not a header): a held PermissionRequest is withdrawn. */
  signal?: AbortSignal
  /** Aborted when the call's token is revoked or expires (http/caller.ts heldUntil): a held PermissionRequest is withdrawn, 401. */
  until?: AbortSignal
  /** The agent token as presented: a new session's instance token is made from it (services/instances.ts Owner). */
  owner?: Owner | null
}

/** SessionEnd reasons after which the agent goes on in a new session of the same process. */
const GOING_ON = new Set(['clear', 'resume'])

/**
 * A header an agent filled from its environment, or null when it sent the variable itself
 * (`$MUSTER_AGENT`): an agent that runs Claude Code's http hooks without expanding them (Cursor's
 * third-party hooks may) would otherwise name every session "$MUSTER_AGENT".
 */
const expanded = (value: string | null) => (value !== null && /^\$\{?[A-Za-z_][A-Za-z0-9_]*\}?$/.test(value.trim()) ? null : value)

const text = (name: string, value: string | null, max = 1000): string | undefined => {
  const v = value?.trim()
  if (!v) return undefined
  if (v.length > max) throw invalid(`invalid ${name}: at most ${max} characters`)
  return v
}

/** The X-Muster-* headers of a hook request: 400 naming the header when one is malformed. */
export function hookHeaders(headers: Headers): HookHeaders {
  const out: HookHeaders = {
    agentName: text('X-Muster-Agent', expanded(headers.get('x-muster-agent'))),
    project: text('X-Muster-Project', expanded(headers.get('x-muster-project')), 1024),
    root: text('X-Muster-Root', headers.get('x-muster-root'), 4096),
    gitRoot: text('X-Muster-Git-Root', headers.get('x-muster-git-root'), 4096),
  }
  const reserve = text('X-Muster-Reserve', headers.get('x-muster-reserve'))
  if (reserve !== undefined) {
    const ms = parseDuration(reserve)
    if (ms === null || ms < TTL_MIN_MS || ms > TTL_MAX_MS)
      throw invalid(`invalid X-Muster-Reserve: expected a duration from 1s to 168h, like 30m (got "${reserve}")`)
    out.reserveMs = ms
  }
  const wait = approvalWait(headers.get('x-muster-approval-wait'))
  if (wait !== undefined) out.approvalWaitMs = wait
  const caps = text('X-Muster-Capabilities', headers.get('x-muster-capabilities'), 20_000)
  if (caps !== undefined) out.capabilities = checkCapabilities(caps.split(',').map((c) => c.trim()).filter(Boolean))
  return out
}

/** The session an event acts as, inside its unit. */
export interface Session {
  row: HookSession
  instance: Instance
  /** Registered by this event (its first, or the first after the instance went away). */
  registered: boolean
  /** SessionStart of a known session whose instance was still registered, or that took over a held one. */
  resumed: boolean
  /** The event's heartbeat is left to the throttled one after the unit (a live instance, not a resume). */
  throttledBeat: boolean
}

const resource = (sessionId: string) => `sessions/${sessionId}`

/**
 * 403 when an agent token sends the event of a live session (`live`, from
 * SessionsStore.live) whose instance another token registered (access.md: an agent token
 * acts only as its own instances).
 */
export function assertSessionOwner(live: LiveSession | null, headers: HookHeaders): void {
  if (headers.role !== 'agent' || !live) return
  if (live.tokenId !== headers.tokenId)
    throw forbidden(`session ${live.row.session_id} acts as an instance registered with another token: send its events with that token`)
}

/**
 * Opens the event's session inside `tx`: the known instance with a heartbeat, or a new
 * registration (audited hook.session, as is a resume).
 */
export async function openSession(tx: Tx, agent: HookAgent, event: CoreEvent, headers: HookHeaders): Promise<Session> {
  // One read for both (on PostgreSQL each is a round trip under the write lock).
  const found = await tx.sessions.withInstance(event.sessionId)
  const row = found?.row ?? null
  if (row && row.ended_at === null) {
    // A live instance's heartbeat is the throttled one every call with a token gets (the
    // caller's, `throttledBeat`); a resume, or a stale instance, beats inside this unit, so a
    // stale one turns active before it is granted anything.
    const resumed = event.kind === 'session-start'
    const known = found!.instance
    const instance = known && (resumed || known.status !== 'active') ? await tx.instances.heartbeat(row.instance_id) : known
    if (instance) {
      if (resumed) await recordAudit(tx, holderScope(instance, 'hook.session', resource(row.session_id)), `resumed ${instance.name}`)
      return { row, instance, registered: false, resumed, throttledBeat: !resumed && known!.status === 'active' }
    }
  }
  const { root, given } = sessionRoot(event, headers, row?.root)
  if (event.kind === 'session-start') {
    const taken = await takeOver(tx, agent, event, headers, root)
    if (taken) return taken
  }
  const name = headers.agentName ?? row?.name ?? `${agent}-${event.sessionId.slice(0, 8)}`
  const id = crypto.randomUUID()
  const token = instanceTokenFor(id, headers.owner)
  const instance = await registerIn(tx, undefined, { name, workspace: root, capabilities: headers.capabilities }, token, headers.tokenId ?? null, id)
  const corrected = given === null ? '' : `; root ${root}, the git root, not ${given}`
  await recordAudit(tx, holderScope(instance, 'hook.session', resource(event.sessionId)), `registered ${name} (${agent})${corrected}`)
  if (given !== null) {
    const data = { session_id: event.sessionId, instance_id: instance.id, root, given }
    await tx.emit('session.root_corrected', data, 'hooks')
    log.warn({ ...data, instance_name: name }, 'hook session root corrected to the git root its muster hook reported')
  }
  const fresh = await putSession(tx, event.sessionId, { agent, instance_id: instance.id, name, token, root, project: projectOf(headers, row, root) })
  return { row: fresh, instance, registered: true, resumed: false, throttledBeat: false }
}

/** The session's project: the hook's header, else what the session had, else the root's last segment. */
const projectOf = (headers: HookHeaders, before: { project: string } | null, root: string) =>
  headers.project ?? before?.project ?? (basename(root) || 'default')

/** Starts session `sessionId` (a new row, or its row started over) as the given instance. */
async function putSession(tx: Tx, sessionId: string, s: Omit<HookSession, 'session_id' | 'started_at' | 'ended_at'>): Promise<HookSession> {
  const fresh: HookSession = { session_id: sessionId, ...s, started_at: nowIso(), ended_at: null }
  await tx.sessions.put(fresh)
  return fresh
}

/**
 * SessionStart right after a SessionEnd by /clear or resume: the held session of this agent
 * at this root (of this name when the hook names it; of this agent token) is taken over,
 * its instance and all it holds kept. Null when there is none (or its instance is gone).
 */
async function takeOver(tx: Tx, agent: HookAgent, event: CoreEvent, headers: HookHeaders, root: string): Promise<Session | null> {
  const owner = headers.role === 'admin' || headers.role === undefined ? undefined : (headers.tokenId ?? undefined)
  const held = await tx.sessions.takeHeld(agent, root, headers.agentName ?? null, owner, nowIso())
  if (!held) return null
  const instance = await tx.instances.heartbeat(held.instance_id)
  if (!instance) return null
  const row = await putSession(tx, event.sessionId, { agent, instance_id: instance.id, name: held.name, token: held.token, root, project: projectOf(headers, held, root) })
  await recordAudit(tx, holderScope(instance, 'hook.session', resource(event.sessionId)), `took over ${instance.name} from session ${held.session_id}`)
  return { row, instance, registered: false, resumed: true, throttledBeat: false }
}

/** `path` is `root` or lies below it. */
function within(root: string, path: string): boolean {
  const rel = relative(resolve(root), resolve(root, path))
  return rel === '' || (rel !== '..' && !rel.startsWith('../') && !isAbsolute(rel))
}

/**
 * A new session's root, against which its edited paths are placed (a root above or below the
 * repository would place `src/a.ts` as `shop/src/a.ts` or `a.ts`, and miss what others hold):
 * - the git root `muster hook` reports (X-Muster-Git-Root) is the root; an X-Muster-Root that
 *   differs is corrected to it (`given`, for the event and the log line);
 * - without one (an http hook, a hand-made call) X-Muster-Root, else the session's earlier root,
 *   else the event's cwd, and a root must contain the event's cwd: 400 otherwise, as the
 *   session's paths would be placed outside it.
 * The server cannot read the agent's disk: it holds the root to what the session's own hook saw.
 */
export function sessionRoot(event: CoreEvent, headers: HookHeaders, earlier: string | undefined): { root: string; given: string | null } {
  const cwd = event.cwd?.trim() ? event.cwd : null
  const root = headers.gitRoot ?? headers.root ?? earlier ?? cwd ?? ''
  const named = headers.gitRoot ? 'X-Muster-Git-Root' : headers.root ? 'X-Muster-Root' : null
  if (named && cwd && !within(root, cwd))
    throw invalid(
      `${named} "${root}" does not contain the event's cwd "${cwd}": a session's root is the git root of its repository (muster hook sends it); fix the hook's headers`,
    )
  const given = headers.gitRoot && headers.root && resolve(headers.root) !== resolve(headers.gitRoot) ? headers.root : null
  return { root, given }
}

/**
 * SessionEnd: the instance deregisters (its grants released, reason holder_deregistered) and
 * the session ends; by /clear or resume (`reason`) the instance is held for the next session.
 * Returns whether it was held.
 */
export async function endSession(ctx: Ctx, tx: Tx, session: Session, reason: unknown): Promise<boolean> {
  if (typeof reason === 'string' && GOING_ON.has(reason)) {
    await tx.sessions.hold(session.row.session_id, nowIso(), new Date(nowMs() + ctx.config.sessionHoldMs).toISOString())
    return true
  }
  await deregisterIn(ctx, tx, session.instance.id)
  await tx.sessions.end(session.row.session_id, nowIso())
  return false
}

/** One run of the hold job: each instance held past its hold, and taken over by no session, deregisters. */
export async function releaseExpiredHolds(ctx: Ctx): Promise<number> {
  // A committed read first: most runs find nothing held, and need no write unit.
  const next = await ctx.store.sessions.nextHoldEnd()
  if (next === null || next > nowIso()) return 0
  return ctx.store.write(async (tx) => {
    let released = 0
    for (const held of await tx.sessions.takeExpiredHolds(nowIso(), 100))
      if (!(await tx.sessions.liveFor(held.instance_id)) && (await deregisterIn(ctx, tx, held.instance_id))) released++
    return released
  })
}

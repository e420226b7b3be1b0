// Agent hook sessions (Claude Code, Codex): each session_id acts as one instance. The
// instance token is kept here in the clear, unlike in instances, because a resumed
// session's `muster hook` is told it again (for the agent's shell, never its model);
// GET /api/sessions never shows it. A session ended by /clear or resume is held: its
// instance stays registered until held_until for the next session to take over.
import { stmt, type Runner, type UnitHooks } from './runner'
import { INSTANCE_COLUMNS, toInstance, type Instance, type InstanceRow } from './instances'
import { Groups } from '../lib/groups'

export type HookAgent = 'claude-code' | 'codex' | 'copilot-cli' | 'cursor' | 'gemini-cli' | 'opencode' | 'cline'

export interface HookSession {
  session_id: string
  agent: HookAgent
  instance_id: string
  name: string
  token: string
  root: string
  project: string
  started_at: string
  ended_at: string | null
}

/** A session as GET /api/sessions shows it: without its token. */
export type SessionView = Omit<HookSession, 'token'>

/**
 * A session that has not ended, with its instance and the agent token that registered that
 * (null: the admin token, or none): what a hook decides on before its unit, all of it fixed
 * for the session's life (an instance keeps its id and name).
 */
export interface LiveSession {
  row: SessionView
  instance: Pick<Instance, 'id' | 'name'>
  tokenId: string | null
}

/** What a committed unit changed: these sessions, and the sessions of these (deleted) instances. */
export type SessionsChange = { sessions?: string[]; instances?: string[] }

export interface SessionsWrites {
  /** The session with its instance (null when that is gone), in one read: a hook's unit opens its session with it. */
  withInstance(sessionId: string): Promise<{ row: HookSession; instance: Instance | null } | null>
  /** Inserts the session, or starts it over (new instance, token, started_at) when the id is known. */
  put(s: HookSession): Promise<void>
  end(sessionId: string, at: string): Promise<void>
  /** Ends the session, its instance kept for a takeover until `until`. */
  hold(sessionId: string, at: string, until: string): Promise<void>
  /**
   * The newest held session (held_until after `now`) of `agent` at `root`, named `name` when
   * given, else any, whose instance agent token `tokenId` registered (undefined: any), taken
   * (held_until cleared) so no other SessionStart takes it too; null when none.
   */
  takeHeld(agent: HookAgent, root: string, name: string | null, tokenId: string | undefined, now: string): Promise<HookSession | null>
  /** Held sessions whose hold ran out by `now`, each released (held_until cleared). */
  takeExpiredHolds(now: string, limit: number): Promise<HookSession[]>
  /** Whether a session that has not ended acts as instance `instanceId`. */
  liveFor(instanceId: string): Promise<boolean>
}

export interface SessionsStore {
  get(sessionId: string): Promise<SessionView | null>
  /** Newest first. */
  list(limit: number): Promise<SessionView[]>
  /** When the earliest hold runs out, or null when no session is held. */
  nextHoldEnd(): Promise<string | null>
  /** The session with its instance in one read (a hook's first read); null when it ended or its instance is gone. */
  live(sessionId: string): Promise<LiveSession | null>
  /** Called by the writes after the COMMIT of a unit that changed sessions or deleted instances. */
  changed(change: SessionsChange): void
}

const COLUMNS = 'session_id, agent, instance_id, name, token, root, project, started_at, ended_at'
const VIEW = 'session_id, agent, instance_id, name, root, project, started_at, ended_at'
const ONE_VIEW = stmt<SessionView>(`SELECT ${VIEW} FROM hook_sessions WHERE session_id = ?`)
const LIST = stmt<SessionView>(`SELECT ${VIEW} FROM hook_sessions ORDER BY started_at DESC, session_id LIMIT ?`)
const PUT = stmt(
  `INSERT INTO hook_sessions (${COLUMNS}) VALUES (?, ?, ?, ?, ?, ?, ?, ?, NULL)
   ON CONFLICT (session_id) DO UPDATE SET agent = excluded.agent, instance_id = excluded.instance_id, name = excluded.name,
     token = excluded.token, root = excluded.root, project = excluded.project, started_at = excluded.started_at, ended_at = NULL`,
)
const END = stmt('UPDATE hook_sessions SET ended_at = ?, held_until = NULL WHERE session_id = ?')
const HOLD = stmt('UPDATE hook_sessions SET ended_at = ?, held_until = ? WHERE session_id = ?')
/**
 * The takeover statement with its optional conditions: the session's name, its instance's agent
 * token. The outer `held_until IS NOT NULL` is checked again on a row another unit changed first
 * (PostgreSQL), so two SessionStarts never both take one hold.
 */
const takeHeld = (named: boolean, owned: boolean) =>
  stmt<HookSession>(
    `UPDATE hook_sessions SET held_until = NULL WHERE session_id = (
       SELECT session_id FROM hook_sessions WHERE held_until > ? AND agent = ? AND root = ?${named ? ' AND name = ?' : ''}
         ${owned ? 'AND instance_id IN (SELECT id FROM instances WHERE token_id = ?)' : ''}
       ORDER BY ended_at DESC, session_id LIMIT 1) AND held_until IS NOT NULL
     RETURNING ${COLUMNS}`,
  )
const TAKE_EXPIRED = stmt<HookSession>(
  `UPDATE hook_sessions SET held_until = NULL WHERE session_id IN (
     SELECT session_id FROM hook_sessions WHERE held_until <= ? ORDER BY held_until LIMIT ?) AND held_until IS NOT NULL
   RETURNING ${COLUMNS}`,
)
const NEXT_HOLD_END = stmt<{ at: string | null }>('SELECT MIN(held_until) AS at FROM hook_sessions WHERE held_until IS NOT NULL')
const LIVE = stmt<SessionView & { instance_name: string; token_id: string | null }>(
  `SELECT ${VIEW.split(', ').map((c) => `s.${c}`).join(', ')}, i.name AS instance_name, i.token_id
   FROM hook_sessions s JOIN instances i ON i.id = s.instance_id WHERE s.session_id = ? AND s.ended_at IS NULL`,
)
const SESSION_FIELDS = COLUMNS.split(', ')
const INSTANCE_FIELDS = INSTANCE_COLUMNS.split(', ')
/** A session's columns, then its instance's as `i_<column>` (all null when the instance is gone). */
const WITH_INSTANCE = stmt<HookSession & Record<string, string | null>>(
  `SELECT ${SESSION_FIELDS.map((c) => `s.${c}`).join(', ')}, ${INSTANCE_FIELDS.map((c) => `i.${c} AS i_${c}`).join(', ')}
   FROM hook_sessions s LEFT JOIN instances i ON i.id = s.instance_id WHERE s.session_id = ?`,
)
const LIVE_FOR = stmt<{ n: number }>('SELECT 1 AS n FROM hook_sessions WHERE instance_id = ? AND ended_at IS NULL LIMIT 1')

/** `changed`: the reads' SessionsStore.changed. */
export function sessionsWrites(w: Runner, unit: UnitHooks, changed: (change: SessionsChange) => void): SessionsWrites {
  const touched = (...sessions: string[]) => void (sessions.length && unit.afterCommit(() => changed({ sessions })))
  return {
    async withInstance(id) {
      const found = await w.get(WITH_INSTANCE, id)
      if (!found) return null
      const row = Object.fromEntries(SESSION_FIELDS.map((c) => [c, found[c]])) as unknown as HookSession
      const instance = found.i_id === null ? null : toInstance(Object.fromEntries(INSTANCE_FIELDS.map((c) => [c, found[`i_${c}`]])) as unknown as InstanceRow)
      return { row, instance }
    },
    put: async (s) => void (await w.run(PUT, s.session_id, s.agent, s.instance_id, s.name, s.token, s.root, s.project, s.started_at), touched(s.session_id)),
    end: async (id, at) => void (await w.run(END, at, id), touched(id)),
    hold: async (id, at, until) => void (await w.run(HOLD, at, until, id), touched(id)),
    takeHeld: async (agent, root, name, tokenId, now) => {
      const args: string[] = [now, agent, root]
      if (name !== null) args.push(name)
      if (tokenId !== undefined) args.push(tokenId)
      const taken = await w.get(takeHeld(name !== null, tokenId !== undefined), ...args)
      if (taken) touched(taken.session_id)
      return taken
    },
    takeExpiredHolds: async (now, limit) => {
      const rows = await w.all(TAKE_EXPIRED, now, limit)
      touched(...rows.map((r) => r.session_id))
      return rows
    },
    liveFor: async (id) => !!(await w.get(LIVE_FOR, id)),
  }
}

/** Live sessions kept (a fleet's, each answered at every hook). */
const KEPT_SESSIONS = 100_000

/**
 * `keep`: this process is the database's only writer, so a live session is kept from its
 * first read until a unit changing the session, or deleting its instance, commits; on
 * PostgreSQL other replicas write too, and every hook reads.
 */
export function sessionsStore(r: Runner, keep = false): SessionsStore {
  const kept = new Map<string, LiveSession>()
  const ofInstance = new Groups<string, string>()
  // Counts the commits that changed sessions, so a read one of them overtook is answered but not kept.
  let writes = 0
  const drop = (sessionId: string) => {
    const live = kept.get(sessionId)
    if (!live) return
    kept.delete(sessionId)
    ofInstance.remove(live.instance.id, sessionId)
  }
  const read = async (id: string): Promise<LiveSession | null> => {
    const found = await r.get(LIVE, id)
    if (!found) return null
    const { session_id, agent, instance_id, name, root, project, started_at, ended_at } = found
    return { row: { session_id, agent, instance_id, name, root, project, started_at, ended_at }, instance: { id: instance_id, name: found.instance_name }, tokenId: found.token_id ?? null }
  }
  return {
    get: (id) => r.get(ONE_VIEW, id),
    list: (limit) => r.all(LIST, limit),
    nextHoldEnd: async () => (await r.get(NEXT_HOLD_END))?.at ?? null,
    async live(id) {
      if (!keep) return read(id)
      const hit = kept.get(id)
      if (hit) return hit
      const seen = writes
      const live = await read(id)
      if (!live || seen !== writes) return live
      if (kept.size >= KEPT_SESSIONS) drop(kept.keys().next().value!)
      kept.set(id, live)
      ofInstance.add(live.instance.id, id)
      return live
    },
    changed({ sessions = [], instances = [] }) {
      if (!keep) return
      writes++
      for (const id of sessions) drop(id)
      for (const id of instances) for (const sessionId of ofInstance.take(id)) drop(sessionId)
    },
  }
}

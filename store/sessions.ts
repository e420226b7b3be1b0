// Agent hook sessions (Claude Code, Codex): each session_id acts as one instance. The
// instance token is kept here in the clear, unlike in instances, because a resumed
// session is told it again in its briefing; GET /api/sessions never shows it.
import { stmt, type Runner } from './runner'

export type HookAgent = 'claude-code' | 'codex'

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

export interface SessionsWrites {
  get(sessionId: string): Promise<HookSession | null>
  /** Inserts the session, or starts it over (new instance, token, started_at) when the id is known. */
  put(s: HookSession): Promise<void>
  end(sessionId: string, at: string): Promise<void>
}

export interface SessionsStore {
  get(sessionId: string): Promise<SessionView | null>
  /** Newest first. */
  list(limit: number): Promise<SessionView[]>
}

const COLUMNS = 'session_id, agent, instance_id, name, token, root, project, started_at, ended_at'
const VIEW = 'session_id, agent, instance_id, name, root, project, started_at, ended_at'
const ONE = stmt<HookSession>(`SELECT ${COLUMNS} FROM hook_sessions WHERE session_id = ?`)
const ONE_VIEW = stmt<SessionView>(`SELECT ${VIEW} FROM hook_sessions WHERE session_id = ?`)
const LIST = stmt<SessionView>(`SELECT ${VIEW} FROM hook_sessions ORDER BY started_at DESC, session_id LIMIT ?`)
const PUT = stmt(
  `INSERT INTO hook_sessions (${COLUMNS}) VALUES (?, ?, ?, ?, ?, ?, ?, ?, NULL)
   ON CONFLICT (session_id) DO UPDATE SET agent = excluded.agent, instance_id = excluded.instance_id, name = excluded.name,
     token = excluded.token, root = excluded.root, project = excluded.project, started_at = excluded.started_at, ended_at = NULL`,
)
const END = stmt('UPDATE hook_sessions SET ended_at = ? WHERE session_id = ?')

export function sessionsWrites(w: Runner): SessionsWrites {
  return {
    get: (id) => w.get(ONE, id),
    put: async (s) => void (await w.run(PUT, s.session_id, s.agent, s.instance_id, s.name, s.token, s.root, s.project, s.started_at)),
    end: async (id, at) => void (await w.run(END, at, id)),
  }
}

export function sessionsStore(r: Runner): SessionsStore {
  return {
    get: (id) => r.get(ONE_VIEW, id),
    list: (limit) => r.all(LIST, limit),
  }
}

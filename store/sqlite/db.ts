// The embedded database: one SQLite file in the data dir, WAL journal, and
// schema migrations keyed on PRAGMA user_version. Only store/ imports this.
import type { UnitHooks } from '../runner'
import { log } from '../../obs/log'
import { writeBatchSize } from '../../obs/prometheus'
import { Database } from 'bun:sqlite'
import { mkdirSync } from 'node:fs'
import { join } from 'node:path'

/** Each entry moves the schema from version i to i+1. Append only; never edit a shipped one. */
export const MIGRATIONS: string[] = [
  `
  CREATE TABLE documents (
    space TEXT NOT NULL, key TEXT NOT NULL, version INTEGER NOT NULL, hash TEXT NOT NULL,
    content_type TEXT NOT NULL, updated_at TEXT NOT NULL, value BLOB NOT NULL,
    PRIMARY KEY (space, key)
  ) WITHOUT ROWID;
  CREATE TABLE document_history (
    space TEXT NOT NULL, key TEXT NOT NULL, version INTEGER NOT NULL, hash TEXT NOT NULL,
    content_type TEXT NOT NULL, updated_at TEXT NOT NULL, value BLOB NOT NULL,
    PRIMARY KEY (space, key, version)
  );
  CREATE TABLE audit (
    id INTEGER PRIMARY KEY AUTOINCREMENT, timestamp TEXT NOT NULL, actor TEXT NOT NULL,
    action TEXT NOT NULL, resource TEXT NOT NULL, detail TEXT NOT NULL, outcome TEXT NOT NULL
  );
  CREATE INDEX audit_timestamp ON audit (timestamp);
  CREATE INDEX audit_actor ON audit (actor, id);
  CREATE INDEX audit_action ON audit (action, id);
  CREATE TABLE events (
    id INTEGER PRIMARY KEY AUTOINCREMENT, topic TEXT NOT NULL, data TEXT NOT NULL,
    source TEXT NOT NULL DEFAULT '', created_at TEXT NOT NULL
  );
  CREATE INDEX events_created ON events (created_at);
  CREATE TABLE webhooks (
    id TEXT PRIMARY KEY, url TEXT NOT NULL, patterns TEXT NOT NULL, secret TEXT NOT NULL DEFAULT '',
    active INTEGER NOT NULL DEFAULT 1, created_at TEXT NOT NULL, last_fired TEXT,
    fail_count INTEGER NOT NULL DEFAULT 0
  );
  CREATE TABLE instances (
    id TEXT PRIMARY KEY, name TEXT NOT NULL, workspace TEXT NOT NULL DEFAULT '',
    intent TEXT NOT NULL DEFAULT '', stack TEXT NOT NULL DEFAULT '',
    capabilities TEXT NOT NULL DEFAULT '[]', status TEXT NOT NULL,
    registered_at TEXT NOT NULL, last_seen TEXT NOT NULL, token_hash TEXT NOT NULL UNIQUE
  );
  CREATE TABLE rules (
    project TEXT NOT NULL, rule_id TEXT NOT NULL, severity TEXT NOT NULL DEFAULT 'error',
    match_type TEXT NOT NULL DEFAULT 'regex', pattern TEXT NOT NULL, message TEXT NOT NULL DEFAULT '',
    applies_to TEXT NOT NULL DEFAULT '["*"]', stack TEXT NOT NULL DEFAULT '',
    source TEXT NOT NULL, status TEXT NOT NULL, proposed_by TEXT NOT NULL DEFAULT '',
    context TEXT NOT NULL DEFAULT '', created_at TEXT NOT NULL, updated_at TEXT NOT NULL,
    PRIMARY KEY (project, rule_id)
  );
  CREATE TABLE compliance_runs (
    id INTEGER PRIMARY KEY AUTOINCREMENT, instance_id TEXT NOT NULL, project TEXT NOT NULL,
    contract TEXT NOT NULL, pass INTEGER NOT NULL, violations TEXT NOT NULL, run_at TEXT NOT NULL
  );
  CREATE INDEX compliance_instance ON compliance_runs (instance_id, id);
  CREATE TABLE templates (
    id TEXT PRIMARY KEY, name TEXT NOT NULL, description TEXT NOT NULL DEFAULT '',
    kind TEXT NOT NULL, data TEXT NOT NULL, tags TEXT NOT NULL DEFAULT '[]',
    version INTEGER NOT NULL, created_at TEXT NOT NULL, updated_at TEXT NOT NULL
  );
  CREATE TABLE agent_metrics (
    instance_id TEXT NOT NULL, metric_name TEXT NOT NULL, period TEXT NOT NULL,
    metric_value INTEGER NOT NULL, PRIMARY KEY (instance_id, period, metric_name)
  ) WITHOUT ROWID;
  CREATE TABLE llm_usage (
    id INTEGER PRIMARY KEY AUTOINCREMENT, instance_id TEXT NOT NULL DEFAULT '',
    project TEXT NOT NULL DEFAULT '', provider TEXT NOT NULL, model TEXT NOT NULL,
    tokens_in INTEGER NOT NULL DEFAULT 0, tokens_out INTEGER NOT NULL DEFAULT 0,
    cost_usd REAL NOT NULL DEFAULT 0, request_type TEXT NOT NULL DEFAULT 'completion',
    session_tag TEXT NOT NULL DEFAULT '', created_at TEXT NOT NULL
  );
  CREATE INDEX llm_created ON llm_usage (created_at);
  `,
  // Coordination: one server-wide fence counter for every grant (locks, reservations, task claims).
  `
  CREATE TABLE fence_counter (id INTEGER PRIMARY KEY CHECK (id = 1), value INTEGER NOT NULL);
  INSERT INTO fence_counter (id, value) VALUES (1, 0);
  `,
  // Task queue: tasks (claim order = priority, then id) and their dependency edges.
  `
  CREATE TABLE tasks (
    id INTEGER PRIMARY KEY AUTOINCREMENT, queue TEXT NOT NULL, title TEXT NOT NULL,
    payload TEXT NOT NULL DEFAULT 'null', priority INTEGER NOT NULL DEFAULT 0, status TEXT NOT NULL,
    depends_on TEXT NOT NULL DEFAULT '[]', requires TEXT NOT NULL DEFAULT '[]',
    attempts INTEGER NOT NULL DEFAULT 0, max_attempts INTEGER NOT NULL,
    claimed_by TEXT, claim_id TEXT, fence INTEGER, visible_until TEXT, available_at TEXT,
    result TEXT, last_error TEXT, dedupe_key TEXT, created_at TEXT NOT NULL, updated_at TEXT NOT NULL
  );
  CREATE INDEX tasks_claim_order ON tasks (queue, status, priority DESC, id);
  CREATE INDEX tasks_claimed_by ON tasks (claimed_by) WHERE status = 'claimed';
  CREATE INDEX tasks_visible_until ON tasks (visible_until) WHERE status = 'claimed' AND visible_until IS NOT NULL;
  CREATE UNIQUE INDEX tasks_dedupe ON tasks (queue, dedupe_key)
    WHERE dedupe_key IS NOT NULL AND status IN ('blocked', 'ready', 'claimed');
  CREATE TABLE task_deps (
    task_id INTEGER NOT NULL, depends_on INTEGER NOT NULL, PRIMARY KEY (task_id, depends_on)
  ) WITHOUT ROWID;
  CREATE INDEX task_deps_reverse ON task_deps (depends_on, task_id);
  `,
  // Versioned documents keep each value once: an append-only rowid table of versions (value
  // included) and a small current-version pointer per key. Before, the value went into a WITHOUT
  // ROWID current table and again into the history, and large values inline in that B-tree slowed
  // every later write.
  `
  CREATE TABLE doc_versions (
    id INTEGER PRIMARY KEY, space TEXT NOT NULL, key TEXT NOT NULL, version INTEGER NOT NULL,
    hash TEXT NOT NULL, content_type TEXT NOT NULL, updated_at TEXT NOT NULL, value BLOB NOT NULL,
    UNIQUE (space, key, version)
  );
  CREATE TABLE doc_current (
    space TEXT NOT NULL, key TEXT NOT NULL, version_id INTEGER NOT NULL, PRIMARY KEY (space, key)
  ) WITHOUT ROWID;
  INSERT INTO doc_versions (space, key, version, hash, content_type, updated_at, value)
    SELECT space, key, version, hash, content_type, updated_at, value FROM document_history ORDER BY space, key, version;
  INSERT INTO doc_current (space, key, version_id)
    SELECT d.space, d.key, v.id FROM documents d JOIN doc_versions v ON v.space = d.space AND v.key = d.key AND v.version = d.version;
  DROP TABLE documents;
  DROP TABLE document_history;
  `,
  // Locks (one row per holder of a named mutex or semaphore) and path reservations.
  `
  CREATE TABLE lock_holders (
    name TEXT NOT NULL, instance_id TEXT NOT NULL, lock_limit INTEGER NOT NULL, fence INTEGER NOT NULL,
    reason TEXT, acquired_at TEXT NOT NULL, expires_at TEXT,
    PRIMARY KEY (name, instance_id)
  ) WITHOUT ROWID;
  CREATE INDEX lock_holders_instance ON lock_holders (instance_id);
  CREATE INDEX lock_holders_expiry ON lock_holders (expires_at) WHERE expires_at IS NOT NULL;
  CREATE TABLE reservations (
    seq INTEGER PRIMARY KEY AUTOINCREMENT, id TEXT NOT NULL UNIQUE, project TEXT NOT NULL,
    instance_id TEXT NOT NULL, paths TEXT NOT NULL, exclusive INTEGER NOT NULL, fence INTEGER NOT NULL,
    reason TEXT, created_at TEXT NOT NULL, expires_at TEXT
  );
  CREATE INDEX reservations_project ON reservations (project, seq);
  CREATE INDEX reservations_instance ON reservations (instance_id);
  CREATE INDEX reservations_expiry ON reservations (expires_at) WHERE expires_at IS NOT NULL;
  `,
  // Versions of a key form a chain (each row points to the one before, \`prev\`, stored ahead of the
  // value so a walk never reads it), with an anchor every 64th version for reads of old ones, in
  // place of the (space, key, version) index: that index took a random page on every write, the
  // anchors one in 64.
  `
  ALTER TABLE doc_versions RENAME TO doc_versions_indexed;
  CREATE TABLE doc_versions (
    id INTEGER PRIMARY KEY, space TEXT NOT NULL, key TEXT NOT NULL, version INTEGER NOT NULL, prev INTEGER,
    hash TEXT NOT NULL, content_type TEXT NOT NULL, updated_at TEXT NOT NULL, value BLOB NOT NULL
  );
  INSERT INTO doc_versions (id, space, key, version, prev, hash, content_type, updated_at, value)
    SELECT id, space, key, version, LAG(id) OVER (PARTITION BY space, key ORDER BY version), hash, content_type, updated_at, value
    FROM doc_versions_indexed WHERE (space, key) IN (SELECT space, key FROM doc_current);
  DROP TABLE doc_versions_indexed;
  CREATE TABLE doc_anchors (
    space TEXT NOT NULL, key TEXT NOT NULL, version INTEGER NOT NULL, version_id INTEGER NOT NULL,
    PRIMARY KEY (space, key, version)
  ) WITHOUT ROWID;
  INSERT INTO doc_anchors (space, key, version, version_id) SELECT space, key, version, id FROM doc_versions WHERE version % 64 = 0;
  `,
  // No index on events.created_at: event times rise with ids (store/sqlite/events.ts stamps them so),
  // and a time filter becomes an id range found by binary search on the rowid. The index's pages
  // were in every unit's savepoint and every COMMIT.
  // Events stamped before, by a clock that stepped back, take the newest earlier time, as new ones
  // would. PostgreSQL keeps its index: replicas stamp events by their own clocks.
  `
  DROP INDEX events_created;
  UPDATE events SET created_at = risen.time
    FROM (SELECT id, MAX(created_at) OVER (ORDER BY id) AS time FROM events) AS risen
    WHERE risen.id = events.id AND risen.time > events.created_at;
  `,
  // The inbox (messages addressed by agent name; a receipt per named recipient, and per name
  // that was shown or acked a broadcast; word search over subject and body), what each hook
  // session has shown, hook sessions, task hand-off (a task's files and notes), and the
  // reservation index: each reservation's literal leading path segments, so a check reads only
  // the reservations that could overlap (rows written before the index have prefix '', which
  // every check reads).
  `
  CREATE TABLE messages (
    id INTEGER PRIMARY KEY AUTOINCREMENT, from_name TEXT NOT NULL, from_instance_id TEXT,
    recipients TEXT NOT NULL, broadcast INTEGER NOT NULL, subject TEXT NOT NULL, body TEXT NOT NULL,
    thread TEXT NOT NULL, reply_to INTEGER, importance TEXT NOT NULL, ack_required INTEGER NOT NULL,
    ack_within_ms INTEGER, created_at TEXT NOT NULL
  );
  CREATE INDEX messages_thread ON messages (thread, id);
  CREATE INDEX messages_from ON messages (from_name, id);
  CREATE INDEX messages_broadcast ON messages (id) WHERE broadcast = 1;
  CREATE TABLE message_receipts (
    name TEXT NOT NULL, message_id INTEGER NOT NULL, delivered_at TEXT, acked_at TEXT, due_at TEXT,
    PRIMARY KEY (name, message_id)
  ) WITHOUT ROWID;
  CREATE INDEX message_receipts_message ON message_receipts (message_id, name);
  CREATE INDEX message_receipts_due ON message_receipts (due_at) WHERE due_at IS NOT NULL;
  CREATE VIRTUAL TABLE messages_fts USING fts5(subject, body, content = 'messages', content_rowid = 'id', tokenize = 'unicode61');
  CREATE TRIGGER messages_fts_insert AFTER INSERT ON messages BEGIN
    INSERT INTO messages_fts (rowid, subject, body) VALUES (new.id, new.subject, new.body);
  END;
  CREATE TABLE hook_sessions (
    session_id TEXT PRIMARY KEY, agent TEXT NOT NULL, instance_id TEXT NOT NULL, name TEXT NOT NULL,
    token TEXT NOT NULL, root TEXT NOT NULL, project TEXT NOT NULL, started_at TEXT NOT NULL, ended_at TEXT
  ) WITHOUT ROWID;
  CREATE INDEX hook_sessions_instance ON hook_sessions (instance_id);
  CREATE TABLE session_shown (
    session_id TEXT NOT NULL, message_id INTEGER NOT NULL, PRIMARY KEY (session_id, message_id)
  ) WITHOUT ROWID;
  ALTER TABLE tasks ADD COLUMN project TEXT;
  ALTER TABLE tasks ADD COLUMN paths TEXT;
  ALTER TABLE tasks ADD COLUMN reservation_id TEXT;
  CREATE TABLE task_notes (
    id INTEGER PRIMARY KEY AUTOINCREMENT, task_id INTEGER NOT NULL, at TEXT NOT NULL, by_name TEXT NOT NULL,
    attempt INTEGER NOT NULL, text TEXT NOT NULL
  );
  CREATE INDEX task_notes_task ON task_notes (task_id, id);
  CREATE TABLE reservation_paths (
    project TEXT NOT NULL, prefix TEXT NOT NULL, reservation_id TEXT NOT NULL,
    PRIMARY KEY (project, prefix, reservation_id)
  ) WITHOUT ROWID;
  CREATE INDEX reservation_paths_reservation ON reservation_paths (reservation_id);
  INSERT INTO reservation_paths (project, prefix, reservation_id) SELECT project, '', id FROM reservations;
  `,
  // Tokens with roles (agent, viewer), kept as their SHA-256; a name is unique among the
  // tokens not revoked. An instance remembers the agent token that registered it (NULL: the
  // admin token, or registered before tokens existed).
  `
  CREATE TABLE tokens (
    id TEXT PRIMARY KEY, name TEXT NOT NULL, role TEXT NOT NULL, hash TEXT NOT NULL UNIQUE,
    created_at TEXT NOT NULL, expires_at TEXT, last_used_at TEXT, revoked_at TEXT
  );
  CREATE UNIQUE INDEX tokens_name ON tokens (name) WHERE revoked_at IS NULL;
  ALTER TABLE instances ADD COLUMN token_id TEXT;
  `,
  // The webhook delivery queue (jobs/webhooks.ts): one row per event and webhook, kept after
  // delivery for the list and redelivery; the payload is the event as sent (events are pruned).
  // webhook_cursor is the last event turned into deliveries: a new leader catches up from it.
  `
  CREATE TABLE webhook_deliveries (
    id INTEGER PRIMARY KEY AUTOINCREMENT, webhook_id TEXT NOT NULL, event_id INTEGER NOT NULL,
    topic TEXT NOT NULL, payload TEXT NOT NULL, uuid TEXT NOT NULL, test INTEGER NOT NULL DEFAULT 0,
    state TEXT NOT NULL, attempts INTEGER NOT NULL DEFAULT 0, created_at TEXT NOT NULL,
    next_attempt_at TEXT, last_attempt_at TEXT, last_status INTEGER, last_error TEXT NOT NULL DEFAULT '',
    last_duration_ms INTEGER
  );
  CREATE UNIQUE INDEX webhook_deliveries_event ON webhook_deliveries (webhook_id, event_id) WHERE test = 0;
  CREATE INDEX webhook_deliveries_webhook ON webhook_deliveries (webhook_id, id);
  CREATE INDEX webhook_deliveries_due ON webhook_deliveries (next_attempt_at) WHERE state = 'pending';
  CREATE TABLE webhook_cursor (id INTEGER PRIMARY KEY CHECK (id = 1), event_id INTEGER NOT NULL);
  INSERT INTO webhook_cursor (id, event_id) SELECT 1, COALESCE(MAX(id), 0) FROM events;
  `,
  // A claim reads the distinct `requires` sets of a queue's ready tasks, then only the tasks of
  // the sets its claimer meets, in claim order (services/queue.ts): tasks it cannot take are
  // never walked.
  `
  CREATE INDEX tasks_claim_requires ON tasks (queue, status, requires, priority DESC, id);
  `,
  // No index on audit.timestamp, as on events.created_at: entry times rise with ids (store/audit.ts
  // stamps them so), and a time window is an id range (store/rising.ts). The index's page was in
  // every audited write's COMMIT. Entries stamped before, by a clock that stepped back, take the
  // newest earlier time, as new ones would. PostgreSQL keeps its index.
  `
  DROP INDEX audit_timestamp;
  UPDATE audit SET timestamp = risen.time
    FROM (SELECT id, MAX(timestamp) OVER (ORDER BY id) AS time FROM audit) AS risen
    WHERE risen.id = audit.id AND risen.time > audit.timestamp;
  `,
  // The claim index holds ready tasks only (a claim reads nothing else through it): a claim,
  // an ack or a failure moves a task out of it, not within it, and done tasks leave no
  // entries to step over.
  `
  DROP INDEX tasks_claim_requires;
  CREATE INDEX tasks_claim_requires ON tasks (queue, requires, priority DESC, id) WHERE status = 'ready';
  `,
  // A hook session that ended by /clear or resume keeps its instance until held_until, for the
  // next SessionStart of the same agent and root to take over (services/hooks/session.ts).
  `
  ALTER TABLE hook_sessions ADD COLUMN held_until TEXT;
  CREATE INDEX hook_sessions_held ON hook_sessions (held_until) WHERE held_until IS NOT NULL;
  `,
  // Project settings (store/projects.ts): case-insensitive path matching per project. The
  // reservation index's prefixes are now folded (lib/path-prefix.ts: ASCII lower case, cut
  // before a segment with any other character); rows keyed the old way are read as before
  // the index, under '' (every check reads them), until their reservations end.
  `
  CREATE TABLE project_settings (
    project TEXT PRIMARY KEY, case_insensitive INTEGER NOT NULL DEFAULT 0, updated_at TEXT NOT NULL
  );
  DELETE FROM reservation_paths;
  INSERT INTO reservation_paths (project, prefix, reservation_id) SELECT project, '', id FROM reservations;
  `,
  // Approvals (oversight.md): agents' permission requests and "needs input" notices, and the
  // rules that decide requests before a person is asked. Lists read newest first, by status
  // or agent name; a session's next hook event finds its pending "needs input" notice.
  `
  CREATE TABLE approvals (
    id TEXT PRIMARY KEY, kind TEXT NOT NULL, agent TEXT NOT NULL, name TEXT NOT NULL, instance_id TEXT NOT NULL,
    session_id TEXT NOT NULL, project TEXT NOT NULL, tool TEXT NOT NULL, input TEXT NOT NULL, input_truncated INTEGER NOT NULL DEFAULT 0,
    summary TEXT NOT NULL, status TEXT NOT NULL, rule_id TEXT, decided_by TEXT, message TEXT,
    created_at TEXT NOT NULL, decided_at TEXT, expires_at TEXT
  );
  CREATE INDEX approvals_created ON approvals (created_at, id);
  CREATE INDEX approvals_status ON approvals (status, created_at, id);
  CREATE INDEX approvals_name ON approvals (name, created_at, id);
  CREATE INDEX approvals_session_pending ON approvals (session_id) WHERE status = 'pending';
  CREATE TABLE approval_rules (
    id TEXT PRIMARY KEY, tool TEXT NOT NULL, match TEXT NOT NULL, agents TEXT NOT NULL, decision TEXT NOT NULL,
    message TEXT, created_at TEXT NOT NULL
  );
  `,
  // Agent telemetry and budgets (oversight.md): a usage record names the task its instance
  // had claimed, and one received over OTLP carries a key so a resent batch records it once.
  // A budget keeps what was spent in its current window, added to as usage is recorded, so a
  // hook decision reads a few budget rows and never sums usage.
  `
  ALTER TABLE llm_usage ADD COLUMN task_id INTEGER;
  ALTER TABLE llm_usage ADD COLUMN otlp_key TEXT;
  ALTER TABLE llm_usage ADD COLUMN unpriced INTEGER NOT NULL DEFAULT 0;
  CREATE UNIQUE INDEX llm_usage_otlp_key ON llm_usage (otlp_key) WHERE otlp_key IS NOT NULL;
  CREATE TABLE budgets (
    name TEXT PRIMARY KEY, scope TEXT NOT NULL, target TEXT NOT NULL, limit_usd REAL NOT NULL,
    time_window TEXT NOT NULL, action TEXT NOT NULL, created_at TEXT NOT NULL, updated_at TEXT NOT NULL,
    window_start TEXT NOT NULL, spent_usd REAL NOT NULL DEFAULT 0,
    warned_window TEXT, exceeded_window TEXT
  ) WITHOUT ROWID;
  CREATE TABLE budget_shown (
    session_id TEXT NOT NULL, budget TEXT NOT NULL, window_start TEXT NOT NULL,
    PRIMARY KEY (session_id, budget, window_start)
  ) WITHOUT ROWID;
  `,
  // Instances by name: a briefing names the agents an agent corresponds with, and a
  // registration under an agent token finds its earlier instances, without reading the fleet.
  `
  CREATE INDEX instances_name ON instances (name);
  `,
  // The words of messages indexed in batches (store/messages.ts indexWords), not by a trigger in
  // each send's unit: FTS5 writes its index at every COMMIT that added words. The index holds
  // every message through messages_fts_through's id; the trigger had indexed every one so far.
  `
  DROP TRIGGER messages_fts_insert;
  CREATE TABLE messages_fts_through (id INTEGER NOT NULL);
  INSERT INTO messages_fts_through SELECT COALESCE(MAX(id), 0) FROM messages;
  `,
]

export const SCHEMA_VERSION = MIGRATIONS.length

export function openDatabase(dataDir: string, file = 'muster.db'): Database {
  mkdirSync(dataDir, { recursive: true })
  const db = new Database(join(dataDir, file), { create: true, strict: true })
  configure(db)
  migrate(db)
  return db
}

export function configure(db: Database): void {
  db.exec('PRAGMA journal_mode = WAL')
  db.exec('PRAGMA synchronous = NORMAL')
  db.exec('PRAGMA busy_timeout = 5000')
  db.exec('PRAGMA foreign_keys = ON')
  // A bigger page cache and fewer, larger checkpoints: cheaper writes.
  db.exec('PRAGMA cache_size = -65536')
  // The checkpointer worker backfills (and syncs the WAL) every 25 ms while writes come in and
  // starts the WAL over once it reaches 50,000 pages, holding writes back for that one checkpoint rather than
  // freezing the event loop (store/sqlite/checkpointer.ts). This connection's own checkpoint, inline in a
  // COMMIT with two fsyncs (a stall of the event loop), is only the fallback should the worker fail:
  // at 200,000 pages (a WAL of ~800 MB). Durability is the same: the worker's interval, not
  // this threshold, bounds what an OS crash could lose.
  db.exec('PRAGMA wal_autocheckpoint = 200000')
  // Each unit's savepoint keeps the pages it changes in a sub-journal, by default a temp
  // file (a dozen writes per unit): in memory, a state PUT is much cheaper. The
  // sub-journal only serves ROLLBACK TO inside a live transaction; crash recovery is
  // the WAL's, so durability is unchanged.
  db.exec('PRAGMA temp_store = MEMORY')
}

export function migrate(db: Database): void {
  const current = (db.query('PRAGMA user_version').get() as { user_version: number }).user_version
  if (current > SCHEMA_VERSION) {
    throw new Error(`database schema version ${current} is newer than this build supports (${SCHEMA_VERSION})`)
  }
  for (let v = current; v < SCHEMA_VERSION; v++) {
    db.transaction(() => {
      db.exec(MIGRATIONS[v])
      db.exec(`PRAGMA user_version = ${v + 1}`)
    })()
  }
}

/** Opens a second connection for reads: in WAL mode it only ever sees committed transactions. */
export function openReader(dataDir: string, file = 'muster.db'): Database {
  const db = new Database(join(dataDir, file), { readonly: true, strict: true })
  db.exec('PRAGMA busy_timeout = 5000')
  db.exec('PRAGMA cache_size = -65536')
  return db
}

/**
 * Group commit: units of work that arrive in the same event-loop turn share one
 * transaction. Each unit runs as a savepoint, so one failing unit rolls back alone
 * (with every row it wrote: its events and audit entry included); its promise
 * resolves only after the COMMIT, so nothing is acknowledged before it is durable,
 * and its after-commit hooks (event fan-out, cache updates) run only then. Units
 * run one at a time: an asynchronous unit holds the others back until it settles,
 * so no other unit's writes can land inside its savepoint.
 *
 * The SQL runs on the event loop's thread, though it is a large part of a state PUT's CPU:
 * a writer thread with its own connection was tried and lost, its cloning and message
 * round trips costing more than it moved off this thread, on two cores shared with clients.
 */
export class GroupCommit {
  private open = false
  /** An asynchronous unit is running: later units wait in `queue`. */
  private busy = false
  /** Paused for a restore: units wait in `queue` until resume(). */
  private held = false
  private running: Promise<void> | null = null
  private queue: (() => void)[] = []
  private waiters: { resolve: () => void; reject: (err: unknown) => void }[] = []
  private hooks: (() => void)[] = []
  private commitWanted = false

  private sql!: Record<'begin' | 'savepoint' | 'release' | 'rollbackTo' | 'commit' | 'rollback', { run(): unknown }>

  constructor(private db: Database) {
    this.prepare()
  }

  /** The transaction statements, prepared once per connection (parsing them per unit was measurable). */
  private prepare(): void {
    const q = (sql: string) => this.db.prepare(sql)
    this.sql = {
      begin: q('BEGIN IMMEDIATE'),
      savepoint: q('SAVEPOINT unit'),
      release: q('RELEASE unit'),
      rollbackTo: q('ROLLBACK TO unit'),
      commit: q('COMMIT'),
      rollback: q('ROLLBACK'),
    }
  }

  run<T>(fn: (unit: UnitHooks) => T | Promise<T>): Promise<T> {
    if (this.busy || this.held) return new Promise<T>((resolve, reject) => this.queue.push(() => void this.run(fn).then(resolve, reject)))
    if (!this.open) {
      this.sql.begin.run()
      this.open = true
      // At the end of this event-loop turn: every unit that came in with this turn's
      // I/O shares the COMMIT. A 1 ms timer batched no better under load (same CPU
      // per write) and made each write, and each event's fan-out, wait for it.
      setImmediate(() => this.commit())
    }
    const hooks: (() => void)[] = []
    const unit: UnitHooks = { afterCommit: (hook) => void hooks.push(hook) }
    this.sql.savepoint.run()
    let out: T | Promise<T>
    try {
      out = fn(unit)
    } catch (err) {
      this.rollbackUnit()
      return Promise.reject(err)
    }
    if (!(out instanceof Promise)) return this.settled(out, hooks)
    this.busy = true
    // The unit is done when `fn` settles (released or rolled back); its promise resolves later, at COMMIT.
    let committed!: Promise<T>
    this.running = out.then(
      (result) => void (committed = this.settled(result, hooks)),
      (err) => {
        this.rollbackUnit()
        committed = Promise.reject(err)
      },
    ).finally(() => this.unbusy())
    return this.running.then(() => committed)
  }

  /** Commits the open batch now (shutdown, or before work that cannot run inside a transaction). */
  commitNow(): void {
    if (this.open) this.commit()
  }

  /**
   * Lets a running unit finish, commits, and holds every later unit back until
   * resume(): the connection is then idle and may be closed or swapped (restore).
   */
  async pause(): Promise<void> {
    this.held = true
    while (this.running) await this.running
    this.commit()
  }

  /** Runs the held-back units on `db` (the same connection, or the one that replaced it). */
  resume(db: Database): void {
    if (db !== this.db) (this.db = db), this.prepare()
    this.held = false
    this.next()
  }

  private unbusy(): void {
    this.running = null
    this.busy = false
    this.next()
  }

  private settled<T>(result: T, hooks: (() => void)[]): Promise<T> {
    this.sql.release.run()
    this.hooks.push(...hooks)
    return new Promise<T>((resolve, reject) => this.waiters.push({ resolve: () => resolve(result), reject }))
  }

  private rollbackUnit(): void {
    this.sql.rollbackTo.run()
    this.sql.release.run()
  }

  private next(): void {
    while (!this.busy && !this.held && this.queue.length) this.queue.shift()!()
    if (!this.busy && this.commitWanted) this.commit()
  }

  private commit(): void {
    if (!this.open) return
    if (this.busy) return void (this.commitWanted = true)
    this.commitWanted = false
    const waiters = this.waiters
    const hooks = this.hooks
    this.waiters = []
    this.hooks = []
    this.open = false
    try {
      this.sql.commit.run()
    } catch (err) {
      log.error({ err }, 'group commit failed, batch rolled back')
      try {
        this.sql.rollback.run()
      } catch {}
      for (const w of waiters) w.reject(err)
      return
    }
    if (waiters.length) writeBatchSize.observe(waiters.length)
    for (const hook of hooks) {
      try {
        hook()
      } catch (err) {
        log.error({ err }, 'after-commit hook failed')
      }
    }
    for (const w of waiters) w.resolve()
  }
}

// The inbox: messages addressed by agent name (or "*" for every agent), and a receipt
// per (name, message) saying when that name was first shown it and when it acked it.
// Named recipients get their receipt row at send; a broadcast gets one per name the
// first time that name is shown or acks it. Reads go through the indexes: a name's
// receipts by (name, message_id), broadcasts by messages_broadcast, due acks by due_at.
import { nowIso } from '../lib/time'
import { Lru } from '../lib/lru'
import type { ShownThrough } from './shown-through'
import { int, intOrNull, send, stmt, type Dialect, type Runner, type UnitHooks } from './runner'

export type Importance = 'low' | 'normal' | 'high' | 'urgent'

export interface Message {
  id: number
  from: string
  from_instance_id: string | null
  to: string[]
  subject: string
  body: string
  thread: string
  reply_to: number | null
  importance: Importance
  ack_required: boolean
  ack_within_ms: number | null
  created_at: string
}

/** A message as one name's inbox shows it: with that name's receipt. */
export interface InboxMessage extends Message {
  delivered_at: string | null
  acked_at: string | null
}

export interface Receipt {
  to: string
  delivered_at: string | null
  acked_at: string | null
}

export interface NewMessage {
  from: string
  from_instance_id: string | null
  /** Distinct names, or ["*"]. */
  to: string[]
  subject: string
  body: string
  /** Null: the new message's id. */
  thread: string | null
  reply_to: number | null
  importance: Importance
  ack_required: boolean
  ack_within_ms: number | null
  created_at: string
}

export interface InboxQuery {
  after: number
  limit: number
  unacked: boolean
}

export interface MessageFilter {
  /** Words that must all appear (whole words, any case) in subject and body together. */
  words?: string[]
  from?: string
  /** A name: messages naming it; "*": broadcasts. */
  to?: string
  thread?: string
  limit: number
}

/** A recipient whose ack came due unanswered. */
export interface Overdue {
  id: number
  to: string
  from: string
}

/** Who a committed write changed the inbox answers of: these names, or every name ("*"). */
export type Touched = readonly string[] | '*'

export interface MessagesStore {
  /**
   * Messages for `name` (named, or broadcast by someone else) with id > after, oldest first.
   * Where this process is the only writer, a repeated page is the same (frozen) array until
   * a write touching the name commits; callers must not change it.
   */
  inbox(name: string, q: InboxQuery): Promise<readonly InboxMessage[]>
  get(id: number): Promise<Message | null>
  /** As the writes' `unshown`, on committed data: whether a hook event has anything to show at all. */
  unshown(name: string, sessionId: string, limit: number): Promise<InboxMessage[]>
  /** Every receipt row of a message, by name. */
  receipts(id: number): Promise<Receipt[]>
  /** A thread's messages, oldest first. */
  thread(thread: string): Promise<Message[]>
  /** Newest first. */
  list(filter: MessageFilter): Promise<Message[]>
  /** The earliest ack deadline still open, or null. */
  nextDue(): Promise<string | null>
  /** Drops the kept inbox pages of the names a committed write touched (the writes call it after COMMIT). */
  changed(touched: Touched): void
  /**
   * Whether a search must bring the word index up to date first (indexWords): messages may have
   * been written since it last was. Always false where each row carries its own (PostgreSQL).
   */
  wordsBehind(): boolean
  /** A committed unit wrote a message (`indexed` false), or brought the word index up to date (true): the writes call it after COMMIT. */
  wordsWritten(indexed: boolean): void
}

/**
 * SQLite's word index (FTS5, store/sqlite/db.ts) takes the messages in batches: FTS5 writes
 * its index at every COMMIT that added words, which cost a send more than the message's own
 * rows. What it holds runs through messages_fts_through's id.
 */
const INDEX_WORDS = stmt('INSERT INTO messages_fts (rowid, subject, body) SELECT id, subject, body FROM messages WHERE id > (SELECT id FROM messages_fts_through) ORDER BY id')
const INDEXED_THROUGH = stmt('UPDATE messages_fts_through SET id = (SELECT COALESCE(MAX(id), 0) FROM messages)')

export interface MessagesWrites {
  insert(m: NewMessage): Promise<Message>
  get(id: number): Promise<Message | null>
  /** Sets delivered_at (once) for `name` on each of `ids` it may see; a broadcast gets its receipt row. */
  markDelivered(name: string, ids: number[], at: string): Promise<void>
  /** The same for many names at once, in one statement: each `names[i]` was shown message `ids[i]` at `at`. */
  markDeliveredMany(names: string[], ids: number[], at: string): Promise<void>
  /** Acks `message` for `name` (once; delivered too when it was not): the acked_at it has, and whether this call set it. */
  ack(name: string, message: Message, at: string): Promise<{ acked_at: string; first: boolean }>
  /** For the hooks: messages for `name` that it has not acked and session `sessionId` has not shown, oldest first. */
  unshown(name: string, sessionId: string, limit: number): Promise<InboxMessage[]>
  /** For the hooks: `ids` count as shown in the session, and as delivered to `name`. */
  markShown(name: string, sessionId: string, ids: number[]): Promise<void>
  /** Receipts whose ack deadline is at or before `now`: their due_at is cleared, so each is raised once. */
  raiseDue(now: string): Promise<Overdue[]>
  /** Adds the messages written since the word index was last brought up to date to it (Dialect.wordsIndexedLater; else nothing to do). */
  indexWords(): Promise<void>
}

type Row = {
  id: number | string
  from_name: string
  from_instance_id: string | null
  recipients: string
  subject: string
  body: string
  thread: string
  reply_to: number | string | null
  importance: Importance
  ack_required: number | string
  ack_within_ms: number | string | null
  created_at: string
}
type InboxRow = Row & { delivered_at: string | null; acked_at: string | null }

const COLUMNS =
  'm.id AS id, m.from_name, m.from_instance_id, m.recipients, m.subject, m.body, m.thread, m.reply_to, m.importance, m.ack_required, m.ack_within_ms, m.created_at'

const toMessage = (r: Row): Message => ({
  id: int(r.id),
  from: r.from_name,
  from_instance_id: r.from_instance_id,
  to: JSON.parse(r.recipients),
  subject: r.subject,
  body: r.body,
  thread: r.thread,
  reply_to: intOrNull(r.reply_to),
  importance: r.importance,
  ack_required: int(r.ack_required) === 1,
  ack_within_ms: intOrNull(r.ack_within_ms),
  created_at: r.created_at,
})
const maybe = (r: Row | null) => (r ? toMessage(r) : null)
const toInbox = (r: InboxRow): InboxMessage => ({ ...toMessage(r), delivered_at: r.delivered_at ?? null, acked_at: r.acked_at ?? null })

/**
 * A name's messages: its named receipts (primary key order) and the broadcasts of
 * others (partial index), each side limited before they are merged, so a page reads
 * about `limit` rows of each whatever is stored. Broadcast receipts are left out of
 * the named side: the broadcast side shows them, looking each one up by primary key.
 * The named side says `after` twice: SQLite ranges its primary key on the plain
 * comparison, and the row comparison keeps PostgreSQL's generic plans on the primary key
 * too (without it they may range over message_receipts_message and filter by name).
 */
function inboxQuery(named: string, wide: string) {
  const text = `SELECT * FROM (SELECT ${COLUMNS}, r.delivered_at, r.acked_at FROM message_receipts r JOIN messages m ON m.id = r.message_id
      WHERE r.name = :name AND r.message_id > :after AND (r.name, r.message_id) > (:name, :after) AND m.broadcast = 0 ${named} ORDER BY r.message_id LIMIT :limit) AS named
    UNION ALL
    SELECT * FROM (SELECT ${COLUMNS}, ${receipt('delivered_at')} AS delivered_at, ${receipt('acked_at')} AS acked_at FROM messages m
      WHERE m.broadcast = 1 AND m.id > :after AND m.from_name <> :name ${wide} ORDER BY m.id LIMIT :limit) AS wide
    ORDER BY id LIMIT :limit`
  const keys: (keyof InboxArgs)[] = []
  const s = stmt<InboxRow>(text.replace(/:(name|after|limit|session)\b/g, (_, key) => (keys.push(key), '?')))
  return { s, args: (a: InboxArgs) => keys.map((k) => a[k] ?? null) }
}
type InboxArgs = { name: string; after: number; limit: number; session?: string }
/**
 * The name's receipt column of broadcast `m`: a scalar subquery, looked up by primary key
 * per row (as NOT EXISTS, PostgreSQL would turn it into an anti-join over all the name's receipts).
 */
const receipt = (column: string) => `(SELECT x.${column} FROM message_receipts x WHERE x.name = :name AND x.message_id = m.id)`
const WIDE_NOT_ACKED = `AND ${receipt('acked_at')} IS NULL`
const NOT_SHOWN = 'AND NOT EXISTS (SELECT 1 FROM session_shown s WHERE s.session_id = :session AND s.message_id = m.id)'
const INBOX = inboxQuery('', '')
const INBOX_UNACKED = inboxQuery('AND r.acked_at IS NULL', WIDE_NOT_ACKED)
const UNSHOWN = inboxQuery(`AND r.acked_at IS NULL ${NOT_SHOWN}`, `${WIDE_NOT_ACKED} ${NOT_SHOWN}`)
/** The inbox reads, for the test of their PostgreSQL plans. */
export const INBOX_READS = { INBOX, UNSHOWN }

const ONE = stmt<Row>(`SELECT ${COLUMNS} FROM messages m WHERE m.id = ?`)
const THREAD = stmt<Row>(`SELECT ${COLUMNS} FROM messages m WHERE m.thread = ? ORDER BY m.id`)
const RECEIPTS = stmt<Receipt>('SELECT name AS "to", delivered_at, acked_at FROM message_receipts WHERE message_id = ? ORDER BY name')
const NEXT_DUE = stmt<{ at: string | null }>('SELECT MIN(due_at) AS at FROM message_receipts WHERE due_at IS NOT NULL')
const INSERT = stmt<{ id: number | string }>(
  `INSERT INTO messages (from_name, from_instance_id, recipients, broadcast, subject, body, thread, reply_to, importance, ack_required,
   ack_within_ms, created_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?) RETURNING id`,
)
const SET_THREAD = stmt('UPDATE messages SET thread = ? WHERE id = ?')
const ACK_WIDE = stmt('INSERT INTO message_receipts (name, message_id, delivered_at, acked_at) VALUES (?, ?, ?, ?) ON CONFLICT DO NOTHING')
const ACK = stmt(
  `UPDATE message_receipts SET acked_at = ?, delivered_at = COALESCE(delivered_at, ?), due_at = NULL
   WHERE name = ? AND message_id = ? AND acked_at IS NULL`,
)
const ACKED_AT = stmt<{ acked_at: string | null }>('SELECT acked_at FROM message_receipts WHERE name = ? AND message_id = ?')
const DUE = stmt<{ name: string; message_id: number | string; from_name: string }>(
  `SELECT r.name, r.message_id, m.from_name FROM message_receipts r JOIN messages m ON m.id = r.message_id
   WHERE r.due_at IS NOT NULL AND r.due_at <= ? ORDER BY r.due_at, r.message_id, r.name`,
)
const CLEAR_DUE = stmt('UPDATE message_receipts SET due_at = NULL WHERE due_at IS NOT NULL AND due_at <= ?')

/**
 * `reads`: the reads' MessagesStore, told after the COMMIT of each unit that touched an inbox
 * (changed) or the word index (wordsWritten).
 * `shownThrough`: where this process is the only writer, what each hook session was shown (store/shown-through.ts).
 */
export function messagesWrites(
  w: Runner,
  d: Dialect,
  unit: UnitHooks,
  reads: Pick<MessagesStore, 'changed' | 'wordsWritten'>,
  shownThrough: ShownThrough | null = null,
): MessagesWrites {
  const ids = `(SELECT CAST(x.value AS BIGINT) FROM ${d.elements('?')})`
  const receipts = stmt(
    `INSERT INTO message_receipts (name, message_id, due_at) SELECT x.value, CAST(? AS BIGINT), CAST(? AS TEXT) FROM ${d.elements('?')} WHERE true`,
  )
  const wideReceipts = stmt(
    `INSERT INTO message_receipts (name, message_id, delivered_at) SELECT CAST(? AS TEXT), m.id, CAST(? AS TEXT) FROM messages m
     WHERE m.broadcast = 1 AND m.id IN ${ids} ON CONFLICT DO NOTHING`,
  )
  const delivered = stmt(`UPDATE message_receipts SET delivered_at = ? WHERE name = ? AND delivered_at IS NULL AND message_id IN ${ids}`)
  const shown = stmt(
    `INSERT INTO session_shown (session_id, message_id) SELECT CAST(? AS TEXT), CAST(x.value AS BIGINT) FROM ${d.elements('?')} WHERE true
     ON CONFLICT DO NOTHING`,
  )
  // Pairs by array position; a broadcast gets its receipt row, a named message only where its row exists (it is addressed).
  const deliveredMany = stmt(
    `INSERT INTO message_receipts (name, message_id, delivered_at)
     SELECT p.name, m.id, CAST(? AS TEXT) FROM (SELECT x.value AS name, x.key AS k FROM ${d.elements('?')}) AS p
     JOIN messages m ON m.id = (SELECT CAST(x.value AS BIGINT) FROM ${d.elements('?')} WHERE x.key = p.k)
     WHERE m.broadcast = 1 OR EXISTS (SELECT 1 FROM message_receipts r WHERE r.name = p.name AND r.message_id = m.id)
     ON CONFLICT (name, message_id) DO UPDATE SET delivered_at = excluded.delivered_at WHERE message_receipts.delivered_at IS NULL`,
  )
  const touched = (t: Touched) => unit.afterCommit(() => reads.changed(t))
  // The last unshown read (units run one at a time), which markShown's ids were picked from.
  let lastRead: { name: string; session: string; ids: number[] } | null = null
  const markDelivered = async (name: string, list: number[], at: string) => {
    if (!list.length) return
    const json = JSON.stringify(list)
    await w.run(wideReceipts, name, at, json)
    await w.run(delivered, at, name, json)
    touched([name])
  }
  return {
    async insert(m) {
      const broadcast = m.to.length === 1 && m.to[0] === '*'
      const row = await w.get(
        INSERT, m.from, m.from_instance_id, JSON.stringify(m.to), broadcast ? 1 : 0, m.subject, m.body, m.thread ?? '', m.reply_to,
        m.importance, m.ack_required ? 1 : 0, m.ack_within_ms, m.created_at,
      )
      const id = int(row!.id)
      const thread = m.thread ?? String(id)
      // Sent without waiting (PostgreSQL: no round trip under the write lock for either).
      if (m.thread === null) await send(w, SET_THREAD, thread, id)
      if (!broadcast) {
        const due = m.ack_within_ms === null ? null : new Date(Date.parse(m.created_at) + m.ack_within_ms).toISOString()
        await send(w, receipts, id, due, JSON.stringify(m.to))
      }
      touched(broadcast ? '*' : m.to)
      if (d.wordsIndexedLater) unit.afterCommit(() => reads.wordsWritten(false))
      const { from, from_instance_id, to, subject, body, reply_to, importance, ack_required, ack_within_ms, created_at } = m
      return { id, from, from_instance_id, to, subject, body, thread, reply_to, importance, ack_required, ack_within_ms, created_at }
    },
    get: async (id) => maybe(await w.get(ONE, id)),
    markDelivered,
    async markDeliveredMany(names, list, at) {
      if (!names.length) return
      await w.run(deliveredMany, at, JSON.stringify(names), JSON.stringify(list))
      touched([...new Set(names)])
    },
    async ack(name, message, at) {
      let changed = 0
      if (message.to[0] === '*') changed += await w.run(ACK_WIDE, name, message.id, at, at)
      changed += await w.run(ACK, at, at, name, message.id)
      const row = await w.get(ACKED_AT, name, message.id)
      if (!row?.acked_at) throw new Error(`no receipt of message ${message.id} for ${name}`)
      if (changed > 0) touched([name])
      return { acked_at: row.acked_at, first: changed > 0 }
    },
    async unshown(name, session, limit) {
      const list = (await w.all(UNSHOWN.s, ...UNSHOWN.args({ name, after: shownThrough?.get(name, session) ?? 0, limit, session }))).map(toInbox)
      lastRead = { name, session, ids: list.map((m) => m.id) }
      return list
    },
    async markShown(name, sessionId, list) {
      if (!list.length) return
      await w.run(shown, sessionId, JSON.stringify(list))
      await markDelivered(name, list, nowIso())
      const read = lastRead
      if (shownThrough && read?.name === name && read.session === sessionId) unit.afterCommit(() => shownThrough.note(name, sessionId, read.ids, list))
    },
    async raiseDue(now) {
      const rows = await w.all(DUE, now)
      if (rows.length) await w.run(CLEAR_DUE, now)
      return rows.map((r) => ({ id: int(r.message_id), to: r.name, from: r.from_name }))
    },
    async indexWords() {
      if (!d.wordsIndexedLater) return
      await w.run(INDEX_WORDS)
      await w.run(INDEXED_THROUGH)
      unit.afterCommit(() => reads.wordsWritten(true))
    },
  }
}

/** Bytes of inbox pages kept in all (bodies up to 64 KiB, pages up to 1,000 messages). */
const KEPT_BYTES = 32 * 1024 * 1024
/** Pages kept per name (an agent polls at its cursor, pages through, or filters unacked); names with a page kept. */
const KEPT_PAGES = 4
const KEPT_NAMES = 10_000
/** Names whose sessions are known to have nothing to show, and their sessions kept each. */
const QUIET_NAMES = 50_000
const QUIET_SESSIONS = 4
const weigh = (page: readonly InboxMessage[]) => page.reduce((n, m) => n + m.body.length + m.subject.length + 300, 100)

/**
 * `keep`: this process is the database's only writer, so a name's inbox pages are kept
 * until a write touching the name commits (changed); on PostgreSQL other replicas write
 * too, and every read goes to the database.
 */
export function messagesStore(r: Runner, d: Dialect, keep = false, shownThrough: ShownThrough | null = null): MessagesStore {
  const query = async (name: string, { after, limit, unacked }: InboxQuery) => {
    const q = unacked ? INBOX_UNACKED : INBOX
    return Object.freeze((await r.all(q.s, ...q.args({ name, after, limit }))).map(toInbox))
  }
  // Pages by query and name; each name's keys, oldest first, to drop them when a write touches the name.
  const kept = new Lru<string, readonly InboxMessage[]>(KEPT_BYTES, weigh)
  const keysOf = new Map<string, string[]>()
  // Counts the commits that touched any inbox, so a read one of them overtook is answered but not kept.
  let writes = 0
  // Unknown at start (a crash may have come between a send and its batch): the first search or batch looks.
  let wordsBehind = d.wordsIndexedLater
  // The sessions of a name with no message left to show (a hook's usual answer): only a
  // write touching the name can give them one. Names oldest first, a few sessions each.
  const nothingUnshown = new Map<string, Set<string>>()
  const noteNothingUnshown = (name: string, session: string) => {
    let sessions = nothingUnshown.get(name)
    if (!sessions) {
      if (nothingUnshown.size >= QUIET_NAMES) nothingUnshown.delete(nothingUnshown.keys().next().value!)
      nothingUnshown.set(name, (sessions = new Set()))
    }
    if (sessions.size >= QUIET_SESSIONS) sessions.delete(sessions.values().next().value!)
    sessions.add(session)
  }
  const drop = (name: string) => {
    for (const key of keysOf.get(name) ?? []) kept.delete(key)
    keysOf.delete(name)
    nothingUnshown.delete(name)
  }
  return {
    async unshown(name, session, limit) {
      if (keep && nothingUnshown.get(name)?.has(session)) return []
      const seen = writes
      const after = shownThrough?.get(name, session) ?? 0
      const list = (await r.all(UNSHOWN.s, ...UNSHOWN.args({ name, after, limit, session }))).map(toInbox)
      if (keep && !list.length && seen === writes) noteNothingUnshown(name, session)
      return list
    },
    async inbox(name, q) {
      if (!keep) return query(name, q)
      const key = `${q.after}/${q.limit}/${q.unacked ? 1 : 0}/${name}`
      const hit = kept.get(key)
      if (hit) return hit
      const seen = writes
      const page = await query(name, q)
      if (seen !== writes) return page
      let keys = keysOf.get(name)
      if (!keys) {
        // The name kept longest goes first, not every name's pages at once: a fleet past KEPT_NAMES keeps most of its pages.
        if (keysOf.size >= KEPT_NAMES) drop(keysOf.keys().next().value!)
        keysOf.set(name, (keys = []))
      }
      if (keys.length >= KEPT_PAGES) kept.delete(keys.shift()!)
      keys.push(key)
      kept.set(key, page)
      return page
    },
    changed(touched) {
      if (!keep) return
      writes++
      if (touched === '*') (kept.clear(), keysOf.clear(), nothingUnshown.clear())
      else for (const name of touched) drop(name)
    },
    get: async (id) => maybe(await r.get(ONE, id)),
    receipts: (id) => r.all(RECEIPTS, id),
    thread: async (thread) => (await r.all(THREAD, thread)).map(toMessage),
    async list(f) {
      const where: string[] = []
      const args: (string | number)[] = []
      if (f.words?.length) where.push(d.matches('?')), args.push(d.words(f.words))
      if (f.from !== undefined) where.push('m.from_name = ?'), args.push(f.from)
      if (f.to === '*') where.push('m.broadcast = 1')
      else if (f.to !== undefined)
        where.push('m.broadcast = 0 AND m.id IN (SELECT message_id FROM message_receipts WHERE name = ?)'), args.push(f.to)
      if (f.thread !== undefined) where.push('m.thread = ?'), args.push(f.thread)
      const text = `SELECT ${COLUMNS} FROM messages m ${where.length ? `WHERE ${where.join(' AND ')}` : ''} ORDER BY m.id DESC LIMIT ?`
      return (await r.all(stmt<Row>(text), ...args, f.limit)).map(toMessage)
    },
    nextDue: async () => (await r.get(NEXT_DUE))?.at ?? null,
    // Where this process is not the only writer, another may have written a message: always look.
    wordsBehind: () => d.wordsIndexedLater && (wordsBehind || !keep),
    wordsWritten: (indexed) => void (wordsBehind = !indexed),
  }
}

// Versioned documents: the engine behind both the state store and the spec
// registry. A "space" separates them ('state', or 'spec:<project>'). Every write
// appends a row to doc_versions, pointing to the key's previous version (\`prev\`);
// doc_current points to the newest. Every ANCHOR_EVERY-th version is also in
// doc_anchors, so reading an old version walks at most that many rows back.
// Pruning deletes a key's oldest versions (and their anchors) from the bottom up, so what
// is kept is always one whole chain from the current version down; the oldest kept row's
// \`prev\` then points at a deleted row and every walk ends there, as at a NULL. That id is
// never handed out again: SQLite gives a new row the largest id + 1, and the row pointing at
// it has a larger id and lives until its key is deleted, chain and all.
import type { Database } from 'bun:sqlite'
import { notFound } from '../../lib/errors'
import { nowIso } from '../../lib/time'
import { Lru } from '../../lib/lru'
import type { UnitHooks } from '../runner'
import {
  ANCHOR_EVERY, checkCondition, floorOf, hasExcess, prunedVersion, sha256,
  type Doc, type DocMeta, type Docs, type HistoryItem, type PruneLimits, type PruneStep, type Retention, type WriteCondition,
} from '../versioned'

/**
 * Current documents kept in memory (most of --cache-size: lib/lru.ts cacheShares; least recently used dropped first), so
 * hot reads skip SQLite. This process is the database's only writer, and every
 * write goes through VersionedDocs, which updates the cache only after its COMMIT
 * (reads come from the read connection, which never sees an uncommitted write).
 * A cached null records that the key does not exist.
 */
const newCache = (bytes: number) => new Lru<string, Doc | null>(bytes, (doc) => (doc?.value.byteLength ?? 0) + 200)

const cacheId = (space: string, key: string) => `${space}\u0000${key}`

// The current version by a subquery, not a join: bun's SQLite re-plans a join with
// bound parameters on every run, which costs several times the lookup itself.
const currentOf = (columns: string) =>
  `SELECT ${columns} FROM doc_versions WHERE id = (SELECT version_id FROM doc_current WHERE space = ? AND key = ?)`
const CURRENT = currentOf('key, version, hash, content_type, updated_at, value')

/** The rows of a key's chain, newest first, from \`start\` (an id) back to the first version, or while \`more\` holds. */
const chain = (start: string, more = 'TRUE') => `WITH RECURSIVE walk(id, n) AS (
  ${start}
  UNION ALL
  SELECT v.prev, walk.n + 1 FROM doc_versions v JOIN walk ON v.id = walk.id WHERE v.prev IS NOT NULL AND ${more}
)`
// Version ?3 of key (?1, ?2): from the nearest anchor at or above it (or the current version) back to it.
const TO_VERSION = chain(
  `SELECT COALESCE(
    (SELECT version_id FROM doc_anchors WHERE space = ?1 AND key = ?2 AND version >= ?3 ORDER BY version LIMIT 1),
    (SELECT version_id FROM doc_current WHERE space = ?1 AND key = ?2)), 1`,
  'v.version > ?3',
)
const VERSION = `${TO_VERSION} SELECT key, version, hash, content_type, updated_at, value FROM doc_versions WHERE id IN (SELECT id FROM walk) AND version = ?3`
const FROM_CURRENT = 'SELECT version_id, 1 FROM doc_current WHERE space = ?1 AND key = ?2'
// The oldest kept version of key (?1, ?2): from its lowest anchor (or the current version) down,
// at most ANCHOR_EVERY rows, since pruning deletes every version below an anchor with it.
const OLDEST = `${chain(
  `SELECT COALESCE(
    (SELECT version_id FROM doc_anchors WHERE space = ?1 AND key = ?2 ORDER BY version LIMIT 1),
    (SELECT version_id FROM doc_current WHERE space = ?1 AND key = ?2)), 1`,
)} SELECT v.version, v.updated_at FROM walk JOIN doc_versions v ON v.id = walk.id ORDER BY walk.n DESC LIMIT 1`
// The oldest version of key (?1, ?2) stamped at or after ?3 in the run of such versions below the
// current one: from the lowest anchor so stamped (or the current version) down while they are.
const FIRST_NEW = `${chain(
  `SELECT COALESCE(
    (SELECT a.version_id FROM doc_anchors a JOIN doc_versions v ON v.id = a.version_id
      WHERE a.space = ?1 AND a.key = ?2 AND v.updated_at >= ?3 ORDER BY a.version LIMIT 1),
    (SELECT version_id FROM doc_current WHERE space = ?1 AND key = ?2)), 1`,
  'v.updated_at >= ?3',
)} SELECT MIN(v.version) AS version FROM walk JOIN doc_versions v ON v.id = walk.id WHERE v.updated_at >= ?3`

export class VersionedDocs implements Docs {
  private r
  private w
  private cache
  /**
   * Writes not yet in the cache, per cache id: counted up when a unit writes, down by
   * that write's after-commit hook (which updates the cache). A rolled-back write never
   * counts down, so its key keeps going to SQL, which is always right; a count of zero
   * means the cache holds what the writer would read.
   */
  private uncached = new Map<string, number>()

  /** `reader` serves reads (committed data only); `writer` the writes, inside the unit `unit`; `cacheBytes` bounds the document cache. */
  constructor(reader: Database, writer: Database, private unit: UnitHooks, cacheBytes = 64 * 1024 * 1024) {
    this.cache = newCache(cacheBytes)
    this.r = {
      get: reader.query<Doc, [string, string]>(CURRENT),
      exists: reader.query<{ one: number }, [string, string]>('SELECT 1 AS one FROM doc_current WHERE space = ? AND key = ?'),
      list: reader.query<Omit<DocMeta, 'hash'>, [string]>(
        `SELECT c.key, v.version, v.content_type, v.updated_at FROM doc_current c JOIN doc_versions v ON v.id = c.version_id
         WHERE c.space = ? ORDER BY c.key`,
      ),
      version: reader.query<Doc, [string, string, number]>(VERSION),
      history: reader.query<HistoryItem, [string, string, number]>(
        `${chain(FROM_CURRENT, 'walk.n < ?3')} SELECT v.version, v.hash, v.updated_at FROM walk JOIN doc_versions v ON v.id = walk.id ORDER BY walk.n`,
      ),
      count: reader.query<{ n: number }, [string]>('SELECT COUNT(*) AS n FROM doc_current WHERE space = ?'),
      oldest: reader.query<{ version: number; updated_at: string }, [string, string]>(OLDEST),
    }
    this.w = {
      get: writer.query<Doc, [string, string]>(CURRENT),
      meta: writer.query<DocMeta, [string, string]>(currentOf('key, version, hash, content_type, updated_at')),
      version: writer.query<Doc, [string, string, number]>(VERSION),
      // The new row's id from run()'s lastInsertRowid: RETURNING costs a result row.
      // Its prev is the current version's row, read in the same statement.
      append: writer.query<unknown, [string, string, number, string, string, string, Uint8Array]>(
        `INSERT INTO doc_versions (space, key, version, prev, hash, content_type, updated_at, value)
         VALUES (?1, ?2, ?3, (SELECT version_id FROM doc_current WHERE space = ?1 AND key = ?2), ?4, ?5, ?6, ?7)`,
      ),
      point: writer.query<unknown, [string, string, number]>(
        `INSERT INTO doc_current (space, key, version_id) VALUES (?, ?, ?)
         ON CONFLICT (space, key) DO UPDATE SET version_id = excluded.version_id`,
      ),
      anchor: writer.query<unknown, [string, string, number, number]>('INSERT INTO doc_anchors (space, key, version, version_id) VALUES (?, ?, ?, ?)'),
      // The chain before its head (doc_current), which goes last.
      deleteHistory: writer.query<unknown, [string, string]>(`${chain(FROM_CURRENT)} DELETE FROM doc_versions WHERE id IN (SELECT id FROM walk)`),
      deleteAnchors: writer.query<unknown, [string, string]>('DELETE FROM doc_anchors WHERE space = ? AND key = ?'),
      delete: writer.query<unknown, [string, string]>('DELETE FROM doc_current WHERE space = ? AND key = ?'),
      // Pruning (see prune below).
      keys: writer.query<{ key: string; version: number }, [string, string, number]>(
        `SELECT c.key, v.version FROM doc_current c JOIN doc_versions v ON v.id = c.version_id
         WHERE c.space = ? AND c.key > ? ORDER BY c.key LIMIT ?`,
      ),
      oldest: writer.query<{ version: number; updated_at: string }, [string, string]>(OLDEST),
      firstNew: writer.query<{ version: number | null }, [string, string, string]>(FIRST_NEW),
      lowestAnchor: writer.query<{ version: number; version_id: number }, [string, string]>(
        'SELECT version, version_id FROM doc_anchors WHERE space = ? AND key = ? ORDER BY version LIMIT 1',
      ),
      versionRow: writer.query<{ id: number; prev: number | null }, [string, string, number]>(
        `${TO_VERSION} SELECT id, prev FROM doc_versions WHERE id IN (SELECT id FROM walk) AND version = ?3`,
      ),
      // A row and every row below it on its chain.
      deleteDown: writer.query<unknown, [number]>(`${chain('SELECT ?1, 1')} DELETE FROM doc_versions WHERE id IN (SELECT id FROM walk)`),
      deleteAnchor: writer.query<unknown, [string, string, number]>('DELETE FROM doc_anchors WHERE space = ? AND key = ? AND version = ?'),
    }
  }

  // ---- reads (committed data) ----

  get(space: string, key: string): Doc | null {
    const id = cacheId(space, key)
    let doc = this.cache.get(id)
    if (doc === undefined) this.cache.set(id, (doc = this.r.get.get(space, key)))
    return doc
  }
  cached(space: string, key: string): Doc | null | undefined {
    return this.cache.get(cacheId(space, key))
  }
  meta(space: string, key: string): DocMeta | null {
    const doc = this.get(space, key)
    return doc && { key: doc.key, version: doc.version, hash: doc.hash, content_type: doc.content_type, updated_at: doc.updated_at }
  }
  list(space: string): Omit<DocMeta, 'hash'>[] {
    return this.r.list.all(space)
  }
  count(space: string): number {
    return this.r.count.get(space)!.n
  }
  getVersion(space: string, key: string, version: number): Doc | null {
    return versionOf(this.r.version, space, key, version) ?? this.checkPruned(this.r.oldest, space, key, version)
  }
  /** null when the document does not exist. */
  history(space: string, key: string, limit: number): HistoryItem[] | null {
    if (!this.r.exists.get(space, key)) return null
    return this.r.history.all(space, key, limit)
  }

  // ---- writes (synchronous, inside the current unit of work) ----

  /** The current document as the running unit sees it (uncommitted writes included). */
  current(space: string, key: string): Doc | null {
    return this.w.get.get(space, key)
  }

  put(space: string, key: string, value: Uint8Array, contentType: string, cond: WriteCondition = {}): DocMeta {
    const current = this.writerMeta(space, key)
    checkCondition(current, cond)
    return this.write(space, key, value, contentType, current)
  }

  /** The current version as the writer sees it: from the cache when no write to it is pending (a query less per PUT). */
  private writerMeta(space: string, key: string): DocMeta | null {
    const id = cacheId(space, key)
    const cached = this.uncached.has(id) ? undefined : this.cache.get(id)
    return cached === undefined ? this.w.meta.get(space, key) : cached
  }

  /** Stores version `version`'s value as a new, higher version. */
  rollback(space: string, key: string, version: number, cond: WriteCondition = {}): DocMeta & { rolled_back: number } {
    const current = this.w.meta.get(space, key)
    if (!current) throw notFound('key not found')
    const old = versionOf(this.w.version, space, key, version) ?? this.checkPruned(this.w.oldest, space, key, version)
    if (!old) throw notFound(`version ${version} not found`)
    checkCondition(current, cond)
    return { ...this.write(space, key, old.value, old.content_type, current), rolled_back: version }
  }

  delete(space: string, key: string, cond: WriteCondition = {}): boolean {
    const current = this.w.meta.get(space, key)
    if (!current) return false
    checkCondition(current, cond)
    this.w.deleteHistory.run(space, key)
    this.w.deleteAnchors.run(space, key)
    this.w.delete.run(space, key)
    this.cacheOnCommit(space, key, null)
    return true
  }

  /** Throws the 404 of a pruned version when `version` is below the key's oldest kept one; null otherwise. */
  private checkPruned(oldest: { get(space: string, key: string): { version: number } | null }, space: string, key: string, version: number): null {
    const kept = version >= 1 ? oldest.get(space, key) : null
    if (kept && version < kept.version) throw prunedVersion(key, version, kept.version)
    return null
  }

  /**
   * Deletes the versions `retention` does not keep, oldest first, one anchor's stretch (at most
   * ANCHOR_EVERY versions) at a time, then the rest below the floor: the kept chain is whole after
   * each stretch, so a step may stop between two and the next one goes on from there.
   */
  prune(space: string, retention: Retention, after: string, limits: PruneLimits): PruneStep {
    const keys = this.w.keys.all(space, after, limits.keys)
    let deleted = 0
    let done = after
    for (const { key, version: current } of keys) {
      // Fewer versions than kept and no age limit: nothing to look up.
      if (retention.before === null && current <= retention.keep) {
        done = key
        continue
      }
      const oldest = this.w.oldest.get(space, key)
      if (oldest && hasExcess(current, oldest, retention)) {
        const firstNew = retention.before === null ? null : this.w.firstNew.get(space, key, retention.before)?.version ?? null
        const floor = floorOf(current, retention, firstNew)
        for (;;) {
          // A stretch is at most ANCHOR_EVERY versions: stop before one would pass the limit (the first always goes).
          if (deleted > 0 && deleted + ANCHOR_EVERY > limits.versions) return { deleted, next: done }
          const anchor = this.w.lowestAnchor.get(space, key)
          if (anchor && anchor.version < floor) {
            deleted += this.w.deleteDown.run(anchor.version_id).changes
            this.w.deleteAnchor.run(space, key, anchor.version)
            continue
          }
          const row = this.w.versionRow.get(space, key, floor)
          if (row?.prev != null) deleted += this.w.deleteDown.run(row.prev).changes
          break
        }
      }
      done = key
    }
    return { deleted, next: keys.length < limits.keys ? null : done }
  }

  private write(space: string, key: string, value: Uint8Array, contentType: string, current: DocMeta | null): DocMeta {
    // A deleted key's history went with it: a new one starts at 1.
    const version = current ? current.version + 1 : 1
    const meta: DocMeta = { key, version, hash: sha256(value), content_type: contentType, updated_at: nowIso() }
    const id = Number(this.w.append.run(space, key, version, meta.hash, contentType, meta.updated_at, value).lastInsertRowid)
    this.w.point.run(space, key, id)
    if (version % ANCHOR_EVERY === 0) this.w.anchor.run(space, key, version, id)
    // The committed document is known here: cache it then, so the next read needs no query.
    this.cacheOnCommit(space, key, { ...meta, value })
    return meta
  }

  private cacheOnCommit(space: string, key: string, doc: Doc | null): void {
    const id = cacheId(space, key)
    this.uncached.set(id, (this.uncached.get(id) ?? 0) + 1)
    this.unit.afterCommit(() => {
      this.cache.set(id, doc)
      const n = this.uncached.get(id)! - 1
      if (n) this.uncached.set(id, n)
      else this.uncached.delete(id)
    })
  }
}

/** Version `version` by the VERSION query `stmt`: below 1 none exists, and the walk would go down the whole chain to find that out. */
function versionOf(stmt: { get(space: string, key: string, version: number): Doc | null }, space: string, key: string, version: number): Doc | null {
  return version >= 1 ? stmt.get(space, key, version) : null
}


// Versioned documents on PostgreSQL (the engine behind state and specs; see
// store/versioned.ts for the SQLite one and the write conditions). No cache: another
// replica may have written the key since, so every read asks the database. The prune job
// deletes the oldest versions of a key, so its versions stay numbered without gaps.
import type { SQL } from 'bun'
import { notFound } from '../../lib/errors'
import { nowIso } from '../../lib/time'
import { checkCondition, floorOf, hasExcess, prunedVersion, sha256, type Doc, type DocMeta, type Docs, type HistoryItem, type WriteCondition } from '../versioned'
import { q } from './db'
import { sendable } from './send'
import type { PgUnits } from './units'

const META = 'v.key, v.version, v.hash, v.content_type, v.updated_at'
const current = q<Doc>(`SELECT ${META}, v.value FROM doc_current c JOIN doc_versions v ON v.id = c.version_id WHERE c.space = ? AND c.key = ?`)
const currentMeta = q<DocMeta>(`SELECT ${META} FROM doc_current c JOIN doc_versions v ON v.id = c.version_id WHERE c.space = ? AND c.key = ?`)
const version = q<Doc>('SELECT key, version, hash, content_type, updated_at, value FROM doc_versions WHERE space = ? AND key = ? AND version = ?')
const exists = q('SELECT 1 AS one FROM doc_current WHERE space = ? AND key = ?')
const list = q<Omit<DocMeta, 'hash'>>(
  `SELECT c.key, v.version, v.content_type, v.updated_at FROM doc_current c JOIN doc_versions v ON v.id = c.version_id
   WHERE c.space = ? ORDER BY c.key`,
)
const history = q<HistoryItem>('SELECT version, hash, updated_at FROM doc_versions WHERE space = ? AND key = ? ORDER BY version DESC LIMIT ?')
const count = q<{ n: number }>('SELECT COUNT(*)::int AS n FROM doc_current WHERE space = ?')
// Sent without waiting: the new version, and the current pointer moved to it (@0: the version's row).
const APPEND = sendable(
  'INSERT INTO doc_versions (space, key, version, hash, content_type, updated_at, value) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7) RETURNING id',
  `INSERT INTO doc_current (space, key, version_id) SELECT ?1, ?2, id FROM @0
   ON CONFLICT (space, key) DO UPDATE SET version_id = excluded.version_id`,
)
const maxVersion = q<{ v: number | null }>('SELECT MAX(version) AS v FROM doc_versions WHERE space = ? AND key = ?')
const remove = q('DELETE FROM doc_current WHERE space = ? AND key = ?')
const removeHistory = q('DELETE FROM doc_versions WHERE space = ? AND key = ?')
// Pruning: versions are numbered without gaps, and the oldest go first, on the (space, key, version) index.
const oldestOf = q<{ version: number; updated_at: string }>('SELECT version, updated_at FROM doc_versions WHERE space = ? AND key = ? ORDER BY version LIMIT 1')
const firstNewOf = q<{ version: number }>('SELECT version FROM doc_versions WHERE space = ? AND key = ? AND updated_at >= ? ORDER BY version LIMIT 1')
const keysAfter = q<{ key: string; version: number }>(
  `SELECT c.key, v.version FROM doc_current c JOIN doc_versions v ON v.id = c.version_id
   WHERE c.space = ? AND c.key > ? ORDER BY c.key LIMIT ?`,
)
const pruneBelow = q(
  'DELETE FROM doc_versions WHERE id IN (SELECT id FROM doc_versions WHERE space = ? AND key = ? AND version < ? ORDER BY version LIMIT ?)',
)

/** bytea comes back as a Buffer; callers expect a plain Uint8Array view. */
const asDoc = (d: Doc | null): Doc | null => d && { ...d, value: new Uint8Array(d.value.buffer, d.value.byteOffset, d.value.byteLength) }

export function pgDocs(sql: SQL, u: PgUnits): Docs {
  const write = async (space: string, key: string, value: Uint8Array, contentType: string, cur: DocMeta | null): Promise<DocMeta> => {
    const v = cur ? cur.version + 1 : ((await maxVersion.get(u.tx, space, key))?.v ?? 0) + 1
    const meta: DocMeta = { key, version: v, hash: sha256(value), content_type: contentType, updated_at: nowIso() }
    u.send(APPEND, [space, key, v, meta.hash, contentType, meta.updated_at, value])
    return meta
  }
  /** Throws the 404 of a pruned version when `v` is below the key's oldest kept one. */
  const checkPruned = async (h: Parameters<typeof oldestOf.get>[0], space: string, key: string, v: number): Promise<null> => {
    const kept = v >= 1 ? await oldestOf.get(h, space, key) : null
    if (kept && v < kept.version) throw prunedVersion(key, v, kept.version)
    return null
  }
  return {
    get: async (space, key) => asDoc(await current.get(sql, space, key)),
    meta: (space, key) => currentMeta.get(sql, space, key),
    list: (space) => list.all(sql, space),
    count: async (space) => (await count.get(sql, space))!.n,
    getVersion: async (space, key, v) => asDoc(await version.get(sql, space, key, v)) ?? checkPruned(sql, space, key, v),
    async history(space, key, limit) {
      if (!(await exists.get(sql, space, key))) return null
      return history.all(sql, space, key, limit)
    },
    current: async (space, key) => asDoc(await current.get(u.tx, space, key)),
    async put(space, key, value, contentType, cond: WriteCondition = {}) {
      const cur = await currentMeta.get(u.tx, space, key)
      checkCondition(cur, cond)
      return write(space, key, value, contentType, cur)
    },
    async rollback(space, key, v, cond: WriteCondition = {}) {
      const cur = await currentMeta.get(u.tx, space, key)
      if (!cur) throw notFound('key not found')
      const old = (await version.get(u.tx, space, key, v)) ?? (await checkPruned(u.tx, space, key, v))
      if (!old) throw notFound(`version ${v} not found`)
      checkCondition(cur, cond)
      return { ...(await write(space, key, old.value, old.content_type, cur)), rolled_back: v }
    },
    async delete(space, key, cond: WriteCondition = {}) {
      const cur = await currentMeta.get(u.tx, space, key)
      if (!cur) return false
      checkCondition(cur, cond)
      await remove.run(u.tx, space, key)
      await removeHistory.run(u.tx, space, key)
      return true
    },
    async prune(space, retention, after, limits) {
      const keys = await keysAfter.all(u.tx, space, after, limits.keys)
      let deleted = 0
      let done = after
      for (const { key, version: current } of keys) {
        if (retention.before !== null || current > retention.keep) {
          const oldest = await oldestOf.get(u.tx, space, key)
          if (oldest && hasExcess(current, oldest, retention)) {
            if (deleted >= limits.versions) return { deleted, next: done }
            const firstNew = retention.before === null ? null : ((await firstNewOf.get(u.tx, space, key, retention.before))?.version ?? null)
            const floor = floorOf(current, retention, firstNew)
            const n = await pruneBelow.run(u.tx, space, key, floor, limits.versions - deleted)
            deleted += n
            // Cut short by the limit: this key goes on in the next step.
            if (oldest.version + n < floor) return { deleted, next: done }
          }
        }
        done = key
      }
      return { deleted, next: keys.length < limits.keys ? null : done }
    },
  }
}

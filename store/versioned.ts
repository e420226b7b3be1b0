// Versioned documents: what the state store and the spec registry share on both
// backends (the engine's chain is each backend's own: store/sqlite/versioned.ts,
// store/pg/versioned.ts). A "space" separates them ('state', or 'spec:<project>').
import { AppError } from '../lib/errors'

export interface DocMeta {
  key: string
  version: number
  hash: string
  content_type: string
  updated_at: string
}
export interface Doc extends DocMeta {
  value: Uint8Array
}
export interface HistoryItem {
  version: number
  hash: string
  updated_at: string
}

/** Compare-and-swap conditions; any that is set must hold or the write fails with 412. */
export interface WriteCondition {
  ifVersion?: number
  ifMatch?: string[] // hashes, unquoted; '*' matches any existing version
  createOnly?: boolean
}

type Maybe<T> = T | Promise<T>

/** What the state store and the spec registry need of a versioned-document engine (SQLite's below, PostgreSQL's in store/pg/versioned.ts). */
export interface Docs {
  get(space: string, key: string): Maybe<Doc | null>
  /** The current document when it is in memory (null: known not to exist), undefined when a read is needed; absent without a cache. */
  cached?(space: string, key: string): Doc | null | undefined
  meta(space: string, key: string): Maybe<DocMeta | null>
  list(space: string): Maybe<Omit<DocMeta, 'hash'>[]>
  count(space: string): Maybe<number>
  getVersion(space: string, key: string, version: number): Maybe<Doc | null>
  history(space: string, key: string, limit: number): Maybe<HistoryItem[] | null>
  current(space: string, key: string): Maybe<Doc | null>
  put(space: string, key: string, value: Uint8Array, contentType: string, cond?: WriteCondition): Maybe<DocMeta>
  rollback(space: string, key: string, version: number, cond?: WriteCondition): Maybe<DocMeta & { rolled_back: number }>
  delete(space: string, key: string, cond?: WriteCondition): Maybe<boolean>
  /**
   * One bounded step of pruning `space` (inside a unit): the keys after `after`, in key order,
   * until `limits` are reached; `next` is where the following step starts, null once the space is done.
   */
  prune(space: string, retention: Retention, after: string, limits: PruneLimits): Maybe<PruneStep>
}

/** What the prune job keeps of each key: the newest `keep` versions, none older than `before` (ISO), and always the current one. */
export interface Retention {
  keep: number
  before: string | null
}
/** The bounds of one prune step (one unit holding the writer): keys looked at, versions deleted. */
export interface PruneLimits {
  keys: number
  versions: number
}
export interface PruneStep {
  deleted: number
  next: string | null
}

/** The oldest version a key keeps under `retention` (`firstNew`: its oldest version stamped at or after `before`, or its current one). */
export function floorOf(current: number, retention: Retention, firstNew: number | null): number {
  const byCount = current - retention.keep + 1
  return Math.min(current, Math.max(1, byCount, retention.before === null ? 1 : (firstNew ?? current)))
}

/** Whether a key whose oldest row is `oldest` has anything to prune (cheap: no search for the floor). */
export function hasExcess(current: number, oldest: { version: number; updated_at: string }, retention: Retention): boolean {
  if (oldest.version >= current) return false
  return oldest.version <= current - retention.keep || (retention.before !== null && oldest.updated_at < retention.before)
}

/**
 * The 404 of a version below a key's oldest kept one: it names that version, so a caller
 * knows at once which versions it can still read, diff or roll back to.
 */
export function prunedVersion(key: string, version: number, oldest: number): AppError {
  return new AppError(
    'not_found',
    `version ${version} of "${key}" was pruned (history keeps the newest versions; see --state-history); the oldest kept version is ${oldest}: read, diff or roll back to ${oldest} or later`,
    { oldest_version: oldest },
  )
}

/** Hex SHA-256; the one-shot hash, cheaper than a CryptoHasher per value. */
export function sha256(value: Uint8Array): string {
  return Bun.SHA256.hash(value, 'hex') as string
}

/** Versions kept in doc_anchors: this one in every so many (the migration in store/sqlite/db.ts uses the same number). */
export const ANCHOR_EVERY = 64

export function checkCondition(current: DocMeta | null, cond: WriteCondition): void {
  const fail = (why: string) => new AppError('precondition', why, { current_version: current?.version ?? 0 })
  if (cond.createOnly && current) throw fail('precondition failed: the key already exists')
  if (cond.ifVersion !== undefined && (current?.version ?? 0) !== cond.ifVersion)
    throw fail(`precondition failed: expected version ${cond.ifVersion}`)
  if (cond.ifMatch) {
    const ok = current && cond.ifMatch.some((tag) => tag === '*' || tag === current.hash)
    if (!ok) throw fail('precondition failed: If-Match does not match the current ETag')
  }
}

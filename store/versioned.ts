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

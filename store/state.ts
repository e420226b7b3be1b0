// State store: a flat key/value space of versioned documents.
import type { Database } from 'bun:sqlite'
import { VersionedDocs, type Doc, type DocMeta, type HistoryItem, type WriteCondition } from './versioned'

const SPACE = 'state'

export interface StateStore {
  list(): Promise<Omit<DocMeta, 'hash'>[]>
  count(): Promise<number>
  get(key: string): Promise<Doc | null>
  meta(key: string): Promise<DocMeta | null>
  getVersion(key: string, version: number): Promise<Doc | null>
  history(key: string, limit: number): Promise<HistoryItem[] | null>
  put(key: string, value: Uint8Array, contentType: string, cond?: WriteCondition): Promise<DocMeta>
  rollback(key: string, version: number, cond?: WriteCondition): Promise<DocMeta & { rolled_back: number }>
  delete(key: string, cond?: WriteCondition): Promise<boolean>
}

export function stateStore(db: Database): StateStore {
  const docs = new VersionedDocs(db)
  return {
    list: async () => docs.list(SPACE),
    count: async () => docs.count(SPACE),
    get: async (key) => docs.get(SPACE, key),
    meta: async (key) => docs.meta(SPACE, key),
    getVersion: async (key, version) => docs.getVersion(SPACE, key, version),
    history: async (key, limit) => docs.history(SPACE, key, limit),
    put: async (key, value, contentType, cond) => docs.put(SPACE, key, value, contentType, cond),
    rollback: async (key, version, cond) => docs.rollback(SPACE, key, version, cond),
    delete: async (key, cond) => docs.delete(SPACE, key, cond),
  }
}

// State store: a flat key/value space of versioned documents.
import type { Docs, Doc, DocMeta, HistoryItem, PruneLimits, PruneStep, Retention, WriteCondition } from './versioned'

const SPACE = 'state'

export interface StateStore {
  list(): Promise<Omit<DocMeta, 'hash'>[]>
  count(): Promise<number>
  get(key: string): Promise<Doc | null>
  /** The current value without waiting when the backend holds it in memory (null: no such key); undefined: use get(). */
  cached(key: string): Doc | null | undefined
  meta(key: string): Promise<DocMeta | null>
  getVersion(key: string, version: number): Promise<Doc | null>
  history(key: string, limit: number): Promise<HistoryItem[] | null>
}

/** State writes, run inside a unit of work (Store.write). */
export interface StateWrites {
  put(key: string, value: Uint8Array, contentType: string, cond?: WriteCondition): Promise<DocMeta>
  rollback(key: string, version: number, cond?: WriteCondition): Promise<DocMeta & { rolled_back: number }>
  delete(key: string, cond?: WriteCondition): Promise<boolean>
  /** One bounded step of the history pruning (jobs/prune.ts): keys after `after`. */
  prune(retention: Retention, after: string, limits: PruneLimits): Promise<PruneStep>
}

export function stateStore(docs: Docs): StateStore {
  return {
    list: async () => docs.list(SPACE),
    count: async () => docs.count(SPACE),
    get: async (key) => docs.get(SPACE, key),
    cached: (key) => docs.cached?.(SPACE, key),
    meta: async (key) => docs.meta(SPACE, key),
    getVersion: async (key, version) => docs.getVersion(SPACE, key, version),
    history: async (key, limit) => docs.history(SPACE, key, limit),
  }
}

export function stateWrites(docs: Docs): StateWrites {
  return {
    put: async (key, value, contentType, cond) => docs.put(SPACE, key, value, contentType, cond),
    rollback: async (key, version, cond) => docs.rollback(SPACE, key, version, cond),
    delete: async (key, cond) => docs.delete(SPACE, key, cond),
    prune: async (retention, after, limits) => docs.prune(SPACE, retention, after, limits),
  }
}

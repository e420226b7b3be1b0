// Spec registry: per-project named JSON documents (contracts are specs too).
import type { Docs, Doc, DocMeta, HistoryItem, WriteCondition } from './versioned'

const space = (project: string) => `spec:${project}`

export interface SpecMeta {
  project: string
  name: string
  version: number
  hash: string
  updated_at: string
}

export interface SpecsStore {
  list(project: string): Promise<{ name: string; version: number; updated_at: string }[]>
  get(project: string, name: string): Promise<Doc | null>
  getVersion(project: string, name: string, version: number): Promise<Doc | null>
  history(project: string, name: string, limit: number): Promise<HistoryItem[] | null>
}

/** Spec writes, run inside a unit of work (Store.write). */
export interface SpecsWrites {
  /** The current document as this unit sees it. */
  current(project: string, name: string): Promise<Doc | null>
  put(project: string, name: string, data: Uint8Array, cond?: WriteCondition): Promise<SpecMeta>
  delete(project: string, name: string, cond?: WriteCondition): Promise<boolean>
}

export function specsStore(docs: Docs): SpecsStore {
  return {
    list: async (project) =>
      (await docs.list(space(project))).map((d) => ({ name: d.key, version: d.version, updated_at: d.updated_at })),
    get: async (project, name) => docs.get(space(project), name),
    getVersion: async (project, name, version) => docs.getVersion(space(project), name, version),
    history: async (project, name, limit) => docs.history(space(project), name, limit),
  }
}

export function specsWrites(docs: Docs): SpecsWrites {
  const toSpec = (project: string, m: DocMeta): SpecMeta => ({ project, name: m.key, version: m.version, hash: m.hash, updated_at: m.updated_at })
  return {
    current: async (project, name) => docs.current(space(project), name),
    put: async (project, name, data, cond) => toSpec(project, await docs.put(space(project), name, data, 'application/json', cond)),
    delete: async (project, name, cond) => docs.delete(space(project), name, cond),
  }
}

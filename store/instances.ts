// Instance registry: agents that registered with the service.
import type { Database } from 'bun:sqlite'

export interface InstancesStore {
  /** The id of the instance whose token hashes to tokenHash, or null. */
  idByTokenHash(tokenHash: string): Promise<string | null>
  count(): Promise<number>
}

export function instancesStore(db: Database): InstancesStore {
  const byHash = db.query<{ id: string }, [string]>('SELECT id FROM instances WHERE token_hash = ?')
  const count = db.query<{ n: number }, []>('SELECT COUNT(*) AS n FROM instances')
  return {
    idByTokenHash: async (h) => byHash.get(h)?.id ?? null,
    count: async () => count.get()!.n,
  }
}

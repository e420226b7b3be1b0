// What every coordination primitive shares in the database: the fence counter, and
// the view of a holder (its instance's name and liveness) that conflicts show.
import type { Database } from 'bun:sqlite'

/** Who holds a grant, as a 409 shows it: the holder's liveness tells a live holder from a dead one. */
export interface HolderView {
  instance_id: string
  instance_name: string
  instance_status: string
}

export interface HoldersWrites {
  /** The next fence: strictly increasing over every grant of the server, never repeated (it is in the database). */
  nextFence(): number
}

export interface HoldersStore {
  /** Name and status of each instance id (absent ids: name "", status "gone"). */
  views(ids: string[]): Promise<Map<string, HolderView>>
}

export function holdersWrites(db: Database): HoldersWrites {
  const next = db.query<{ value: number }, []>('UPDATE fence_counter SET value = value + 1 WHERE id = 1 RETURNING value')
  return { nextFence: () => next.get()!.value }
}

export function holdersStore(db: Database): HoldersStore {
  const one = db.query<{ name: string; status: string }, [string]>('SELECT name, status FROM instances WHERE id = ?')
  return {
    async views(ids) {
      const out = new Map<string, HolderView>()
      for (const id of new Set(ids)) {
        const row = one.get(id)
        out.set(id, { instance_id: id, instance_name: row?.name ?? '', instance_status: row?.status ?? 'gone' })
      }
      return out
    },
  }
}

// What every coordination primitive shares in the database: the fence counter, and
// the view of a holder (its instance's name and liveness) that conflicts show.
import { int, send, stmt, type Dialect, type Runner } from './runner'

/** Who holds a grant, as a 409 shows it: the holder's liveness tells a live holder from a dead one. */
export interface HolderView {
  instance_id: string
  instance_name: string
  instance_status: string
}

export interface HoldersWrites {
  /** The next fence: strictly increasing over every grant of the server, never repeated (it is in the database). */
  nextFence(): Promise<number>
  /** A holder's heartbeat as instances.heartbeat writes it (last_seen `at`, status active), without reading the row back; false when there is no such instance. */
  beat(instanceId: string, at: string): Promise<boolean>
}

export interface HoldersStore {
  /** Name and status of each instance id (absent ids: name "", status "gone"). */
  views(ids: string[]): Promise<Map<string, HolderView>>
}

type Row = { id: string; name: string; status: string }
const ONE = stmt<Row>('SELECT id, name, status FROM instances WHERE id = ?')
// Two statements rather than one with RETURNING, whose result row cost SQLite more than both;
// on PostgreSQL the bump is sent without waiting and goes out with the read.
const BUMP = stmt('UPDATE fence_counter SET value = value + 1 WHERE id = 1')
const FENCE = stmt<{ value: number | string }>('SELECT value FROM fence_counter WHERE id = 1')
// No RETURNING: reading the row back cost more than the update itself, on every holder call.
const BEAT = stmt("UPDATE instances SET last_seen = ?, status = 'active' WHERE id = ?")

export function holdersWrites(w: Runner): HoldersWrites {
  return {
    async nextFence() {
      await send(w, BUMP)
      return int((await w.get(FENCE))!.value)
    },
    beat: async (id, at) => (await w.run(BEAT, at, id)) === 1,
  }
}

export function holdersStore(r: Runner, d: Dialect): HoldersStore {
  const some = stmt<Row>(`SELECT id, name, status FROM instances WHERE id IN (SELECT x.value FROM ${d.elements('?')})`)
  return {
    async views(ids) {
      const unique = [...new Set(ids)]
      // One holder is the common case: a lookup by key, no JSON array to build and walk.
      const rows = unique.length === 1 ? await r.all(ONE, unique[0]) : await r.all(some, JSON.stringify(unique))
      const found = new Map(rows.map((row) => [row.id, row]))
      return new Map(
        unique.map((id) => {
          const row = found.get(id)
          return [id, { instance_id: id, instance_name: row?.name ?? '', instance_status: row?.status ?? 'gone' }]
        }),
      )
    },
  }
}

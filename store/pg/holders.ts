// The fence counter and holder views on PostgreSQL (store/holders.ts).
import type { SQL } from 'bun'
import type { Async } from '../index'
import type { HoldersStore, HoldersWrites, HolderView } from '../holders'
import { int, q, type PgUnits } from './db'

const next = q<{ value: string }>('UPDATE fence_counter SET value = value + 1 WHERE id = 1 RETURNING value')
const some = q<{ id: string; name: string; status: string }>('SELECT id, name, status FROM instances WHERE id = ANY(?::text[])')

export function pgHoldersWrites(u: PgUnits): Async<HoldersWrites> {
  return { nextFence: async () => int((await next.get(u.tx))!.value) }
}

export function pgHoldersStore(sql: SQL): HoldersStore {
  return {
    async views(ids) {
      const unique = [...new Set(ids)]
      const found = new Map((await some.all(sql, unique)).map((r) => [r.id, r]))
      return new Map(
        unique.map((id) => {
          const row = found.get(id)
          return [id, { instance_id: id, instance_name: row?.name ?? '', instance_status: row?.status ?? 'gone' } satisfies HolderView]
        }),
      )
    },
  }
}

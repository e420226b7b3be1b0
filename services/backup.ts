// Backup and restore of the whole database. A restore commits its audit entry and
// a backup.restored event into the restored database, so the log of the data now
// live says who replaced it; subscribers learn that every cached view is stale.
import type { Ctx } from './context'
import { recordAudit, type AuditScope } from './audit'
import { log } from '../obs/log'

/** A consistent snapshot file (the caller streams and removes it). Pending metric counts go in first. */
export async function takeBackup(ctx: Ctx): Promise<string> {
  await ctx.metrics.flush()
  return ctx.store.snapshot()
}

/** Checks `file` and swaps it in (400 and nothing changed for a bad file). */
export async function restoreBackup(ctx: Ctx, scope: AuditScope | undefined, file: string, bytes: number): Promise<void> {
  // Counts made so far belong to the database being replaced.
  await ctx.metrics.flush()
  await ctx.store.replaceWith(file)
  await ctx.store.write(async (tx) => {
    await tx.emit('backup.restored', { bytes, schema_version: ctx.store.schemaVersion }, 'backup')
    await recordAudit(tx, scope, `${bytes} bytes`)
  })
  log.info({ bytes, actor: scope?.actor ?? null, schema_version: ctx.store.schemaVersion }, 'database restored from backup')
}

// Spec use cases (contracts are specs too): a write commits with its spec.changed event and audit entry.
import type { Ctx } from './context'
import type { WriteCondition } from '../store/versioned'
import type { SpecMeta } from '../store/specs'
import type { Tx } from '../store'
import { notFound } from '../lib/errors'
import { recordAudit, type AuditScope } from './audit'

/** Writes a spec inside a unit: the event goes with it. For callers composing larger units (contracts, template apply). */
export async function writeSpec(tx: Tx, project: string, name: string, bytes: Uint8Array, cond?: WriteCondition): Promise<SpecMeta> {
  const meta = await tx.specs.put(project, name, bytes, cond)
  await tx.emit('spec.changed', { project, name, version: meta.version, operation: 'put' }, 'specs')
  return meta
}

export function putSpec(ctx: Ctx, scope: AuditScope | undefined, project: string, name: string, bytes: Uint8Array, cond?: WriteCondition): Promise<SpecMeta> {
  return ctx.store.write(async (tx) => {
    const meta = await writeSpec(tx, project, name, bytes, cond)
    await recordAudit(tx, scope, `version ${meta.version}`)
    return meta
  })
}

/** Deletes a spec; 404 (`what` not found) when missing. */
export function deleteSpec(ctx: Ctx, scope: AuditScope | undefined, project: string, name: string, cond?: WriteCondition, what = 'spec'): Promise<void> {
  return ctx.store.write(async (tx) => {
    if (!await tx.specs.delete(project, name, cond)) throw notFound(`${what} not found`)
    await tx.emit('spec.changed', { project, name, version: 0, operation: 'delete' }, 'specs')
    await recordAudit(tx, scope)
  })
}

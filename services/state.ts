// State use cases: every write commits with its state.changed event and its audit entry.
import type { Ctx } from './context'
import type { DocMeta, WriteCondition } from '../store/versioned'
import { notFound } from '../lib/errors'
import { recordAudit, type AuditScope } from './audit'

const changed = { topic: 'state.changed', source: 'state' } as const

export function putState(ctx: Ctx, scope: AuditScope | undefined, key: string, value: Uint8Array, contentType: string, cond?: WriteCondition): Promise<DocMeta> {
  return ctx.store.write(async (tx) => {
    const meta = await tx.state.put(key, value, contentType, cond)
    await tx.emit(changed.topic, { key, version: meta.version, hash: meta.hash, operation: 'put' }, changed.source)
    await recordAudit(tx, scope, `version ${meta.version}`)
    return meta
  })
}

export async function rollbackState(ctx: Ctx, scope: AuditScope | undefined, key: string, version: number, cond?: WriteCondition) {
  const result = await ctx.store.write(async (tx) => {
    const r = await tx.state.rollback(key, version, cond)
    await tx.emit(changed.topic, { key, version: r.version, hash: r.hash, operation: 'rollback' }, changed.source)
    await recordAudit(tx, scope, `rolled back to ${r.rolled_back} as version ${r.version}`)
    return r
  })
  if (scope?.instanceId) ctx.metrics.count(scope.instanceId, 'rollbacks')
  return result
}

export function deleteState(ctx: Ctx, scope: AuditScope | undefined, key: string, cond?: WriteCondition): Promise<void> {
  return ctx.store.write(async (tx) => {
    if (!await tx.state.delete(key, cond)) throw notFound('key not found')
    await tx.emit(changed.topic, { key, version: 0, hash: '', operation: 'delete' }, changed.source)
    await recordAudit(tx, scope)
  })
}

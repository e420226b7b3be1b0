// Contract use cases: a contract is a spec whose document compiles; writing one
// commits the spec, its spec.changed event and the audit entry together.
import type { Ctx } from './context'
import type { WriteCondition } from '../store/versioned'
import type { SpecMeta } from '../store/specs'
import { conflict } from '../lib/errors'
import { compileContract, contractCache, decodeJson, isContractDoc, type CompiledContract } from '../contracts/contract'
import type { Tx } from '../store'
import { recordAudit, type AuditScope } from './audit'
import { deleteSpec, writeSpec } from './specs'

/** Stores a compiled contract inside the caller's unit; 409 when that spec exists and is not a contract. */
export async function writeContract(tx: Tx, project: string, name: string, bytes: Uint8Array, compiled: CompiledContract, cond?: WriteCondition): Promise<SpecMeta> {
  const current = await tx.specs.current(project, name)
  if (current && !isContractDoc(decodeJson(current.value)))
    throw conflict(`spec ${project}/${name} exists and is not a contract; delete it first or choose another name`)
  const meta = await writeSpec(tx, project, name, bytes, cond)
  contractCache.set(project, name, meta.hash, { compiled, problems: [] })
  return meta
}

/** Checks and compiles `json` (400 naming the problems), then stores it. */
export function putContract(ctx: Ctx, scope: AuditScope | undefined, project: string, name: string, bytes: Uint8Array, json: unknown, cond?: WriteCondition): Promise<SpecMeta> {
  const compiled = compileContract(json)
  return ctx.store.write(async (tx) => {
    const meta = await writeContract(tx, project, name, bytes, compiled, cond)
    await recordAudit(tx, scope, `version ${meta.version}`)
    return meta
  })
}

export async function deleteContract(ctx: Ctx, scope: AuditScope | undefined, project: string, name: string, cond?: WriteCondition): Promise<void> {
  await deleteSpec(ctx, scope, project, name, cond, 'contract')
  contractCache.forget(project, name)
}

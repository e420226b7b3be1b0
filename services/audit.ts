// Who did what: the caller of a use case and the audit entry its write commits with.
import type { Tx } from '../store'

/** What a credential may do (access.md): the admin token (or no auth at all), an agent token, a viewer token. */
export type Role = 'admin' | 'agent' | 'viewer'

export interface Caller {
  /** Audit actor: the instance id, else "token:<name>" for an agent or viewer token, else "admin" (server token), else "anonymous". */
  actor: string
  instanceId: string | null
  role: Role
  /** The agent or viewer token of the call (null: the admin token, or auth off). */
  tokenId: string | null
}

/**
 * The audit entry a use case owes: who, which action, on what. A service writes it
 * inside the unit of its change (`recordAudit`), so the change and its entry commit
 * together; the HTTP layer writes it afterwards only when the request failed or the
 * route changed nothing durable.
 */
export interface AuditScope extends Caller {
  action: string
  resource: string
  /** Set once the entry was written with the change. */
  written: boolean
}

export const SYSTEM: Caller = { actor: 'system', instanceId: null, role: 'admin', tokenId: null }

/** A scope for a call that does not come through an audited route (MCP tool, template apply). */
export const scopeFor = (caller: Caller, action: string, resource: string): AuditScope => ({ ...caller, action, resource, written: false })

/** Appends the success entry of `scope` in the current unit; a no-op without a scope. */
export async function recordAudit(tx: Tx, scope: AuditScope | undefined, detail = ''): Promise<void> {
  if (!scope) return
  await tx.audit.append({ actor: scope.actor, action: scope.action, resource: scope.resource, detail, outcome: 'success' })
  scope.written = true
}

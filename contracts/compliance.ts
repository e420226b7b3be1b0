// Compliance planning, pure: which projects an instance's workspace names, and
// which endpoints of a contract a compliance run may call on its own.
import { pathParams, sampleQuery, type CompiledContract, type Endpoint } from './contract'

/**
 * The project names a workspace can name: the workspace itself, and its last
 * path segment ("/home/ana/shop/" and "C:\\src\\shop" both name "shop").
 */
export function workspaceProjects(workspace: string): string[] {
  const ws = workspace.trim()
  if (!ws) return []
  const last = ws.replace(/[\\/]+$/, '').split(/[\\/]/).pop() ?? ''
  return [...new Set([ws, last].filter((p) => p !== ''))]
}

/** Compliance only calls safe methods: it must never create or delete anything on a live service. */
export const CALLED_METHODS = new Set(['GET', 'HEAD'])

/**
 * The calls a compliance run makes: GET and HEAD endpoints without path
 * placeholders whose required query parameters all have a sample value
 * (default, const, examples[0] or enum[0]) in the query schema.
 */
export function compliancePlan(compiled: CompiledContract): { endpoint: Endpoint; query: Record<string, unknown> }[] {
  const plan: { endpoint: Endpoint; query: Record<string, unknown> }[] = []
  for (const endpoint of compiled.contract.endpoints.values()) {
    if (!CALLED_METHODS.has(endpoint.method) || pathParams(endpoint.path).length) continue
    const query = sampleQuery(endpoint.schemas.query)
    if (query) plan.push({ endpoint, query })
  }
  return plan
}

// Compliance: each active instance whose workspace names a project is checked
// against each contract of that project (scheduled by jobs/compliance.ts, and on
// POST /api/compliance/run). One stored run per (instance, contract); a failing run
// commits with its compliance.violation event.
import type { Ctx } from './context'
import { compiledFromDoc, isContractDoc, decodeJson, type CompiledContract } from '../contracts/contract'
import { callEndpoint } from '../contracts/contract-call'
import { compliancePlan, workspaceProjects } from '../contracts/compliance'
import type { ComplianceRun, ComplianceViolation } from '../store/compliance'

/** Live calls in flight at once per contract: enough to be quick, few enough not to flood a service. */
const CALL_CONCURRENCY = 4

/** Violations of the live endpoints of a contract with a base_url ([] without one). */
async function liveViolations(compiled: CompiledContract, cancel?: AbortSignal): Promise<ComplianceViolation[]> {
  const baseUrl = compiled.contract.baseUrl
  if (!baseUrl) return []
  const plan = compliancePlan(compiled)
  const found: ComplianceViolation[][] = new Array(plan.length)
  let next = 0
  const worker = async () => {
    for (let i = next++; i < plan.length && !cancel?.aborted; i = next++) {
      const { endpoint, query } = plan[i]
      const result = await callEndpoint(compiled, endpoint, baseUrl, { params: {}, query }, undefined, cancel)
      found[i] = result.violations.map((v) => ({ endpoint: endpoint.key, ...v }))
    }
  }
  await Promise.all(Array.from({ length: Math.min(CALL_CONCURRENCY, plan.length) }, worker))
  return found.flat()
}

/** Each contract of a project with what is wrong with it: schema problems, else live violations. */
async function checkProject(ctx: Ctx, project: string, cancel?: AbortSignal): Promise<{ name: string; violations: ComplianceViolation[] }[]> {
  const out: { name: string; violations: ComplianceViolation[] }[] = []
  for (const { name } of await ctx.store.specs.list(project)) {
    const doc = await ctx.store.specs.get(project, name)
    if (!doc || !isContractDoc(decodeJson(doc.value))) continue
    const { compiled, problems } = compiledFromDoc(project, name, doc)
    out.push({ name, violations: compiled ? await liveViolations(compiled, cancel) : problems })
  }
  return out
}

/** Checks and records every (active instance, contract) pair; `cancel` (shutdown) stops it without recording half-checked runs. */
export async function runCompliance(ctx: Ctx, cancel?: AbortSignal): Promise<ComplianceRun[]> {
  // A project's contracts are checked once per run, however many instances work on it.
  const checked = new Map<string, Promise<{ name: string; violations: ComplianceViolation[] }[]>>()
  const runs: ComplianceRun[] = []
  for (const instance of await ctx.store.instances.list({ status: 'active' })) {
    for (const project of workspaceProjects(instance.workspace)) {
      if (!checked.has(project)) checked.set(project, checkProject(ctx, project, cancel))
      for (const { name, violations } of await checked.get(project)!) {
        if (cancel?.aborted) return runs
        const run = await ctx.store.write(async (tx) => {
          const run = await tx.compliance.record({ instance_id: instance.id, project, contract: name, violations })
          if (!run.pass) await tx.emit('compliance.violation', { run_id: run.id, instance_id: run.instance_id, project, contract: name, violations }, 'compliance')
          return run
        })
        runs.push(run)
      }
    }
  }
  return runs
}

/** Keeps the newest `keep` runs of each (instance, contract). */
export const pruneCompliance = (ctx: Ctx, keep: number) => ctx.store.write(async (tx) => await tx.compliance.prune(keep))

// What the API serves: every resource's routes, in mounting order, and the fast
// routes that answer the plain state reads and writes on Bun's own router. The
// machinery around them (admission, observation, errors, docs) is http/api.ts's.
import type { Ctx } from '../services/context'
import { createApi } from '../http/api'
import { healthRoutes, probeRoutes } from './health'
import { stateFastRoutes, stateRoutes } from './state'
import { specsRoutes } from './specs'
import { auditRoutes } from './audit'
import { metricsRoutes } from './metrics'
import { llmRoutes } from './llm'
import { otlpRoutes } from './otlp'
import { budgetsRoutes } from './budgets'
import { backupRoutes } from './backup'
import { contractsRoutes } from './contracts'
import { complianceRoutes } from './compliance'
import { eventsRoutes } from './events'
import { webhooksRoutes } from './webhooks'
import { instancesRoutes } from './instances'
import { livenessRoutes } from './liveness'
import { mcpRoutes } from './mcp'
import { validateRoutes } from './validate'
import { rulesRoutes } from './rules'
import { templatesRoutes } from './templates'
import { queueFastRoutes, queueRoutes } from './queue'
import { locksFastRoutes, locksRoutes } from './locks'
import { reservationsRoutes } from './reservations'
import { hooksFastRoutes, hooksRoutes } from './hooks'
import { messagesRoutes } from './messages'
import { prometheusRoutes } from './prometheus'
import { tokensRoutes } from './tokens'
import { projectsRoutes } from './projects'
import { approvalsRoutes } from './approvals'
export { createDashboard } from './dashboard'

/** The API app of a server. */
export function apiApp(ctx: Ctx) {
  const routes = [
    healthRoutes(ctx.startedAt),
    probeRoutes(ctx),
    stateRoutes(ctx),
    specsRoutes(ctx),
    auditRoutes(ctx),
    metricsRoutes(ctx),
    llmRoutes(ctx),
    otlpRoutes(ctx),
    budgetsRoutes(ctx),
    backupRoutes(ctx),
    contractsRoutes(ctx),
    complianceRoutes(ctx),
    eventsRoutes(ctx),
    webhooksRoutes(ctx),
    instancesRoutes(ctx),
    livenessRoutes(ctx),
    mcpRoutes(ctx),
    validateRoutes(ctx),
    rulesRoutes(ctx),
    templatesRoutes(ctx),
    queueRoutes(ctx),
    locksRoutes(ctx),
    reservationsRoutes(ctx),
    hooksRoutes(ctx),
    messagesRoutes(ctx),
    prometheusRoutes(ctx),
    tokensRoutes(ctx),
    projectsRoutes(ctx),
    approvalsRoutes(ctx),
  ]
  return createApi(ctx, routes, [...stateFastRoutes(ctx), ...locksFastRoutes(ctx), ...queueFastRoutes(ctx), ...hooksFastRoutes(ctx)])
}

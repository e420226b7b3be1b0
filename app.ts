// Composition root: config → store → bus → jobs → the API and dashboard apps.
import { Bus } from './services/bus'
import { createApi } from './http/api'
import { createDashboard } from './http/dashboard'
import { ConfigError, USAGE, formatHostPort, loadConfig, type Config } from './lib/config'
import type { Ctx } from './services/context'
import { AgentMetrics, METRICS_FLUSH_MS } from './lib/metrics'
import { every } from './jobs/timer'
import { openStore } from './store'
import { settleBackground } from './lib/background'
import { startComplianceJob } from './jobs/compliance'
import { startPruneJob } from './jobs/prune'
import { startWebhookDispatcher } from './jobs/webhooks'
import { startLivenessJob } from './jobs/liveness'
import { startExpiryJob } from './jobs/expiry'
import { VERSION } from './lib/version'
import { configureLog, flushLog, log } from './lib/log'

export interface Server {
  ctx: Ctx
  apiUrl: string
  dashboardUrl: string | null
  stop(): Promise<void>
}

const reachable = (host: string) => (host === '0.0.0.0' || host === '::' ? '127.0.0.1' : host)
const urlOf = (host: string, port: number) => `http://${formatHostPort({ host: reachable(host), port })}`

export async function startServer(config: Config): Promise<Server> {
  const store = openStore(config.dataDir)
  const stopping = new AbortController()
  const ctx: Ctx = {
    config,
    store,
    bus: undefined as unknown as Bus,
    metrics: new AgentMetrics((rows) => store.write(async (tx) => await tx.metrics.add(rows))),
    startedAt: Date.now(),
    shutdown: stopping.signal,
    apiUrl: '',
    apiBind: '',
    dashboardBind: '',
  }
  ctx.bus = new Bus(store)

  const stopJobs: (() => void | Promise<void>)[] = []
  stopJobs.push(every('metrics-flush', METRICS_FLUSH_MS, () => ctx.metrics.flush()))
  stopJobs.push(startPruneJob(ctx))
  stopJobs.push(startWebhookDispatcher(ctx))
  stopJobs.push(startLivenessJob(ctx))
  stopJobs.push(startExpiryJob(ctx))
  stopJobs.push(() => ctx.bus.closeSubscriptions())

  const api = createApi(ctx).listen({ hostname: config.bind.host, port: config.bind.port })
  ctx.apiBind = formatHostPort({ host: config.bind.host, port: api.server!.port! })
  ctx.apiUrl = urlOf(config.bind.host, api.server!.port!)

  let dashboardUrl: string | null = null
  let dashboard: ReturnType<typeof createDashboard> | null = null
  if (config.dashboardBind) {
    dashboard = createDashboard(ctx, (stop) => stopJobs.push(stop)).listen({ hostname: config.dashboardBind.host, port: config.dashboardBind.port })
    ctx.dashboardBind = formatHostPort({ host: config.dashboardBind.host, port: dashboard.server!.port! })
    dashboardUrl = urlOf(config.dashboardBind.host, dashboard.server!.port!)
  }

  stopJobs.push(startComplianceJob(ctx))

  return {
    ctx,
    apiUrl: ctx.apiUrl,
    dashboardUrl,
    async stop() {
      stopping.abort()
      for (const stop of stopJobs) await stop()
      await Promise.all([api.stop(), dashboard?.stop()])
      await settleBackground()
      await ctx.metrics.flush().catch((err) => log.error({ err }, 'metrics flush failed'))
      store.close()
    },
  }
}

async function main(argv: string[]): Promise<void> {
  if (argv.includes('--help') || argv.includes('-h')) {
    console.log(USAGE)
    return
  }
  if (argv.includes('--version') || argv.includes('-V')) {
    console.log(VERSION)
    return
  }
  let config: Config
  try {
    config = loadConfig(argv)
  } catch (err) {
    if (!(err instanceof ConfigError)) throw err
    console.error(`muster-server: ${err.message}`)
    process.exit(2)
  }
  configureLog(config.logFormat, config.logLevel)
  let server: Server
  try {
    server = await startServer(config)
  } catch (err) {
    log.error(`muster-server: cannot start: ${(err as Error).message}`)
    flushLog()
    process.exit(1)
  }
  // Tests and scripts wait for this line (in either log format), so it is printed whatever --log-level says.
  log.child({}, { level: 'info' }).info(`Muster API on ${server.apiUrl}, dashboard on ${server.dashboardUrl ?? '(disabled)'}, data in ${config.dataDir}`)
  let stopping = false
  const shutdown = async (signal: string) => {
    if (stopping) return
    stopping = true
    log.info(`${signal}: shutting down`)
    await server.stop()
    flushLog()
    process.exit(0)
  }
  process.on('SIGTERM', () => void shutdown('SIGTERM'))
  process.on('SIGINT', () => void shutdown('SIGINT'))
}

if (import.meta.main) await main(process.argv.slice(2))

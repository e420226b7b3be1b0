// Composition root: config → store → bus → what the server keeps in memory (lock lines,
// waiters, delivery log, releasers) → jobs → the API and dashboard apps.
import { Bus } from './services/bus'
import { coordination } from './services/coordination'
import { ImplicitHeartbeats } from './services/implicit-heartbeat'
import { apiApp, createDashboard } from './routes'
import { ConfigError, USAGE, formatHostPort, loadConfig, type Config } from './lib/config'
import type { Ctx } from './services/context'
import { METRICS_FLUSH_MS, agentMetrics } from './services/metrics'
import { USE_FLUSH_MS } from './services/credentials'
import { every } from './jobs/timer'
import { openConfiguredStore } from './store'
import { cacheShares } from './lib/lru'
import { Background } from './lib/background'
import { startComplianceJob } from './jobs/compliance'
import { startPruneJob } from './jobs/prune'
import { startWebhookDispatcher } from './jobs/webhooks'
import { startLivenessJob } from './jobs/liveness'
import { startExpiryJob } from './jobs/expiry'
import { startOverdueJob } from './jobs/overdue'
import { startWordIndexJob } from './jobs/word-index'
import { startApprovalsJob } from './jobs/approvals'
import { startSessionHoldsJob } from './jobs/session-holds'
import { startLoopLagProbe } from './jobs/loop-lag'
import { VERSION } from './lib/version'
import { configureLog, log } from './obs/log'

/** How long requests in flight may take to finish after SIGTERM; then their connections are closed. */
export const SHUTDOWN_GRACE_MS = 3000

export interface Server {
  ctx: Ctx
  apiUrl: string
  dashboardUrl: string | null
  /** Answers a request in-process, exactly as the API port would (tests use it where no process boundary matters). */
  handle(request: Request): Promise<Response>
  stop(): Promise<void>
}

const reachable = (host: string) => (host === '0.0.0.0' || host === '::' ? '127.0.0.1' : host)
const urlOf = (host: string, port: number) => `http://${formatHostPort({ host: reachable(host), port })}`

/**
 * Listens without SO_REUSEPORT (Elysia's default), so a second server on a port in
 * use fails instead of sharing it with the first: two databases behind one port.
 * Never in Bun's development mode, which Elysia turns on unless NODE_ENV=production:
 * its error pages are not ours to show, and it slows every request.
 */
function listenOn<A extends { listen(o: object): A }>(app: A, what: string, bind: { host: string; port: number }): A {
  try {
    return app.listen({ hostname: bind.host, port: bind.port, reusePort: false, development: false })
  } catch (err) {
    const code = (err as { code?: string }).code
    if (code === 'EADDRINUSE' || /in use/i.test((err as Error).message)) throw new Error(`${what} address ${formatHostPort(bind)} is in use`)
    throw err
  }
}

export async function startServer(config: Config): Promise<Server> {
  const store = await openConfiguredStore(config.database, config.dataDir, cacheShares(config.cacheBytes).documents)
  const stopping = new AbortController()
  const bus = new Bus(store)
  const ctx: Ctx = {
    config,
    store,
    bus,
    metrics: agentMetrics(store),
    startedAt: Date.now(),
    shutdown: stopping.signal,
    ...coordination(bus, stopping.signal),
    heartbeats: new ImplicitHeartbeats(config.staleTimeoutMs, bus),
    background: new Background(),
    apiUrl: '',
    apiBind: '',
    dashboardBind: '',
  }

  const stopJobs: (() => void | Promise<void>)[] = []
  stopJobs.push(startLoopLagProbe())
  stopJobs.push(every('metrics-flush', METRICS_FLUSH_MS, () => ctx.metrics.flush()))
  stopJobs.push(every('token-uses', USE_FLUSH_MS, () => ctx.credentials.flush(ctx)))
  // Jobs below run on the leader only (on SQLite, this process; on PostgreSQL, one replica at a time).
  stopJobs.push(startPruneJob(ctx))
  stopJobs.push(startWebhookDispatcher(ctx))
  stopJobs.push(startLivenessJob(ctx))
  stopJobs.push(startExpiryJob(ctx))
  stopJobs.push(startOverdueJob(ctx))
  stopJobs.push(startWordIndexJob(ctx))
  stopJobs.push(startApprovalsJob(ctx))
  stopJobs.push(startSessionHoldsJob(ctx))
  stopJobs.push(() => ctx.bus.closeSubscriptions())

  const api = listenOn(apiApp(ctx), 'API', config.bind)
  ctx.apiBind = formatHostPort({ host: config.bind.host, port: api.server!.port! })
  ctx.apiUrl = urlOf(config.bind.host, api.server!.port!)
  bus.serve('api', api.server!)

  let dashboardUrl: string | null = null
  let dashboard: ReturnType<typeof createDashboard> | null = null
  if (config.dashboardBind) {
    dashboard = listenOn(createDashboard(ctx), 'dashboard', config.dashboardBind)
    ctx.dashboardBind = formatHostPort({ host: config.dashboardBind.host, port: dashboard.server!.port! })
    dashboardUrl = urlOf(config.dashboardBind.host, dashboard.server!.port!)
    bus.serve('dashboard', dashboard.server!)
  }

  stopJobs.push(startComplianceJob(ctx))

  return {
    ctx,
    apiUrl: ctx.apiUrl,
    dashboardUrl,
    handle: (request) => api.handle(request),
    async stop() {
      stopping.abort()
      // Stop accepting at once; requests in flight get SHUTDOWN_GRACE_MS to finish, then
      // their connections are cut (a slow upload, half-sent headers), so exit never waits on a client.
      const listeners = [api, dashboard].filter((a) => a !== null)
      const drained = Promise.all(listeners.map((a) => a.server?.stop(false)))
      for (const stop of stopJobs) await stop()
      const grace = new Promise<void>((resolve) => setTimeout(resolve, SHUTDOWN_GRACE_MS).unref())
      await Promise.race([drained, grace])
      await Promise.all(listeners.map((a) => a.server?.stop(true)))
      await ctx.background.settle()
      await ctx.metrics.flush().catch((err) => log.error({ err }, 'metrics flush failed'))
      await ctx.credentials.flush(ctx)
      await store.close()
    },
  }
}

/** The database URL as logs show it: without its password. */
function redactUrl(url: string): string {
  try {
    const u = new URL(url)
    if (u.password) u.password = '***'
    return u.toString()
  } catch {
    return 'postgres://…'
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
    process.exit(1)
  }
  // Tests and scripts wait for this line (in either log format), so it is printed whatever --log-level says.
  log.child({}, { level: 'info' }).info(`Muster API on ${server.apiUrl}, dashboard on ${server.dashboardUrl ?? '(disabled)'}, data in ${config.database ? redactUrl(config.database) : config.dataDir}`)
  // The compiled server starts with the JIT held back (build.ts: --compile-jit-policy), so
  // run-once startup code is not compiled; from here on, requests get the normal policy.
  Bun.unsafe.setJITPolicy(1)
  let stopping = false
  const shutdown = async (signal: string) => {
    if (stopping) return
    stopping = true
    log.info(`${signal}: shutting down`)
    await server.stop()
    log.info('stopped')
    process.exit(0)
  }
  process.on('SIGTERM', () => void shutdown('SIGTERM'))
  process.on('SIGINT', () => void shutdown('SIGINT'))
}

if (import.meta.main) await main(process.argv.slice(2))

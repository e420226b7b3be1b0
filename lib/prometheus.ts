// Prometheus metrics (GET /metrics, README "Observability"): one registry per
// process. Counters and histograms here are fed where things happen (the HTTP
// layer, webhook deliveries, the group commit); gauges are read at scrape time
// from functions that modules register with `gaugeOf`, so a new resource (locks,
// reservations) adds its gauge without touching this file or the route.
import { Counter, Gauge, Histogram, Registry } from 'prom-client'

export const registry = new Registry()

export const httpRequests = new Counter({
  name: 'muster_http_requests_total',
  help: 'API requests by method, route pattern and status',
  labelNames: ['method', 'route', 'status'] as const,
  registers: [registry],
})

export const httpDuration = new Histogram({
  name: 'muster_http_request_duration_seconds',
  help: 'API request latency (until the response is handed to the server) by method, route pattern and status',
  labelNames: ['method', 'route', 'status'] as const,
  buckets: [0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10],
  registers: [registry],
})

export const webhookDeliveries = new Counter({
  name: 'muster_webhook_deliveries_total',
  help: 'Webhook delivery attempts (tests included) by outcome: success or failure',
  labelNames: ['outcome'] as const,
  registers: [registry],
})

export const eventsPublished = new Counter({
  name: 'muster_events_published_total',
  help: 'Events committed since the server started',
  registers: [registry],
})

export const writeBatchSize = new Histogram({
  name: 'muster_sqlite_write_batch_size',
  help: 'Writes committed together by one SQLite transaction (group commit)',
  buckets: [1, 2, 4, 8, 16, 32, 64, 128, 256, 512],
  registers: [registry],
})

type Sample = { labels?: Record<string, string>; value: number }

/**
 * A gauge whose samples `read` returns at scrape time: a number, or one sample per
 * label set (e.g. instances by status). Registering a name twice replaces the reader.
 */
export function gaugeOf(name: string, help: string, read: () => Promise<number | Sample[]> | number | Sample[], labelNames: string[] = []): void {
  registry.removeSingleMetric(name)
  new Gauge({
    name,
    help,
    labelNames,
    registers: [registry],
    async collect() {
      const value = await read()
      this.reset()
      if (typeof value === 'number') this.set(value)
      else for (const s of value) this.set(s.labels ?? {}, s.value)
    },
  })
}

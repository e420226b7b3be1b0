// Prometheus metrics (GET /metrics, docs/operations.md "Metrics"): one registry per
// process. Counters and histograms here are fed where things happen (the HTTP
// layer, webhook deliveries, the group commit); gauges are read at scrape time
// from functions that modules register with `gaugeOf`, so a new resource (locks,
// reservations) adds its gauge without touching this file or the route.
//
// The text format (0.0.4) is written here rather than by prom-client: prom-client
// loaded node:http, https, zlib and cluster at startup (for its push gateway) and
// hashed a label object on every observation, the one cost every request pays.
// Here a series is found once by its label values and then only counted.

import { readdirSync, readFileSync } from 'node:fs'
import { VERSION } from '../lib/version'

type Labels = Record<string, string>
type Sample = { labels?: Labels; value: number }

const escapeHelp = (text: string) => text.replace(/\\/g, '\\\\').replace(/\n/g, '\\n')
const escapeLabel = (value: string) => escapeHelp(value).replace(/"/g, '\\"')
const number = (v: number) => (Number.isNaN(v) ? 'Nan' : v === Infinity ? '+Inf' : v === -Infinity ? '-Inf' : String(v))

/** `{a="x",b="y"}` for these names and values (empty when there are none). */
function labelText(names: readonly string[], values: readonly string[]): string {
  return names.length ? `{${names.map((n, i) => `${n}="${escapeLabel(values[i])}"`).join(',')}}` : ''
}

interface Family {
  readonly name: string
  /** The family's exposition: HELP, TYPE and its samples, no trailing newline. */
  text(): string | Promise<string>
}

class Registry {
  readonly contentType = 'text/plain; version=0.0.4; charset=utf-8'
  private families = new Map<string, Family>()

  register(family: Family): void {
    if (this.families.has(family.name)) throw new Error(`A metric with the name ${family.name} has already been registered.`)
    this.families.set(family.name, family)
  }

  removeSingleMetric(name: string): void {
    this.families.delete(name)
  }

  async metrics(): Promise<string> {
    const texts = await Promise.all([...this.families.values()].map((f) => f.text()))
    return `${texts.join('\n\n')}\n`
  }
}

export const registry = new Registry()

/** One family's series, each found by its label values (in `labelNames` order) and kept in first-use order. */
abstract class Labelled<S> implements Family {
  private series = new Map<string, { values: string[]; data: S }>()

  constructor(
    readonly name: string,
    private help: string,
    private type: string,
    protected labelNames: readonly string[],
    private fresh: () => S,
  ) {
    registry.register(this)
    // A family without labels has its one series from the start (exposed as 0).
    if (!labelNames.length) this.labels()
  }

  protected abstract samples(labels: string, values: string[], data: S): string[]

  /** The series with these label values, created on first use; keep it to count without a lookup. */
  labels(...values: string[]): S {
    const key = values.join('\u0000')
    let entry = this.series.get(key)
    if (!entry) this.series.set(key, (entry = { values, data: this.fresh() }))
    return entry.data
  }

  protected of(labels: Labels | undefined): S {
    return this.labels(...this.labelNames.map((n) => labels?.[n] ?? ''))
  }

  text(): string {
    const lines = [`# HELP ${this.name} ${escapeHelp(this.help)}`, `# TYPE ${this.name} ${this.type}`]
    for (const { values, data } of this.series.values()) lines.push(...this.samples(labelText(this.labelNames, values), values, data))
    return lines.join('\n')
  }
}

export interface CounterSeries {
  inc(n?: number): void
}

class CounterData implements CounterSeries {
  value = 0
  inc(n = 1): void {
    this.value += n
  }
}

export class Counter extends Labelled<CounterData> {
  constructor(o: { name: string; help: string; labelNames?: readonly string[] }) {
    super(o.name, o.help, 'counter', o.labelNames ?? [], () => new CounterData())
  }
  protected samples(labels: string, _values: string[], data: CounterData) {
    return [`${this.name}${labels} ${number(data.value)}`]
  }
  inc(labels?: Labels, n = 1): void {
    this.of(labels).inc(n)
  }
}

export interface HistogramSeries {
  observe(value: number): void
}

class HistogramData implements HistogramSeries {
  /** Observations per bucket (not cumulative: summed when exposed); the last slot is above every bound. */
  counts: number[]
  sum = 0
  count = 0
  constructor(private bounds: readonly number[]) {
    this.counts = new Array<number>(bounds.length + 1).fill(0)
  }
  observe(value: number): void {
    let i = 0
    while (i < this.bounds.length && value > this.bounds[i]) i++
    this.counts[i]++
    this.sum += value
    this.count++
  }
}

export class Histogram extends Labelled<HistogramData> {
  private bounds: readonly number[]
  constructor(o: { name: string; help: string; labelNames?: readonly string[]; buckets: readonly number[] }) {
    super(o.name, o.help, 'histogram', o.labelNames ?? [], () => new HistogramData(o.buckets))
    this.bounds = o.buckets
  }
  protected samples(labels: string, values: string[], data: HistogramData) {
    // `le` first among a bucket's labels, as prom-client wrote it.
    const bucket = (le: string) => `${this.name}_bucket${labelText(['le', ...this.labelNames], [le, ...values])}`
    const lines: string[] = []
    let cumulative = 0
    this.bounds.forEach((bound, i) => lines.push(`${bucket(number(bound))} ${(cumulative += data.counts[i])}`))
    lines.push(`${bucket('+Inf')} ${data.count}`, `${this.name}_sum${labels} ${number(data.sum)}`, `${this.name}_count${labels} ${data.count}`)
    return lines
  }
  /** `observe(labels, value)`, or `observe(value)` for a family without labels. */
  observe(labels: Labels | number, value?: number): void {
    if (typeof labels === 'number') this.of(undefined).observe(labels)
    else this.of(labels).observe(value!)
  }
}

/** A gauge (or a counter kept elsewhere, e.g. by the kernel) whose samples are read when scraped. */
class ReadGauge implements Family {
  constructor(
    readonly name: string,
    private help: string,
    private labelNames: readonly string[],
    private read: () => Promise<number | Sample[]> | number | Sample[],
    private type: 'gauge' | 'counter' = 'gauge',
  ) {}

  async text(): Promise<string> {
    const value = await this.read()
    const samples = typeof value === 'number' ? [{ labels: {}, value }] : value
    const lines = [`# HELP ${this.name} ${escapeHelp(this.help)}`, `# TYPE ${this.name} ${this.type}`]
    for (const s of samples) {
      const names = this.labelNames.filter((n) => s.labels?.[n] !== undefined)
      lines.push(`${this.name}${labelText(names, names.map((n) => s.labels![n]))} ${number(s.value)}`)
    }
    return lines.join('\n')
  }
}

export const httpRequests = new Counter({
  name: 'muster_http_requests_total',
  help: 'API requests by method, route pattern and status',
  labelNames: ['method', 'route', 'status'],
})

export const httpDuration = new Histogram({
  name: 'muster_http_request_duration_seconds',
  help: 'API request latency (until the response is handed to the server) by method, route pattern and status',
  labelNames: ['method', 'route', 'status'],
  buckets: [0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10],
})

export const webhookDeliveries = new Counter({
  name: 'muster_webhook_deliveries_total',
  help: 'Webhook delivery attempts (tests included) by outcome: success or failure',
  labelNames: ['outcome'],
})

export const eventsPublished = new Counter({
  name: 'muster_events_published_total',
  help: 'Events committed since the server started',
})

export const loopLag = new Histogram({
  name: 'muster_event_loop_lag_seconds',
  help: 'How late a timer due every 20 ms fires: how long the JavaScript thread that answers every request was busy with something else',
  buckets: [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5],
})

export const writeBatchSize = new Histogram({
  name: 'muster_sqlite_write_batch_size',
  help: 'Writes committed together by one SQLite transaction (group commit)',
  buckets: [1, 2, 4, 8, 16, 32, 64, 128, 256, 512],
})

/**
 * A gauge whose samples `read` returns at scrape time: a number, or one sample per
 * label set (e.g. instances by status). Registering a name twice replaces the reader.
 */
export function gaugeOf(name: string, help: string, read: () => Promise<number | Sample[]> | number | Sample[], labelNames: string[] = []): void {
  registry.removeSingleMetric(name)
  registry.register(new ReadGauge(name, help, labelNames, read))
}

// ---- the process: what prom-client's default metrics gave, under the same names ----

/** `read`, or null where it does not work (no /proc off Linux): the family is then left out. */
function tried(read: () => number): number | null {
  try {
    return read()
  } catch {
    return null
  }
}

const openFds = () => readdirSync('/proc/self/fd').length
/** The soft limit on open files (`Max open files  <soft>  <hard>  files` in /proc/self/limits). */
const maxFds = () => Number(/^Max open files\s+(\d+)/m.exec(readFileSync('/proc/self/limits', 'utf8'))![1])

registry.register(new ReadGauge('muster_build_info', 'Always 1; the version of this build as a label', ['version'], () => [{ labels: { version: VERSION }, value: 1 }]))
registry.register(new ReadGauge('process_resident_memory_bytes', 'Resident memory size in bytes', [], () => process.memoryUsage.rss()))
registry.register(new ReadGauge('process_cpu_seconds_total', 'Total user and system CPU time spent in seconds', [], () => {
  const { user, system } = process.cpuUsage()
  return (user + system) / 1e6
}, 'counter'))
registry.register(new ReadGauge('process_start_time_seconds', 'Start time of the process since unix epoch in seconds', [], () => Math.round(performance.timeOrigin) / 1000))
if (tried(openFds) !== null) registry.register(new ReadGauge('process_open_fds', 'Number of open file descriptors', [], openFds))
if (tried(maxFds) !== null) registry.register(new ReadGauge('process_max_fds', 'Maximum number of open file descriptors', [], maxFds))

// Shared benchmark plumbing: start the real server or a bare Bun.serve baseline
// as subprocesses, and drive load with wrk (Debian package) from a third process.
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'

const ROOT = join(import.meta.dir, '..')

export interface Proc {
  url: string
  pid: number
  stop(): Promise<void>
}

/** Resident memory of a process in MB (Linux /proc). */
export function rssMb(pid: number): number {
  const kb = /VmRSS:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))?.[1]
  return Number(kb) / 1024
}

async function waitFor(proc: ReturnType<typeof Bun.spawn>, re: RegExp): Promise<RegExpExecArray> {
  let out = ''
  const reader = (proc.stdout as ReadableStream<Uint8Array>).getReader()
  const decoder = new TextDecoder()
  for (;;) {
    const { value, done } = await reader.read()
    if (done) throw new Error(`process exited before it was ready:\n${out}`)
    out += decoder.decode(value)
    const m = re.exec(out)
    if (m) {
      void (async () => {
        while (!(await reader.read()).done);
      })()
      return m
    }
  }
}

/** Runs `cmd` until it prints `ready` (the URL in group 1); stop() ends it and removes `dir`. */
async function started(cmd: string[], dir: string, ready: RegExp): Promise<Proc> {
  const proc = Bun.spawn(cmd, { stdout: 'pipe', stderr: 'inherit' })
  const m = await waitFor(proc, ready)
  return {
    url: m[1],
    pid: proc.pid,
    async stop() {
      proc.kill('SIGTERM')
      await proc.exited
      rmSync(dir, { recursive: true, force: true })
    },
  }
}

export async function startMuster(args: string[] = []): Promise<Proc> {
  const dir = mkdtempSync(join(tmpdir(), 'muster-bench-'))
  const cmd = [process.execPath, join(ROOT, 'app.ts'), '--bind', '127.0.0.1:0', '--dashboard-bind', '', '--data-dir', dir, ...args]
  return started(cmd, dir, /Muster API on (\S+),/)
}

/** A free TCP port on 127.0.0.1 (for servers that cannot take port 0 and report it). */
export function freePort(): number {
  const s = Bun.listen({ hostname: '127.0.0.1', port: 0, socket: { data() {} } })
  const port = s.port
  s.stop(true)
  return port
}

/** etcd (Debian package etcd-server) on free ports, for its v3 JSON gateway; null when not installed. */
export async function startEtcd(): Promise<Proc | null> {
  if (!Bun.which('etcd')) return null
  const dir = mkdtempSync(join(tmpdir(), 'muster-etcd-'))
  const [client, peer] = [freePort(), freePort()]
  const url = `http://127.0.0.1:${client}`
  const proc = Bun.spawn(
    ['etcd', '--data-dir', dir, '--listen-client-urls', url, '--advertise-client-urls', url,
      '--listen-peer-urls', `http://127.0.0.1:${peer}`, '--initial-advertise-peer-urls', `http://127.0.0.1:${peer}`,
      '--initial-cluster', `default=http://127.0.0.1:${peer}`],
    { stdout: 'ignore', stderr: 'ignore' },
  )
  for (let i = 0; i < 200; i++) {
    if (await fetch(`${url}/health`).then((r) => r.ok, () => false)) break
    await Bun.sleep(50)
  }
  return {
    url,
    pid: proc.pid,
    async stop() {
      proc.kill('SIGTERM')
      await proc.exited
      rmSync(dir, { recursive: true, force: true })
    },
  }
}

/** A bare Bun.serve hello-world: the ceiling every figure is compared with. */
export async function startBaseline(): Promise<Proc> {
  const dir = mkdtempSync(join(tmpdir(), 'muster-base-'))
  const script = join(dir, 'baseline.ts')
  writeFileSync(
    script,
    `const s = Bun.serve({ hostname: '127.0.0.1', port: 0, fetch: () => new Response('hello world') }); console.log('baseline on http://127.0.0.1:' + s.port + ',')`,
  )
  return started([process.execPath, script], dir, /baseline on (\S+),/)
}

export interface LoadResult {
  rps: number
  p50ms: number
  p99ms: number
  errors: number
}

const toMs = (v: string, unit: string) => Number(v) * ({ us: 0.001, ms: 1, s: 1000, m: 60000 } as Record<string, number>)[unit]

/** Runs wrk with a Lua script (2 threads unless told); returns requests/s and latency percentiles. */
export async function wrk(url: string, lua: string, opts: { seconds?: number; connections?: number; threads?: number } = {}): Promise<LoadResult> {
  const dir = mkdtempSync(join(tmpdir(), 'muster-wrk-'))
  const script = join(dir, 'load.lua')
  writeFileSync(script, lua)
  const p = Bun.spawn(
    ['wrk', `-t${opts.threads ?? 2}`, `-c${opts.connections ?? 32}`, `-d${opts.seconds ?? 5}s`, '--latency', '-s', script, url],
    { stdout: 'pipe', stderr: 'pipe' },
  )
  const out = await new Response(p.stdout).text()
  rmSync(dir, { recursive: true, force: true })
  if ((await p.exited) !== 0) throw new Error(`wrk failed: ${await new Response(p.stderr).text()}`)
  const pct = (label: string) => {
    const m = new RegExp(`^\\s*${label}%\\s+([\\d.]+)(us|ms|s|m)`, 'm').exec(out)
    return m ? toMs(m[1], m[2]) : NaN
  }
  const non2xx = /Non-2xx or 3xx responses: (\d+)/.exec(out)
  const sockErr = /Socket errors: connect (\d+), read (\d+), write (\d+), timeout (\d+)/.exec(out)
  return {
    rps: Number(/Requests\/sec:\s+([\d.]+)/.exec(out)?.[1] ?? NaN),
    p50ms: pct('50'),
    p99ms: pct('99'),
    errors: Number(non2xx?.[1] ?? 0) + (sockErr ? sockErr.slice(1).reduce((a, b) => a + Number(b), 0) : 0),
  }
}

export function hasWrk(): boolean {
  return Bun.which('wrk') !== null
}

export const fmt = (r: LoadResult) =>
  `${r.rps.toFixed(0).padStart(8)} req/s   p50 ${r.p50ms.toFixed(2)} ms   p99 ${r.p99ms.toFixed(2)} ms   errors ${r.errors}`

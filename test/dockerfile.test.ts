// The Dockerfile, read rather than built (these machines cannot run `docker build`):
// a build stage runs `npm run build`, and the image copies the very binary that
// build writes (build.ts), runs it as a non-root user with its data in a volume,
// listens where it EXPOSEs, and has a HEALTHCHECK that asks a probe with a program
// the image has. Runs once (opens no store).
import { describe, expect, test } from 'bun:test'
import { readFileSync } from 'node:fs'
import { join } from 'node:path'
import pkg from '../package.json' with { type: 'json' }

const ROOT = join(import.meta.dir, '..')
const read = (file: string) => readFileSync(join(ROOT, file), 'utf8')

type Instruction = { op: string; args: string }
type Stage = { from: string; name: string | null; instructions: Instruction[] }

/** The stages of a Dockerfile: comments dropped, `\` continuations joined, one instruction per entry. */
function parseDockerfile(text: string): Stage[] {
  const lines = text.split('\n').filter((l) => !/^\s*#/.test(l))
  const joined = lines.join('\n').replace(/\\\n/g, ' ')
  const stages: Stage[] = []
  for (const line of joined.split('\n')) {
    const m = /^\s*([A-Za-z]+)\s+(.*?)\s*$/.exec(line)
    if (!m) continue
    const op = m[1].toUpperCase()
    if (op === 'FROM') {
      const [, from, name] = /^(\S+)(?:\s+AS\s+(\S+))?$/i.exec(m[2])!
      stages.push({ from, name: name ?? null, instructions: [] })
    } else stages.at(-1)!.instructions.push({ op, args: m[2] })
  }
  return stages
}

/** An instruction's arguments: the exec (JSON) form, or the words of the shell form. */
const argv = (args: string): string[] => (args.startsWith('[') ? JSON.parse(args) : args.split(/\s+/))
const all = (stage: Stage, op: string) => stage.instructions.filter((i) => i.op === op)
const one = (stage: Stage, op: string) => {
  const found = all(stage, op)
  expect({ op, count: found.length }).toEqual({ op, count: 1 })
  return found[0]
}
/** ENV of a stage, both forms (`ENV A=1 B=2` and `ENV A 1`). */
function envOf(stage: Stage): Record<string, string> {
  const env: Record<string, string> = {}
  for (const { args } of all(stage, 'ENV')) {
    if (!args.includes('=')) {
      const [k, ...v] = args.split(/\s+/)
      env[k] = v.join(' ')
    } else for (const [, k, v] of args.matchAll(/(\w+)=("[^"]*"|\S*)/g)) env[k] = v.replace(/^"|"$/g, '')
  }
  return env
}

const stages = parseDockerfile(read('Dockerfile'))
const final = stages.at(-1)!
const build = stages.find((s) => all(s, 'RUN').some((r) => /\bnpm run build\b/.test(r.args)))

/** Where `npm run build` writes the server: package.json's build script runs build.ts, whose main writes dist/<name>. */
function builtServer(): string {
  expect(pkg.scripts.build).toBe('bun build.ts')
  const source = read('build.ts')
  expect(source).toMatch(/const out = join\(ROOT, 'dist'\)/)
  return `dist/${/await buildServer\(join\(out, '([^']+)'\)\)/.exec(source)![1]}`
}

describe('Dockerfile', () => {
  test('multi-stage: a build stage runs npm install and npm run build, the image is a slim Debian', () => {
    expect(stages.length).toBeGreaterThanOrEqual(2)
    expect(build).toBeDefined()
    expect(build).not.toBe(final)
    expect(all(build!, 'RUN').some((r) => /\bnpm (ci|install)\b/.test(r.args))).toBe(true)
    expect(final.from).toMatch(/^debian:[\w.-]*slim$/)
  })

  test('the image copies the server binary npm run build makes, and runs it', () => {
    const workdir = all(build!, 'WORKDIR').at(-1)!.args
    const copy = all(final, 'COPY').find((c) => c.args.startsWith('--from='))!
    const [from, source, target] = copy.args.split(/\s+/)
    expect(from).toBe(`--from=${build!.name}`)
    expect(source).toBe(join(workdir, builtServer()))
    expect(argv(one(final, 'ENTRYPOINT').args)[0]).toBe(target)
  })

  test('runs as a non-root user, with its data dir in a VOLUME', () => {
    const user = one(final, 'USER').args
    expect(user).not.toMatch(/^(root|0)(:|$)/)
    expect(final.instructions.findIndex((i) => i.op === 'USER')).toBeGreaterThan(final.instructions.findIndex((i) => i.op === 'COPY'))
    const env = envOf(final)
    expect(argv(one(final, 'VOLUME').args)).toEqual([env.SERVICE_DATA_DIR])
    // The user must own the volume's directory: it is created and chowned before USER.
    expect(all(final, 'RUN').some((r) => r.args.includes(`chown ${user}`) && r.args.includes(env.SERVICE_DATA_DIR))).toBe(true)
  })

  test('listens on every interface at the ports it EXPOSEs', () => {
    const env = envOf(final)
    const ports = argv(one(final, 'EXPOSE').args)
    for (const key of ['SERVICE_BIND', 'SERVICE_DASHBOARD_BIND']) {
      const [, host, port] = /^(.*):(\d+)$/.exec(env[key])!
      expect([key, host, ports.includes(port)]).toEqual([key, '0.0.0.0', true])
    }
  })

  test('HEALTHCHECK asks /readyz or /livez on the API port with a program the image has', () => {
    const [, options, command] = /^(.*?)\s*CMD\s+(.*)$/.exec(one(final, 'HEALTHCHECK').args)!
    expect(options).toMatch(/--interval=\d+s/)
    const cmd = argv(command)
    // No curl or wget in debian slim: the server binary itself, run as plain Bun.
    const target = argv(one(final, 'ENTRYPOINT').args)[0]
    expect(cmd.slice(0, 4)).toEqual(['/usr/bin/env', 'BUN_BE_BUN=1', target, '-e'])
    expect(cmd[4]).toMatch(/\/(readyz|livez)\b/)
    expect(cmd[4]).toContain('process.env.SERVICE_BIND')
  })

  test('the HEALTHCHECK script runs: exit 0 on 200, 1 when nothing answers', async () => {
    const script = argv(/CMD\s+(.*)$/.exec(one(final, 'HEALTHCHECK').args)![1])[4]
    const ready = Bun.serve({ hostname: '127.0.0.1', port: 0, fetch: (r) => new Response('{}', { status: new URL(r.url).pathname === '/readyz' ? 200 : 404 }) })
    const run = async (bind: string) => {
      const proc = Bun.spawn([process.execPath, '-e', script], { env: { ...process.env, SERVICE_BIND: bind }, stdout: 'ignore', stderr: 'ignore' })
      return await proc.exited
    }
    try {
      expect(await run(`0.0.0.0:${ready.port}`)).toBe(0)
    } finally {
      ready.stop(true)
    }
    expect(await run(`0.0.0.0:${ready.port}`)).toBe(1)
  })

  test('.dockerignore keeps out node_modules, dist, data and .git, and nothing the build reads', () => {
    const ignored = read('.dockerignore').split('\n').map((l) => l.trim()).filter((l) => l && !l.startsWith('#'))
    for (const path of ['node_modules', 'dist', 'muster-data', '.git']) expect(ignored).toContain(path)
    for (const path of ['package.json', 'package-lock.json', 'build.ts', 'app.ts', 'cli.ts', 'public', 'store', 'routes'])
      expect(ignored.filter((p) => p === path || path.startsWith(`${p}/`))).toEqual([])
  })
})
